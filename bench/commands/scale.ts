// `npm run bench -- scale`: memory for many cached keys, many keys in rotation, replicas against one Redis.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BACKEND_URL,
  CLIENT_CPUS,
  CONNECTIONS,
  CPU_COUNT,
  DURATION,
  HUGE_LIMIT,
  NODE,
  PORT,
  REPLICA_WARMUP,
  ROOT,
  TARGET_CPUS,
  THREADS,
  WARMUP,
  env,
  log,
  positive,
  run,
} from '../lib/config.ts';
import { httpOk, pinTree, startProc, stopProc, treeRssKiB, waitFor, type Proc } from '../lib/processes.ts';
import { fmt, problemsNote } from '../lib/report.ts';
import {
  buildTollgate,
  createKey,
  ensureTools,
  freshDatabase,
  have,
  runRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

// Concurrent workers over a list of jobs; returns when all are done.
async function pooled<T>(
  items: T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const step = Math.max(1, Math.floor(items.length / 10));
  const runners = Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++;
      if (i > 0 && i % step === 0) log(`  ${i} / ${items.length}`);
      await work(items[i] as T, i);
    }
  });
  await Promise.all(runners);
}

export async function scale(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const keyCount = positive(env.BENCH_SCALE_KEYS, 100_000);
  const rotation = Math.min(positive(env.BENCH_ROTATION_KEYS, 10_000), keyCount);
  const replicaCounts = (env.BENCH_REPLICAS ?? '1,2,4')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  await runRedis();
  await startBackend();
  const databaseUrl = await freshDatabase();
  // The default plan puts every key under the limiter without a bind call per key.
  const extraEnv = { DEFAULT_RATE_LIMIT: `${HUGE_LIMIT}/hour` };
  const port = PORT.tollgateRedis;
  const tg = await startTollgate({ name: 'scale', port, mode: 'redis', databaseUrl, extraEnv });
  const pid = tg.child.pid as number;
  await sleep(1000);
  const rssStart = treeRssKiB(pid);

  log(`creating ${keyCount} keys through the management API`);
  const secrets: string[] = new Array<string>(keyCount);
  let started = Date.now();
  await pooled(secrets, 16, async (_s, i) => {
    secrets[i] = await createKey(port, `scale-${i}`, false);
  });
  const createRate = keyCount / ((Date.now() - started) / 1000);
  const rssCreated = treeRssKiB(pid);

  log(`one proxied request per key (warms the key cache)`);
  started = Date.now();
  let failures = 0;
  await pooled(secrets, 50, async (secret) => {
    const res = await fetch(`http://127.0.0.1:${port}/warm`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    await res.arrayBuffer();
    if (res.status !== 200) failures++;
  });
  const warmRate = keyCount / ((Date.now() - started) / 1000);
  await sleep(2000);
  const rssWarm = treeRssKiB(pid);

  const keysFile = path.join(run.workDir, 'rotation-keys.txt');
  fs.writeFileSync(keysFile, secrets.slice(0, rotation).join('\n') + '\n');
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  await wrk({ url, seconds: WARMUP, headers: { authorization: `Bearer ${secrets[0]}` } });
  const oneKey = await wrk({ url, seconds: DURATION, headers: { authorization: `Bearer ${secrets[0]}` } });
  const rotate = () =>
    wrk({
      url,
      seconds: DURATION,
      script: path.join(ROOT, 'bench/rotate-keys.lua'),
      scriptEnv: { KEYS_FILE: keysFile },
    });
  // First as the keys stand after the warm-up above, whose cache entries may have outlived the key
  // cache's TTL; then again right away, with every rotating key freshly cached by the first pass.
  const rotatingAfterTtl = await rotate();
  const rotating = await rotate();
  const rssAfterLoad = treeRssKiB(pid);
  await stopProc(tg);

  // Each placement twice: Tollgate replicas, then the bare forwarder of `engines` (no key, no limiter,
  // no Redis) as the control, which shows what the machine itself loses as processes are added. As
  // placed by the scheduler also Tollgate serving a key without a plan, which separates what the
  // limiter costs from the rest of Tollgate.
  // Placements: as the scheduler places everything; and with one fixed CPU budget for all the
  // replicas (the last CPU, wrk on the others), so that adding replicas divides the same CPU instead
  // of adding processes that fight wrk for it.
  const control = 'control: bare forwarder (bench/peers/engine.ts) processes';
  const series: {
    label: string;
    control?: boolean;
    noPlan?: boolean;
    replicaCpus?: string;
    clientCpus?: string;
  }[] = [
    { label: 'placed by the scheduler' },
    { label: 'key without a plan (no limiter), placed by the scheduler', noPlan: true },
    { label: `${control} placed by the scheduler`, control: true },
  ];
  if (CPU_COUNT >= 2 && have('taskset')) {
    const pinned = { replicaCpus: TARGET_CPUS, clientCpus: CLIENT_CPUS };
    const where = `on CPU ${TARGET_CPUS}, wrk on CPU ${CLIENT_CPUS}`;
    series.push({ label: `all replicas ${where}`, ...pinned });
    series.push({ label: `${control} ${where}`, control: true, ...pinned });
  }
  const replicaRows: string[] = [];
  const allReplicas: Proc[] = [];
  for (const { label, control, noPlan, replicaCpus, clientCpus } of series) {
    log(`replicas ${replicaCounts.join(' → ')} against one Redis, ${label}`);
    for (const n of replicaCounts) {
      const replicas: Proc[] = [];
      try {
        for (let i = 0; i < n; i++) {
          const port = PORT.replicaBase + i;
          const name = `${control ? 'engine' : noPlan ? 'replica-no-plan' : 'replica'}-${n}-${i}${replicaCpus === undefined ? '' : '-pinned'}`;
          let replica: Proc;
          if (control) {
            replica = startProc(name, NODE, ['bench/peers/engine.ts'], {
              PORT: String(port),
              BACKEND_URL,
              ENGINE: 'dispatch',
            });
            await waitFor(replica, 'first forwarded request', httpOk(`http://127.0.0.1:${port}/`));
          } else {
            // Without DEFAULT_RATE_LIMIT the keys have no plan: none was bound to them.
            replica = await startTollgate({
              name,
              port,
              mode: 'redis',
              databaseUrl,
              extraEnv: noPlan ? {} : extraEnv,
            });
          }
          if (replicaCpus !== undefined) pinTree(replica.child.pid, replicaCpus);
          replicas.push(replica);
        }
        const headers = { authorization: `Bearer ${secrets[0]}` };
        const urls = replicas.map((_p, i) => `http://127.0.0.1:${PORT.replicaBase + i}/bench/item?id=42`);
        // One wrk per replica, the connections split between them, so the client side stays the same size.
        const load = (seconds: number) =>
          Promise.all(
            urls.map((u) =>
              wrk({
                url: u,
                seconds,
                headers,
                threads: n === 1 ? THREADS : 1,
                connections: Math.ceil(CONNECTIONS / n),
                cpus: clientCpus,
              }),
            ),
          );
        // Every replica gets the same warm-up CPU whatever n (they share the CPUs for it): a fresh
        // process is measured after its JIT has settled, as a replica that has run for a while would be.
        await load(REPLICA_WARMUP * n);
        const results = await load(DURATION);
        const sum = results.reduce((s, r) => s + r.rps, 0);
        const worstP99 = Math.max(...results.map((r) => r.p99));
        const non2xx = results.reduce((s, r) => s + r.non2xx + r.socketErrors, 0);
        replicaRows.push(
          `| ${label} | ${n} | ${fmt(sum)} | ${results.map((r) => fmt(r.rps)).join(' + ')} | ${fmt(worstP99, 2)} | ${fmt(non2xx)} |`,
        );
        log(`${n} replica(s), ${label}: ${fmt(sum)} req/s`);
      } catch (err) {
        // One failed step leaves a row saying so; the figures already taken are still written.
        replicaRows.push(
          `| ${label} | ${n} | failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]} | | | |`,
        );
      } finally {
        await Promise.all(replicas.map((p) => stopProc(p)));
        allReplicas.push(...replicas);
      }
    }
  }

  const mib = (kib: number) => `${fmt(kib / 1024)} MiB`;
  const body =
    [
      `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- scale\` (Tollgate Redis mode + Postgres, one process, \`DEFAULT_RATE_LIMIT\` ${HUGE_LIMIT}/hour so every key passes the limiter; wrk -c${CONNECTIONS}, ${DURATION} s per figure).`,
      '',
      `| figure | value |`,
      `|---|--:|`,
      `| resident memory, started, no keys | ${mib(rssStart)} |`,
      `| after creating ${fmt(keyCount)} keys (${fmt(createRate)} keys/s through the API) | ${mib(rssCreated)} |`,
      `| after one proxied request per key (${fmt(warmRate)} req/s, ${failures} not 200): ${fmt(keyCount)} cached keys | ${mib(rssWarm)} |`,
      `| per cached key ((warm − created) ÷ keys) | ${fmt(((rssWarm - rssCreated) * 1024) / keyCount)} bytes |`,
      `| after the load below | ${mib(rssAfterLoad)} |`,
      `| req/s, one key | ${fmt(oneKey.rps)} (p99 ${fmt(oneKey.p99, 2)} ms) |`,
      `| req/s, ${fmt(rotation)} distinct keys in rotation (bench/rotate-keys.lua), first pass: their entries cached minutes ago | ${fmt(rotatingAfterTtl.rps)} (p99 ${fmt(rotatingAfterTtl.p99, 2)} ms, non-2xx ${fmt(rotatingAfterTtl.non2xx + rotatingAfterTtl.socketErrors)}) |`,
      `| req/s, ${fmt(rotation)} distinct keys in rotation, second pass right after | ${fmt(rotating.rps)} (p99 ${fmt(rotating.p99, 2)} ms, non-2xx ${fmt(rotating.non2xx + rotating.socketErrors)}) |`,
      '',
      `Replicas against one Redis (fresh processes for every row; one wrk per replica, connections split, req/s summed; a warm-up of ${REPLICA_WARMUP} s × the number of replicas first):`,
      '',
      '| CPUs | replicas | req/s total | per replica | worst p99 ms | non-2xx |',
      '|---|--:|--:|---|--:|--:|',
      ...replicaRows,
    ].join('\n') + problemsNote([tg, ...allReplicas]);
  return body;
}
