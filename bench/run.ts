// Tollgate's load benchmark: Tollgate against the gateways a user would pick instead, on one machine,
// in one run. Node 24 runs it directly (type stripping). Each command is a file in bench/commands/;
// what they share (processes, services, wrk, reporting) is in bench/lib/.
//
//   npm run bench                 the comparison table (backend, nginx, HAProxy, Express, Fastify, Tollgate ×3)
//   npm run bench -- scale        memory for 100k cached keys, 10k keys in rotation, replicas 1 → 2 → 4
//   npm run bench -- cost         Redis commands per proxied request, Postgres writes per 10,000 requests, and hot-consumer's table
//   npm run bench -- hot-consumer limiter round trips per request of a consumer of 10 keys through 2 replicas' limiters
//   npm run bench -- profile      --cpu-prof of one Tollgate process under load, top self-time functions
//   npm run bench -- profile-compare one request's CPU by function in two processes side by side: this build against BENCH_BASELINE's, or (BENCH_PROFILE_COMPARE=forged) wrong-checksum secrets against preflights, or (=settled) a settled JSON request against a fixed-cost one
//   npm run bench -- engines      undici Pool.stream against Pool.dispatch, forwarding alone
//   npm run bench -- concurrency  CPU per request at wrk -c50, 13, 4, 1: Tollgate with and without a plan, a bare forwarder
//   npm run bench -- embedded     the embedded default against Redis mode: time to ready, memory idle and under load, req/s, p99
//   npm run bench -- detail       the key detail at both usage caps (1,000 endpoints, 10,000 customers), short and longest names: size and time
//   npm run bench -- routes       the proxy with route tables of 1, 100 and 1,000 routes against none, and a plan with a match and costs: req/s and CPU per request
//   npm run bench -- record       the usage recorder's record() alone: ns per request
//   npm run bench -- usage-batch  one usage batch of 10,000 keys applied to Postgres: ms a batch (BENCH_BASELINE: against another build)
//   npm run bench -- limiter-core the in-process limiter's consume() alone, five kinds of plan: decisions/s (BENCH_BASELINE: against another build)
//   npm run bench -- consume-args the consume script's JSON argument: encoding it in Node, cjson.decode against cmsgpack.unpack in Redis
//   npm run bench -- events       the proxy with a webhook and a billing export configured and busy against none: req/s and CPU per request
//   npm run bench -- billing-export an hour of 10,000 keys exported by each export type to a local receiver: requests, seconds
//   npm run bench -- extauth      forward auth (EXTAUTH_PORT) against the proxy for the same key and plan, embedded and Redis mode: decisions/s against admitted req/s
//   npm run bench -- verify       POST /tollgate/verify against the proxy for the same key and plan: req/s, p99, Redis script calls per request
//   npm run bench -- tracing      OpenTelemetry traces off, every request sampled, a 0.01 ratio, and both to a collector that hangs: req/s and CPU per request against off
//   npm run bench -- tracing-hooks the tracing hooks alone, in process: CPU ns per request, every request sampled and a 0.01 ratio
//   npm run bench -- tracing-export what exporting spans costs: the hooks at a steady pace to a collector answering and to one that hangs, CPU µs per request
//   npm run bench -- tracing-memory every request sampled to a collector that never answers, 5 minutes: RSS and heap every half minute
//   npm run bench -- cors         CORS preflights answered by Tollgate against requests without a key (401): req/s, p99
//   npm run bench -- forged-keys  wrong-checksum secrets against CORS preflights: req/s, p99, Redis and Postgres calls beside idle
//   npm run bench -- settle       a settled JSON request against a fixed-cost one (req/s, Tollgate's CPU and Redis commands per request); a 200-event stream through Tollgate (Redis mode settled and at a fixed cost, embedded settled, each in a process of its own) against the bare forwarder, interleaved; memory over 10,000 streams
//   npm run bench -- meter        the response meters alone, in process: a chat answer, in gzip, a 200-event stream, embeddings batches (base64 and numbers): ms an answer, MiB/s
//   npm run bench -- visitors     a limit per visitor and a token against a plain key (req/s, Redis calls), and 150,000 visitors' memory
//   npm run bench -- buckets      a hot key on a token bucket and on a concurrency limit against the one-limit key: req/s, p99, Redis round trips per request
//   npm run bench -- portal       the developer portal with 10 keys and 90 days of usage in Chromium: ms to the keys page and the usage charts, against the console's overview
//   … --out FILE                  also write the result (markdown) to FILE; it is always printed
//
// Environment (all optional): BENCH_DURATION (s, default 10), BENCH_ROUNDS (3), BENCH_WARMUP (s, 3),
// BENCH_CONNECTIONS (50), BENCH_TARGETS (comma-separated ids to run), BENCH_REDIS_URL
// (redis://127.0.0.1:6379/15: the bench owns DB 15 and flushes it), BENCH_PG_URL
// (postgres://postgres@127.0.0.1:5432), BENCH_PROFILE_MODE (redis | embedded), BENCH_SCALE_KEYS (100000), BENCH_ROTATION_KEYS (10000),
// BENCH_REPLICAS (1,2,4), BENCH_CONSUMER_RATES (16000,4000: hot-consumer's paced rows, req/s), BENCH_REPLICA_WARMUP (s, 10), BENCH_CONCURRENCY (50,13,4,1), BENCH_ROUTE_TABLES (1,100,1000), BENCH_PIN=1 (table: each target on the last CPU, wrk and backend on the others; forged-keys: Tollgate on the last CPU, wrk on the others), BENCH_SKIP_BUILD=1,
// BENCH_BASELINE (table: the folder of another build, e.g. an older commit's, run beside this one in the same rounds),
// BENCH_NICE (e.g. -10: every target and wrk run at that priority, so other work on a shared machine
// takes less of the measured CPU; off by default because it slows everything else while it runs).
// Everything started is stopped on exit, failure or Ctrl-C; a run killed with SIGKILL is cleaned up
// by the next run (process groups recorded in /tmp/tollgate-bench/pids-<runner pid>.json).
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { NICE, log, run } from './lib/config.ts';
import {
  PIDS_FILE,
  ensureWorkDir,
  niceSession,
  readFileOr,
  stopAll,
  stopEverythingOnExit,
} from './lib/processes.ts';
import { report } from './lib/report.ts';
import { billingExport } from './commands/billing-export.ts';
import { buckets } from './commands/buckets.ts';
import { concurrency } from './commands/concurrency.ts';
import { consumeArgs } from './commands/consume-args.ts';
import { cors } from './commands/cors.ts';
import { forgedKeys } from './commands/forged-keys.ts';
import { portal } from './commands/portal.ts';
import { visitors } from './commands/visitors.ts';
import { cost } from './commands/cost.ts';
import { detail } from './commands/detail.ts';
import { embedded } from './commands/embedded.ts';
import { engines } from './commands/engines.ts';
import { events } from './commands/events.ts';
import { extauth } from './commands/extauth.ts';
import { hotConsumer } from './commands/hot-consumer.ts';
import { limiterCore } from './commands/limiter-core.ts';
import { profile } from './commands/profile.ts';
import { profileCompare } from './commands/profile-compare.ts';
import { record } from './commands/record.ts';
import { usageBatch } from './commands/usage-batch.ts';
import { routes } from './commands/routes.ts';
import { scale } from './commands/scale.ts';
import { settle } from './commands/settle.ts';
import { meter } from './commands/meter.ts';
import { table } from './commands/table.ts';
import { tracing } from './commands/tracing.ts';
import { tracingExport } from './commands/tracing-export.ts';
import { tracingHooks } from './commands/tracing-hooks.ts';
import { tracingMemory } from './commands/tracing-memory.ts';
import { verify } from './commands/verify.ts';

const commands: Record<string, () => Promise<string>> = {
  table,
  scale,
  cost,
  'hot-consumer': hotConsumer,
  profile,
  'profile-compare': profileCompare,
  engines,
  concurrency,
  embedded,
  detail,
  routes,
  record,
  'usage-batch': usageBatch,
  'limiter-core': limiterCore,
  'consume-args': consumeArgs,
  events,
  extauth,
  verify,
  tracing,
  'tracing-hooks': tracingHooks,
  'tracing-export': tracingExport,
  'tracing-memory': tracingMemory,
  'billing-export': billingExport,
  cors,
  'forged-keys': forgedKeys,
  settle,
  meter,
  visitors,
  buckets,
  portal,
};
const usage = `usage: npm run bench [-- table|scale|cost|hot-consumer|profile|profile-compare|engines|concurrency|embedded|detail|routes|record|usage-batch|limiter-core|consume-args|events|extauth|verify|tracing|tracing-hooks|tracing-export|tracing-memory|billing-export|cors|forged-keys|settle|meter|visitors|buckets|portal] [--out FILE]
`;

let args: ReturnType<typeof parseArgs<{ options: { out: { type: 'string' } }; allowPositionals: true }>>;
try {
  args = parseArgs({ options: { out: { type: 'string' } }, allowPositionals: true });
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${usage}`);
  process.exit(2);
}
const name = args.positionals[0] ?? 'table';
const command = commands[name];
if (!command || args.positionals.length > 1) {
  process.stderr.write(usage);
  process.exit(2);
}
stopEverythingOnExit();
ensureWorkDir();
// The runner drives the set-up traffic (key creation, cache warm-up): it gets the run's priority too,
// and gives its session (the caller's shell's) its own back at the end.
const callerNice = /nice (-?\d+)/.exec(readFileOr('/proc/self/autogroup', ''))?.[1];
niceSession(process.pid);
try {
  report(await command(), args.values.out);
} catch (err) {
  log(`failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
} finally {
  await stopAll();
  fs.rmSync(PIDS_FILE, { force: true });
  if (NICE !== undefined && callerNice !== undefined) fs.writeFileSync('/proc/self/autogroup', callerNice);
  log(`stopped everything; logs in ${run.workDir}`);
  // A Redis client left by a failure would keep reconnecting to a server that is gone.
  process.exit();
}
