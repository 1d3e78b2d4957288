// `npm run bench -- visitors`: what a limit per visitor and a token cost per request (docs/guides/browser.md).
// In each mode (embedded; Redis + Postgres), in alternating rounds: a key of one huge hourly limit, a key
// whose plan adds a huge limit per client address, loaded from 50 addresses, and a token of the first key
// instead of its secret; Redis round trips per request in Redis mode (the decision calls the process
// itself counts, tollgate_redis_command_duration_seconds_count{operation="consume"}: INFO commandstats
// would count every other user of the shared server). Then, embedded, the
// memory of 150,000 distinct visitors within one minute: the process's peak RSS and heap growth.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mintToken } from '../../packages/client/src/generated/mint-token.ts';
import { CONNECTIONS, DURATION, PORT, ROOT, ROUNDS, THREADS, WARMUP, log } from '../lib/config.ts';
import { metricValue } from '../lib/metrics.ts';
import { fmt, machine, median, ratio } from '../lib/report.ts';
import {
  buildTollgate,
  ensureTools,
  freshDatabase,
  management,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { stopProc } from '../lib/processes.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

const VISITORS_SCRIPT = path.join(ROOT, 'bench/visitors.lua');
const HUGE = 1_000_000_000_000;
const DISTINCT_VISITORS = 150_000;

async function keyOf(
  port: number,
  rateLimitId: string,
  limits: unknown[],
): Promise<{ id: string; secret: string }> {
  await management(port, '/rate-limit/create', { rateLimitId, limits }, [201, 409]);
  const key = await management(port, '/consumer-api-key/create', { name: rateLimitId, rateLimitId });
  return { id: String(key.id), secret: String(key.secret) };
}

/** Reads one sample of the process's ops metrics (`name` with its labels, as written). */
const CONSUME_CALLS = 'tollgate_redis_command_duration_seconds_count{operation="consume"}';

interface ModeFigures {
  readonly rows: string[];
}

async function throughput(mode: 'embedded' | 'redis'): Promise<ModeFigures> {
  const port = mode === 'embedded' ? PORT.tollgateEmbedded : PORT.tollgateRedis;
  const opsPort = port + PORT.opsOffset;
  const tg = await startTollgate({
    name: `visitors-${mode}`,
    port,
    mode,
    ...(mode === 'redis' && { databaseUrl: await freshDatabase() }),
    // Names of its own in the shared Redis: nothing of another run is counted or flushed.
    extraEnv: { TRUST_PROXY: '1', REDIS_KEY_PREFIX: `bench-visitors-${process.pid}:` },
  });
  const plain = await keyOf(port, 'one-limit', [{ limit: HUGE, period: 'hour' }]);
  const perVisitor = await keyOf(port, 'per-visitor', [
    { name: 'each', limit: HUGE, period: 'hour', per: 'clientAddress' },
    { name: 'all', limit: HUGE, period: 'hour' },
  ]);
  const token = mintToken(plain.secret, { consumerApiKeyId: plain.id, expiresInSeconds: 86_400 });
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  const loads = {
    key: (s: number) =>
      wrk({ url, seconds: s, headers: { 'x-api-key': plain.secret }, script: VISITORS_SCRIPT }),
    perVisitor: (s: number) =>
      wrk({ url, seconds: s, headers: { 'x-api-key': perVisitor.secret }, script: VISITORS_SCRIPT }),
    token: (s: number) => wrk({ url, seconds: s, headers: { 'x-api-key': token }, script: VISITORS_SCRIPT }),
  };
  const ids = Object.keys(loads) as (keyof typeof loads)[];
  const rounds = new Map<string, WrkResult[]>(ids.map((id) => [id, []]));
  const calls = new Map<string, number[]>(ids.map((id) => [id, []]));
  for (const id of ids) await loads[id](WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    for (const id of round % 2 === 0 ? ids : [...ids].reverse()) {
      const before = mode === 'redis' ? await metricValue(opsPort, CONSUME_CALLS) : undefined;
      const r = await loads[id](DURATION);
      // Every request must be admitted: refusals would measure something else. (The backend closing a
      // kept-alive connection now and then makes a rare 502.)
      if (r.non2xx > r.requests / 1_000) throw new Error(`${mode} ${id}: ${r.non2xx} answers were not 2xx`);
      const after = mode === 'redis' ? await metricValue(opsPort, CONSUME_CALLS) : undefined;
      rounds.get(id)!.push(r);
      if (before !== undefined || after !== undefined)
        calls.get(id)!.push(((after ?? 0) - (before ?? 0)) / r.requests);
      log(`${mode} round ${round + 1}/${ROUNDS} ${id}: ${fmt(r.rps)} req/s`);
    }
  }
  await stopProc(tg);
  const base = median(rounds.get('key')!.map((r) => r.rps));
  const label = {
    key: 'key, one limit',
    perVisitor: 'key + a limit per client address, 50 addresses',
    token: 'token of the one-limit key',
  };
  return {
    rows: ids.map((id) => {
      const rs = rounds.get(id)!;
      const rps = median(rs.map((r) => r.rps));
      const trips = calls.get(id)!;
      return `| ${mode} | ${label[id]} | ${fmt(rps)} | ${ratio(rps, base)} | ${fmt(median(rs.map((r) => r.p99)), 2)} | ${trips.length ? fmt(median(trips), 3) : '—'} | ${rs.map((r) => fmt(r.rps)).join(' / ')} |`;
    }),
  };
}

/** Embedded: 150,000 distinct client addresses within one minute on a key with a per-minute limit per address. */
async function memory(): Promise<string[]> {
  const port = PORT.tollgateEmbedded;
  const opsPort = port + PORT.opsOffset;
  const tg = await startTollgate({
    name: 'visitors-memory',
    port,
    mode: 'embedded',
    extraEnv: { TRUST_PROXY: '1' },
  });
  const key = await keyOf(port, 'per-minute-visitor', [
    { limit: 100, period: 'minute', per: 'clientAddress' },
  ]);
  const url = `http://127.0.0.1:${port}/bench/item`;
  await wrk({
    url,
    seconds: 2,
    headers: { 'x-api-key': key.secret },
    script: VISITORS_SCRIPT,
    scriptEnv: { VISITORS: '50' },
  });
  // Starts at a minute's start, so that every visitor of the load counts in one minute's window.
  await sleep(60_000 - (Date.now() % 60_000) + 200);
  const rssBefore = await metricValue(opsPort, 'tollgate_process_resident_memory_bytes');
  const heapBefore = await metricValue(opsPort, 'tollgate_nodejs_heap_size_used_bytes');
  let rssPeak = rssBefore;
  let heapPeak = heapBefore;
  let sent = 0;
  const watching = (async () => {
    while (sent < DISTINCT_VISITORS) {
      rssPeak = Math.max(rssPeak, await metricValue(opsPort, 'tollgate_process_resident_memory_bytes'));
      heapPeak = Math.max(heapPeak, await metricValue(opsPort, 'tollgate_nodejs_heap_size_used_bytes'));
      await sleep(500);
    }
  })();
  const started = Date.now();
  while (sent < DISTINCT_VISITORS && Date.now() - started < 55_000) {
    const r = await wrk({
      url,
      seconds: 5,
      headers: { 'x-api-key': key.secret },
      script: VISITORS_SCRIPT,
      scriptEnv: { VISITORS: '0', OFFSET: String(sent) },
    });
    if (r.non2xx > r.requests / 1_000) throw new Error(`memory: ${r.non2xx} answers were not 2xx`);
    sent += r.requests;
  }
  const reached = sent;
  sent = DISTINCT_VISITORS;
  await watching;
  // The window ends, and the sweep (every minute) drops its counts.
  await sleep(60_000 - (Date.now() % 60_000) + 65_000);
  const rssAfter = await metricValue(opsPort, 'tollgate_process_resident_memory_bytes');
  const heapAfter = await metricValue(opsPort, 'tollgate_nodejs_heap_size_used_bytes');
  await stopProc(tg);
  const mb = (b: number) => fmt(b / 1_048_576, 1);
  return [
    `Distinct client addresses sent within one minute: ${fmt(reached)} (one request each, a per-minute limit per address).`,
    '',
    '| | before | peak | growth | per visitor | two minutes later |',
    '|---|--:|--:|--:|--:|--:|',
    `| RSS MB | ${mb(rssBefore)} | ${mb(rssPeak)} | ${mb(rssPeak - rssBefore)} | ${fmt((rssPeak - rssBefore) / reached)} B | ${mb(rssAfter)} |`,
    `| heap used MB | ${mb(heapBefore)} | ${mb(heapPeak)} | ${mb(heapPeak - heapBefore)} | ${fmt((heapPeak - heapBefore) / reached)} B | ${mb(heapAfter)} |`,
  ];
}

export async function visitors(): Promise<string> {
  ensureTools(['wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await startBackend();
  const embedded = await throughput('embedded');
  const redis = await throughput('redis');
  const mem = await memory();
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- visitors\` (${machine()}; one process per mode, wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians).`,
    '',
    '| mode | credential and plan | req/s | ÷ key | p99 ms | Redis calls per request | req/s per round |',
    '|---|---|--:|--:|--:|--:|---|',
    ...embedded.rows,
    ...redis.rows,
    '',
    ...mem,
  ].join('\n');
}
