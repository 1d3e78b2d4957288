// `npm run bench -- extauth`: forward auth (EXTAUTH_PORT, docs/guides/external-authorization.md)
// against the proxy, for the same key and plan, in one Tollgate and one run: decisions per second
// (200 with the backend's headers, no backend call) against admitted requests per second (forwarded
// to the backend), in alternating rounds, medians and every round listed; embedded, then Redis mode
// (+ Postgres). The decision is the proxy's own admission, so the difference is the backend hop. A
// third load is the whole path a user of nginx gets: nginx with the guide's configuration asking
// forward auth, then forwarding to the same backend.
import fs from 'node:fs';
import path from 'node:path';
import { nginxFromGuide } from '../../tests/helpers/gateway-configs.ts';
import { BACKEND_URL, CONNECTIONS, DURATION, PORT, ROUNDS, THREADS, run } from '../lib/config.ts';
import { alternatingRounds, roundsTable } from '../lib/alternating-rounds.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { startProc, stopProc, treeCpuUs, waitFor } from '../lib/processes.ts';
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

/** nginx with the guide's configuration (tests/helpers/gateway-configs.ts), asking Tollgate at `extauthPort`. */
async function startGuideNginx(mode: string, extauthPort: number) {
  const dir = path.join(run.workDir, `nginx-extauth-${mode}`);
  fs.mkdirSync(dir, { recursive: true });
  const [command, ...args] = nginxFromGuide(dir, {
    port: PORT.nginx,
    tollgate: `127.0.0.1:${extauthPort}`,
    backend: BACKEND_URL.replace('http://', ''),
  });
  const proc = startProc(`nginx-extauth-${mode}`, command!, args);
  // Without a key nginx answers Tollgate's 401: up once it answers at all.
  await waitFor(proc, 'nginx', async () => (await fetch(`http://127.0.0.1:${PORT.nginx}/`)).status === 401);
  return proc;
}

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
    const nginx = await startGuideNginx(mode, extauthPort);
    // Tollgate's CPU time per request of each run (warm-up first): steadier than req/s on a shared machine.
    const cpu = { proxied: [] as number[], forwardAuth: [] as number[], nginx: [] as number[] };
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
      nginx: timed('nginx', (seconds) =>
        wrk({
          url: `http://127.0.0.1:${PORT.nginx}/bench/item?id=42`,
          seconds,
          headers: { 'x-api-key': secret },
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
          nginx: "nginx (the guide's configuration) asking forward auth, then the backend",
        },
        'proxied',
      ),
      '',
      `Tollgate's CPU µs per request, median of the rounds (nginx's own not counted): proxied ${fmt(median(cpu.proxied.slice(1)), 1)}, forward auth ${fmt(median(cpu.forwardAuth.slice(1)), 1)}, behind nginx ${fmt(median(cpu.nginx.slice(1)), 1)}.`,
      '',
      `Over all rounds: ${faults.join('; ')}.`,
      '',
    );
    await stopProc(nginx);
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
