// `npm run bench -- extauth`: forward auth (EXTAUTH_PORT, docs/guides/external-authorization.md)
// against the proxy, for the same key and plan, in one Tollgate and one run: decisions per second
// (200 with the backend's headers, no backend call) against admitted requests per second (forwarded
// to the backend), in alternating rounds, medians and every round listed; embedded, then Redis mode
// (+ Postgres). The decision is the proxy's own admission, so the difference is the backend hop.
import { CONNECTIONS, DURATION, PORT, ROUNDS, THREADS, run } from '../lib/config.ts';
import { alternatingRounds, roundsTable } from '../lib/alternating-rounds.ts';
import { machine } from '../lib/report.ts';
import { stopProc } from '../lib/processes.ts';
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
import { wrk } from '../lib/wrk.ts';

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
    const loads = {
      proxied: (seconds: number) =>
        wrk({ url: `http://127.0.0.1:${port}/bench/item?id=42`, seconds, headers: { 'x-api-key': secret } }),
      forwardAuth: (seconds: number) =>
        wrk({
          url: `http://127.0.0.1:${extauthPort}/auth`,
          seconds,
          headers: { 'x-api-key': secret, 'x-forwarded-uri': '/bench/item?id=42' },
        }),
    };
    const rounds = await alternatingRounds(loads);
    const problems = [...rounds.values()].flat().filter((r) => r.non2xx > 0 || r.socketErrors > 0);
    if (problems.length > 0) throw new Error(`${mode}: answers other than 2xx, or socket errors, in a round`);
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
