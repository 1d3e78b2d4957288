// `npm run bench -- limiter-core`: the in-process limiter's decisions alone (the built
// `MemoryRateLimiter.consume`, in the bench's own process, no server): decisions per second for one
// fixed limit, one token bucket, a fixed and a sliding limit, a key's limit and its consumer's, a
// limit and credits, and a limit per visitor (50 client addresses in turn), every request admitted. With BENCH_BASELINE (the
// folder of an older build, e.g. the commit before the pure core) that build runs the same cases in
// the same rounds, the order of the two alternating. Medians of BENCH_ROUNDS rounds (default 5), each
// round listed. Timed in the process's CPU time (its collector's threads included), not the wall
// clock: on a shared machine the wall clock counts the time other work held the CPU.
import type * as LimiterModule from '../../src/limits/memory-limiter.ts';
import type * as VisitorModule from '../../src/limits/visitor.ts';
import type * as PlanModule from '../../src/plans/plan.ts';
import type { Subject } from '../../src/plans/subject.ts';
import { builtModule } from '../lib/built-module.ts';
import { BASELINE, ROOT, env, log, positive } from '../lib/config.ts';
import { fmt, machine, median, ratio } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';

const ROUNDS = positive(env.BENCH_ROUNDS, 5);
const DECISIONS = 500_000;
const VISITORS = 50;
/** The clock moves 1 ms every this many decisions (about 16,000 decisions a second of its time). */
const DECISIONS_PER_MS = 16;
/** Never reached: every request is admitted, so each decision charges every limit. */
const HUGE = 1_000_000_000_000;

/** A balance never spent out (docs/guides/credits.md): each decision charges it too. */
const CREDITS = { epoch: 1, window: 0, granted: HUGE, floor: 0, refill: null, lowAt: null };

/** One build's limiter, taken the way its own `consume` is called (before the core it filled a states array). */
interface Build {
  readonly name: string;
  readonly decide: (subjects: readonly Subject[], nowMs: number, visitor: unknown) => boolean;
  readonly fresh: () => void;
  readonly cases: readonly Case[];
}

interface Case {
  readonly id: string;
  readonly label: string;
  readonly subjects: readonly Subject[];
  readonly visitors: readonly unknown[] | undefined;
}

async function load(name: string, folder: string): Promise<Build> {
  const built = <T>(module: string) => builtModule<T>(module, folder);
  const { MemoryRateLimiter } = await built<typeof LimiterModule>('limits/memory-limiter.js');
  const { planOf, ruleOf } = await built<typeof PlanModule>('plans/plan.js');
  const { visitorOf } = await built<typeof VisitorModule>('limits/visitor.js');
  let limiter = new MemoryRateLimiter({ sweepIntervalMs: 3_600_000 });
  const key = (...inputs: PlanModule.LimitInput[]): Subject => ({
    scope: 'key',
    id: 'key_bench',
    plan: planOf(inputs.map(ruleOf)),
  });
  const consumer: Subject = {
    scope: 'consumer',
    id: 'con_bench',
    plan: planOf([ruleOf({ limit: HUGE, period: 'hour' })]),
  };
  const visitors = Array.from({ length: VISITORS }, (_, i) => visitorOf(`10.0.0.${i + 1}`, undefined));
  const cases: Case[] = [
    { id: 'fixed', label: 'one fixed limit', subjects: [key({ limit: HUGE, period: 'minute' })] },
    {
      id: 'bucket',
      label: 'one token bucket',
      subjects: [key({ limit: HUGE, period: 'second', algorithm: 'tokenBucket' })],
    },
    {
      id: 'fixed+sliding',
      label: 'a fixed and a sliding limit',
      subjects: [
        key({ limit: HUGE, period: 'minute' }, { limit: HUGE, period: 'hour', algorithm: 'sliding' }),
      ],
    },
    {
      id: 'key+consumer',
      label: "a key's fixed limit and its consumer's",
      subjects: [key({ limit: HUGE, period: 'minute' }), consumer],
    },
    {
      id: 'credits',
      label: 'a fixed limit and credits',
      subjects: [{ ...key({ limit: HUGE, period: 'minute' }), balance: CREDITS }],
    },
    {
      id: 'visitor',
      label: `a fixed limit per client address (${VISITORS} in turn)`,
      subjects: [key({ limit: HUGE, period: 'minute', per: 'clientAddress' })],
      visitors,
    },
  ].map((c) => ({ visitors: undefined, ...c }));
  const states: unknown[] = [];
  const decide: Build['decide'] =
    limiter.consume.length === 5
      ? (subjects, nowMs, visitor) => {
          states.length = 0;
          const consume = limiter.consume as unknown as (...args: unknown[]) => { allowed: boolean };
          return consume.call(limiter, subjects, 1, nowMs, states, visitor).allowed;
        }
      : (subjects, nowMs, visitor) =>
          limiter.consume(subjects, 1, nowMs, visitor as VisitorModule.Visitor | undefined).allowed;
  const fresh = () => {
    void limiter.close();
    limiter = new MemoryRateLimiter({ sweepIntervalMs: 3_600_000 });
  };
  return { name, decide, fresh, cases };
}

/** Decisions per CPU second of one case on one build, from a fresh limiter. */
function decisionsPerSecond(build: Build, c: Case, startMs: number): number {
  build.fresh();
  const { subjects, visitors } = c;
  let admitted = 0;
  const started = process.cpuUsage();
  for (let i = 0; i < DECISIONS; i++) {
    const visitor = visitors === undefined ? undefined : visitors[i % visitors.length];
    if (build.decide(subjects, startMs + Math.floor(i / DECISIONS_PER_MS), visitor)) admitted++;
  }
  const { user, system } = process.cpuUsage(started);
  const seconds = (user + system) / 1e6;
  if (admitted !== DECISIONS) throw new Error(`${build.name} ${c.id}: ${DECISIONS - admitted} refused`);
  return DECISIONS / seconds;
}

export async function limiterCore(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const builds = [await load('this build', ROOT)];
  if (BASELINE !== undefined) builds.push(await load('baseline', BASELINE));
  const rounds = new Map<string, number[]>();
  const startMs = Date.UTC(2026, 0, 1);
  // One round unrecorded first, so that both builds' code is optimised before anything counts.
  for (let round = 0; round <= ROUNDS; round++) {
    const order = round % 2 === 0 ? builds : [...builds].reverse();
    for (const c of builds[0]!.cases)
      for (const build of order) {
        const rate = decisionsPerSecond(
          build,
          build.cases.find((b) => b.id === c.id)!,
          startMs,
        );
        if (round === 0) continue;
        const id = `${build.name}/${c.id}`;
        rounds.set(id, [...(rounds.get(id) ?? []), rate]);
        log(`round ${round}/${ROUNDS} ${id}: ${fmt(rate)} decisions/s`);
      }
  }
  const rows = builds[0]!.cases.flatMap((c) =>
    builds.map((build) => {
      const rates = rounds.get(`${build.name}/${c.id}`)!;
      const base = BASELINE === undefined ? undefined : median(rounds.get(`baseline/${c.id}`)!);
      const rate = median(rates);
      return `| ${c.label} | ${build.name} | ${fmt(rate)} | ${fmt(1e9 / rate)} | ${ratio(rate, base)} | ${rates.map((r) => fmt(r)).join(' / ')} |`;
    }),
  );
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- limiter-core\`${BASELINE === undefined ? '' : ` with BENCH_BASELINE=${BASELINE}`}: the built \`MemoryRateLimiter.consume\` alone, ${fmt(DECISIONS)} decisions of cost 1 per case and round, every one admitted, the clock 1 ms further every ${DECISIONS_PER_MS}, timed in the process's CPU time; ${ROUNDS} rounds after one unrecorded, the builds' order alternating; medians.`,
    '',
    machine(),
    '',
    '| limits | build | decisions per CPU s | ns per decision | ÷ baseline | decisions per CPU s, each round |',
    '|---|---|--:|--:|--:|---|',
    ...rows,
  ].join('\n');
}
