// `npm run bench`: Tollgate against the gateways a user would pick instead, each doing the same job,
// alternating rounds on one machine.
import fs from 'node:fs';
import path from 'node:path';
import {
  BACKEND_URL,
  BASELINE,
  DB_NAME,
  CLIENT_CPUS,
  CONNECTIONS,
  DURATION,
  NODE,
  PEER_SECRET,
  PIN,
  PLAN_ID,
  PORT,
  ROUNDS,
  TARGET_CPUS,
  THREADS,
  TWO_LIMIT_PLAN_ID,
  WARMUP,
  env,
  log,
  run,
} from '../lib/config.ts';
import {
  httpOk,
  pinTree,
  portFree,
  startProc,
  treeCpuUs,
  treeRssKiB,
  waitFor,
  type Proc,
} from '../lib/processes.ts';
import { fmt, loggedProblems, machine, median, ratio } from '../lib/report.ts';
import {
  buildTollgate,
  createConsumer,
  createKey,
  ensurePlan,
  ensureTools,
  freshDatabase,
  renderConfig,
  runRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

interface Target {
  readonly id: string;
  readonly label: string;
  readonly port: number;
  secret: string;
  proc?: Proc;
  /** The process whose CPU this row's load costs: its own, or the process it shares (same-process rows). */
  cpuOf?: Proc;
  readonly rounds: WrkResult[];
  /** CPU time its process spent per request answered, per round: what a busy machine does not distort. */
  readonly cpuUsPerRequest: number[];
  rssKiB?: number;
  note?: string;
}

async function startPeers(targets: Target[], wanted: (id: string) => boolean): Promise<void> {
  const redisEnv = { REDIS_URL: run.redisUrl, BACKEND_URL, SECRET: PEER_SECRET, PREFIX: 'bench:' };
  const peer = (id: string, label: string, port: number): Target => ({
    id,
    label,
    port,
    secret: PEER_SECRET,
    rounds: [],
    cpuUsPerRequest: [],
  });
  if (wanted('nginx')) {
    const t = peer('nginx', 'nginx (map + limit_req)', PORT.nginx);
    const conf = renderConfig('nginx-peer.conf', 'nginx-peer.conf', {
      DIR: run.workDir,
      PORT: t.port,
      BACKEND_PORT: PORT.backend,
      SECRET: PEER_SECRET,
    });
    t.proc = startProc('nginx', 'nginx', [
      '-c',
      conf,
      '-p',
      run.workDir,
      '-e',
      path.join(run.workDir, 'nginx-peer-error.log'),
      '-g',
      'daemon off;',
    ]);
    targets.push(t);
  }
  if (wanted('haproxy')) {
    const t = peer('haproxy', 'HAProxy (map ACL + stick table)', PORT.haproxy);
    fs.writeFileSync(path.join(run.workDir, 'haproxy-keys.map'), `${PEER_SECRET} ${PEER_SECRET}\n`);
    const conf = renderConfig('haproxy-peer.cfg', 'haproxy-peer.cfg', {
      DIR: run.workDir,
      PORT: t.port,
      BACKEND_PORT: PORT.backend,
    });
    t.proc = startProc('haproxy', 'haproxy', ['-db', '-f', conf]);
    targets.push(t);
  }
  if (wanted('express')) {
    const t = peer(
      'express',
      'Express 5 + express-rate-limit (Redis) + http-proxy-middleware 4',
      PORT.express,
    );
    t.proc = startProc('express', NODE, ['bench/peers/express.ts'], { ...redisEnv, PORT: String(t.port) });
    targets.push(t);
  }
  if (wanted('fastify')) {
    const t = peer('fastify', 'Fastify 5 + @fastify/rate-limit (Redis) + @fastify/http-proxy', PORT.fastify);
    t.proc = startProc('fastify', NODE, ['bench/peers/fastify.ts'], { ...redisEnv, PORT: String(t.port) });
    targets.push(t);
  }
  for (const t of targets) {
    if (t.proc)
      await waitFor(
        t.proc,
        'first proxied request',
        httpOk(`http://127.0.0.1:${t.port}/`, { authorization: `Bearer ${t.secret}` }),
      );
  }
}

/**
 * Keys the one-limit key's process also serves, each a row: a plan of two limits (docs/decisions/0018), and a key
 * of a consumer with a plan on the consumer only, on the key only, and on both (docs/decisions/0025), each within
 * 10 % of the one-limit key. Every plan is huge: the limiter decides every request, refusing none.
 */
const SAME_PROCESS_ROWS: { id: string; label: string; key: (port: number) => Promise<string> }[] = [
  {
    id: 'tollgate-redis-2limits',
    label: 'Tollgate Redis mode, same process, a plan of two limits (second + month)',
    key: (port) => createKey(port, 'two-limits', true, TWO_LIMIT_PLAN_ID),
  },
  {
    id: 'tollgate-redis-consumer-plan',
    label: 'Tollgate Redis mode, same process, a key of a consumer: a plan on the consumer only',
    key: async (port) =>
      createKey(
        port,
        'of-a-consumer',
        false,
        undefined,
        await createConsumer(port, 'consumer-plan', PLAN_ID),
      ),
  },
  {
    id: 'tollgate-redis-key-plan',
    label: 'Tollgate Redis mode, same process, a key of a consumer: a plan on the key only',
    key: async (port) => createKey(port, 'own-plan', true, PLAN_ID, await createConsumer(port, 'no-plan')),
  },
  {
    id: 'tollgate-redis-both-plans',
    label: 'Tollgate Redis mode, same process, a key of a consumer: a plan on each',
    key: async (port) =>
      createKey(port, 'both-plans', true, PLAN_ID, await createConsumer(port, 'both-plans', PLAN_ID)),
  },
];

async function startTollgates(targets: Target[], wanted: (id: string) => boolean): Promise<void> {
  const ids = [
    'tollgate-embedded',
    'tollgate-redis',
    'tollgate-redis-w2',
    ...SAME_PROCESS_ROWS.map((row) => row.id),
  ].filter(wanted);
  if (ids.length === 0 || !buildTollgate()) return;
  if (wanted('tollgate-embedded')) {
    const t: Target = {
      id: 'tollgate-embedded',
      label: 'Tollgate embedded (SQLite, in-process counters)',
      port: PORT.tollgateEmbedded,
      secret: '',
      rounds: [],
      cpuUsPerRequest: [],
    };
    t.proc = await startTollgate({ name: t.id, port: t.port, mode: 'embedded' });
    await ensurePlan(t.port);
    t.secret = await createKey(t.port, 'bench');
    targets.push(t);
  }
  if (wanted('tollgate-redis') || wanted('tollgate-redis-w2')) {
    const databaseUrl = await freshDatabase();
    // Started one after the other: both run migrations against the same fresh database.
    for (const [id, port, workers] of [
      ['tollgate-redis', PORT.tollgateRedis, 1],
      ['tollgate-redis-w2', PORT.tollgateRedisW2, 2],
    ] as const) {
      if (!wanted(id)) continue;
      const label =
        workers === 1
          ? 'Tollgate Redis mode + Postgres, 1 process'
          : `Tollgate Redis mode + Postgres, WORKERS=${workers}`;
      const t: Target = { id, label, port, secret: '', rounds: [], cpuUsPerRequest: [] };
      t.proc = await startTollgate({ name: id, port, mode: 'redis', databaseUrl, workers });
      await ensurePlan(port);
      t.secret = await createKey(port, id);
      targets.push(t);
    }
    // Other keys in the same process as the one-limit key: what their plans cost against it, in one run.
    const one = targets.find((t) => t.id === 'tollgate-redis');
    for (const row of SAME_PROCESS_ROWS) {
      if (!one || !wanted(row.id)) continue;
      targets.push({
        id: row.id,
        label: row.label,
        port: one.port,
        secret: await row.key(one.port),
        cpuOf: one.proc,
        rounds: [],
        cpuUsPerRequest: [],
      });
    }
  }
}

/**
 * BENCH_BASELINE's build, embedded and in Redis mode, beside this tree's: its own data folder, database
 * and Redis key prefix, since an older build's schema and key layout may differ.
 */
async function startBaseline(targets: Target[], wanted: (id: string) => boolean): Promise<void> {
  if (BASELINE === undefined) return;
  const main = path.join(BASELINE, 'dist/src/main.js');
  if (!fs.existsSync(main)) throw new Error(`BENCH_BASELINE: ${main} does not exist (build it there first)`);
  const commit = /^[0-9a-f]{7,40}$/.exec(path.basename(BASELINE))?.[0] ?? path.basename(BASELINE);
  const modes = [
    [
      'tollgate-embedded-baseline',
      PORT.tollgateEmbeddedBaseline,
      'embedded',
      'embedded (SQLite, in-process counters)',
    ],
    ['tollgate-redis-baseline', PORT.tollgateRedisBaseline, 'redis', 'Redis mode + Postgres, 1 process'],
  ] as const;
  for (const [id, port, mode, label] of modes) {
    if (!wanted(id)) continue;
    const t: Target = {
      id,
      label: `Tollgate ${label}, baseline build (${commit})`,
      port,
      secret: '',
      rounds: [],
      cpuUsPerRequest: [],
    };
    t.proc = await startTollgate({
      name: id,
      port,
      mode,
      main,
      ...(mode === 'redis' && {
        databaseUrl: await freshDatabase(`${DB_NAME}_baseline`),
        extraEnv: { REDIS_KEY_PREFIX: 'bench-baseline:' },
      }),
    });
    await ensurePlan(port);
    t.secret = await createKey(port, id);
    targets.push(t);
  }
}

// One request through each target, checked at the backend's echo: the key arrived as x-api-key and
// the client's Authorization did not. A target that skips part of the job is flagged in the table.
async function checkJob(t: Target): Promise<void> {
  if (t.id === 'backend') return;
  const res = await fetch(`http://127.0.0.1:${t.port}/check?x=1`, {
    headers: { authorization: `Bearer ${t.secret}` },
  });
  await res.arrayBuffer();
  const problems: string[] = [];
  if (res.status !== 200) problems.push(`status ${res.status}`);
  if (res.headers.get('x-seen-api-key') !== t.secret) problems.push('x-api-key not forwarded');
  if (res.headers.get('x-seen-authorization')) problems.push('Authorization forwarded');
  const denied = await fetch(`http://127.0.0.1:${t.port}/check`, {
    headers: { authorization: 'Bearer wrong-key' },
  });
  await denied.arrayBuffer();
  if (denied.status !== 401) problems.push(`wrong key → ${denied.status}`);
  if (problems.length > 0) {
    t.note = problems.join(', ');
    log(`${t.id}: ${t.note}`);
  }
}

function renderTable(targets: Target[]): string {
  const backend = targets.find((t) => t.id === 'backend');
  const tollgate = targets.find((t) => t.id === 'tollgate-redis');
  const agg = (t: Target | undefined) =>
    t
      ? {
          rps: median(t.rounds.map((r) => r.rps)),
          p50: median(t.rounds.map((r) => r.p50)),
          p99: median(t.rounds.map((r) => r.p99)),
          cpu: t.cpuUsPerRequest.length > 0 ? median(t.cpuUsPerRequest) : undefined,
        }
      : undefined;
  const b = agg(backend);
  const g = agg(tollgate);
  const rows = [
    '| target | req/s | ÷ backend | ÷ Tollgate | p50 ms | ÷ backend | ÷ Tollgate | p99 ms | ÷ backend | ÷ Tollgate | CPU µs per request | ÷ Tollgate | non-2xx | req/s per round | RSS after |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|',
  ];
  for (const t of targets) {
    const a = agg(t)!;
    const cpu = a.cpu === undefined ? '— | —' : `${fmt(a.cpu, 1)} | ${ratio(a.cpu, g?.cpu)}`;
    const non2xx = t.rounds.reduce((s, r) => s + r.non2xx + r.socketErrors, 0);
    const label = t.note ? `${t.label} ⚠ ${t.note}` : t.label;
    rows.push(
      `| ${label} | ${fmt(a.rps)} | ${ratio(a.rps, b?.rps)} | ${ratio(a.rps, g?.rps)} | ${fmt(a.p50, 2)} | ${ratio(a.p50, b?.p50)} | ${ratio(a.p50, g?.p50)} | ${fmt(a.p99, 2)} | ${ratio(a.p99, b?.p99)} | ${ratio(a.p99, g?.p99)} | ${cpu} | ${fmt(non2xx)} | ${t.rounds.map((r) => fmt(r.rps)).join(' / ')} | ${t.rssKiB ? `${fmt(t.rssKiB / 1024)} MiB` : '—'} |`,
    );
  }
  return rows.join('\n');
}

export async function table(): Promise<string> {
  const only = env.BENCH_TARGETS?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const wanted = (id: string): boolean => !only || only.includes(id);
  ensureTools();
  for (const port of Object.values(PORT)) {
    if (port > 1000 && !(await portFree(port)))
      throw new Error(`port ${port} is in use: another bench still running?`);
  }
  await runRedis();
  const targets: Target[] = [];
  const backendProc = await startBackend();
  if (wanted('backend'))
    targets.push({
      id: 'backend',
      label: 'backend direct (nginx, static JSON)',
      port: PORT.backend,
      secret: PEER_SECRET,
      proc: backendProc,
      rounds: [],
      cpuUsPerRequest: [],
    });
  await startPeers(targets, wanted);
  await startTollgates(targets, wanted);
  await startBaseline(targets, wanted);
  for (const t of targets) await checkJob(t);
  if (PIN) {
    // WORKERS=2 is two processes: it keeps every CPU, and its row says so.
    pinTree(backendProc.child.pid, CLIENT_CPUS);
    for (const t of targets) {
      if (t.id === 'backend') continue;
      if (t.id === 'tollgate-redis-w2')
        t.note = [t.note, 'not pinned: two workers'].filter(Boolean).join(', ');
      else pinTree(t.proc?.child.pid, TARGET_CPUS);
    }
  }

  const load = (t: Target, seconds: number) =>
    wrk({
      url: `http://127.0.0.1:${t.port}/bench/item?id=42`,
      seconds,
      headers: { authorization: `Bearer ${t.secret}` },
      cpus: PIN ? CLIENT_CPUS : undefined,
    });
  log(
    `warm-up ${WARMUP} s each (JIT, connection pools), then ${ROUNDS} rounds × ${DURATION} s, wrk -t${THREADS} -c${CONNECTIONS}`,
  );
  for (const t of targets) await load(t, WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts one target later, so no target always runs right after the same neighbour.
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + round) % targets.length] as Target;
      const pid = (t.cpuOf ?? t.proc)?.child.pid;
      const cpuBefore = pid === undefined ? 0 : treeCpuUs(pid);
      const r = await load(t, DURATION);
      t.rounds.push(r);
      if (pid !== undefined) t.cpuUsPerRequest.push((treeCpuUs(pid) - cpuBefore) / r.requests);
      log(
        `round ${round + 1}/${ROUNDS} ${t.id}: ${fmt(r.rps)} req/s, p50 ${fmt(r.p50, 2)} ms, p99 ${fmt(r.p99, 2)} ms, non-2xx ${r.non2xx + r.socketErrors}`,
      );
    }
  }
  for (const t of targets) {
    if (t.proc?.child.pid) t.rssKiB = treeRssKiB(t.proc.child.pid);
    if (t.id.startsWith('tollgate')) {
      const problems = loggedProblems(t.proc);
      if (problems.length > 0) t.note = [t.note, `logged ${problems.join('; ')}`].filter(Boolean).join(', ');
    }
  }

  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const body = [
    `Latest run: ${when} UTC, \`${PIN ? 'BENCH_PIN=1 ' : ''}npm run bench\` (wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s after a ${WARMUP} s warm-up each; medians of the rounds; ratios are this row ÷ the backend row and ÷ the Tollgate Redis-mode one-process row; CPU µs per request is the user + system time of the target's process tree (for a same-process row, the process it shares) during its rounds ÷ the requests answered, which a busy machine distorts far less than req/s; non-2xx includes socket errors${PIN ? `; every target pinned to CPU ${TARGET_CPUS}, wrk and the backend to CPU ${CLIENT_CPUS}` : ''}).`,
    '',
    machine(),
    '',
    renderTable(targets),
  ].join('\n');
  return body;
}
