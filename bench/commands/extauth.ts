// `npm run bench -- extauth`: forward auth (EXTAUTH_PORT, docs/guides/external-authorization.md)
// against the proxy, for the same key and plan, in one Tollgate and one run: decisions per second
// (200 with the backend's headers, no backend call) against admitted requests per second (forwarded
// to the backend), in alternating rounds, medians and every round listed; embedded, then Redis mode
// (+ Postgres). The decision is the proxy's own admission, so the difference is the backend hop.
import { CONNECTIONS, DURATION, PORT, ROUNDS, THREADS, run } from '../lib/config.ts';
import { alternatingRounds, roundsTable } from '../lib/alternating-rounds.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { stopProc, treeCpuUs } from '../lib/processes.ts';
import {
  buildTollgate,
  createKey,
  ensurePlan,
  ensureTools,
  flushRedis,
  freshDatabase,
  privateRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

/** EXTAUTH_PORT beside each Tollgate's own ports. */
const EXTAUTH_OFFSET = 200;

export async function extauth(): Promise<string> {
  ensureTools(['wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await startBackend();
  const sections: string[] = [];
  for (const mode of ['embedded', 'redis'] as const) {
    const port = mode === 'embedded' ? PORT.tollgateEmbedded : PORT.tollgateRedis;
    const extauthPort = port + EXTAUTH_OFFSET;
    if (mode === 'redis') {
      run.redisUrl = await privateRedis();
      await flushRedis(run.redisUrl);
    }
    const tollgate = await startTollgate({
      name: `extauth-${mode}`,
      port,
      mode,
      ...(mode === 'redis' && { databaseUrl: await freshDatabase(), redisUrl: run.redisUrl }),
      extraEnv: { EXTAUTH_PORT: String(extauthPort) },
    });
    await ensurePlan(port);
    const secret = await createKey(port, `extauth-bench-${mode}`);
    // Tollgate's CPU time per request of each run (warm-up first): steadier than req/s on a shared machine.
    const cpu = { proxied: [] as number[], forwardAuth: [] as number[] };
    const timed =
      (id: keyof typeof cpu, load: (seconds: number) => Promise<WrkResult>) => async (seconds: number) => {
        const before = treeCpuUs(tollgate.child.pid!);
        const result = await load(seconds);
        cpu[id].push((treeCpuUs(tollgate.child.pid!) - before) / result.requests);
        return result;
      };
    const loads = {
      proxied: timed('proxied', (seconds) =>
        wrk({ url: `http://127.0.0.1:${port}/bench/item?id=42`, seconds, headers: { 'x-api-key': secret } }),
      ),
      forwardAuth: timed('forwardAuth', (seconds) =>
        wrk({
          url: `http://127.0.0.1:${extauthPort}/auth`,
          seconds,
          headers: { 'x-api-key': secret, 'x-forwarded-uri': '/bench/item?id=42' },
        }),
      ),
    };
    const rounds = await alternatingRounds(loads);
    // Every answer is a 200 on a plan that never refuses: anything else is shown, never hidden.
    const faults = [...rounds].map(([id, rs]) => {
      const non2xx = rs.reduce((n, r) => n + r.non2xx, 0);
      const socketErrors = rs.reduce((n, r) => n + r.socketErrors, 0);
      return `${id}: ${non2xx} non-2xx, ${socketErrors} socket errors (timeouts included)`;
    });
    sections.push(
      `**${mode === 'embedded' ? 'Embedded (SQLite, in-process counters)' : 'Redis mode (+ Postgres), one process'}**`,
      '',
      ...roundsTable(
        rounds,
        {
          proxied: 'proxied, admitted (200 from the backend)',
          forwardAuth: 'forward auth, admitted (200, no backend call)',
        },
        'proxied',
      ),
      '',
      `Tollgate's CPU µs per request, median of the rounds: proxied ${fmt(median(cpu.proxied.slice(1)), 1)}, forward auth ${fmt(median(cpu.forwardAuth.slice(1)), 1)}.`,
      '',
      `Over all rounds: ${faults.join('; ')}.`,
      '',
    );
    await stopProc(tollgate);
  }
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- extauth\` (wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians; one key on a plan that never refuses).`,
    '',
    machine(),
    '',
    ...sections,
  ].join('\n');
}
