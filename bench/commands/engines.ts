// `npm run bench -- engines`: forwarding alone, undici Pool.stream against Pool.dispatch (no key, no limit).
import {
  BACKEND_URL,
  CONNECTIONS,
  DURATION,
  NODE,
  PORT,
  ROUNDS,
  THREADS,
  WARMUP,
  log,
} from '../lib/config.ts';
import { httpOk, startProc, waitFor } from '../lib/processes.ts';
import { fmt, median, ratio } from '../lib/report.ts';
import { ensureTools, startBackend } from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

export async function engines(): Promise<string> {
  ensureTools();
  await startBackend();
  const variants = [
    {
      id: 'stream',
      label: 'undici Pool.stream (the forwarding Tollgate used before dispatch)',
      port: PORT.replicaBase + 5,
    },
    { id: 'dispatch', label: 'undici Pool.dispatch, raw-header handler', port: PORT.replicaBase + 6 },
  ];
  const rounds = new Map<string, WrkResult[]>(variants.map((v) => [v.id, []]));
  for (const v of variants) {
    const proc = startProc(`engine-${v.id}`, NODE, ['bench/peers/engine.ts'], {
      PORT: String(v.port),
      BACKEND_URL,
      ENGINE: v.id,
    });
    await waitFor(proc, 'first forwarded request', httpOk(`http://127.0.0.1:${v.port}/`));
  }
  const url = (port: number) => `http://127.0.0.1:${port}/bench/item?id=42`;
  for (const v of variants) await wrk({ url: url(v.port), seconds: WARMUP });
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
      const r = await wrk({ url: url(v.port), seconds: DURATION });
      rounds.get(v.id)?.push(r);
      log(`round ${round + 1}/${ROUNDS} ${v.id}: ${fmt(r.rps)} req/s`);
    }
  }
  const base = median((rounds.get('stream') ?? []).map((r) => r.rps));
  const body = [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- engines\` (bench/peers/engine.ts: node:http server, no key check, no limiter; wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians).`,
    '',
    '| forwarding | req/s | ÷ stream | p50 ms | p99 ms | req/s per round |',
    '|---|--:|--:|--:|--:|---|',
    ...variants.map((v) => {
      const rs = rounds.get(v.id) ?? [];
      const rps = median(rs.map((r) => r.rps));
      return `| ${v.label} | ${fmt(rps)} | ${ratio(rps, base)} | ${fmt(median(rs.map((r) => r.p50)), 2)} | ${fmt(median(rs.map((r) => r.p99)), 2)} | ${rs.map((r) => fmt(r.rps)).join(' / ')} |`;
    }),
  ].join('\n');
  return body;
}
