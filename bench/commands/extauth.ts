// `npm run bench -- extauth`: forward auth (EXTAUTH_PORT, docs/guides/external-authorization.md)
// against the proxy, for the same key and plan, in one Tollgate and one run: decisions per second
// (200 with the backend's headers, no backend call) against admitted requests per second (forwarded
// to the backend), in alternating rounds, medians and every round listed; embedded, then Redis mode
// (+ Postgres). The decision is the proxy's own admission, so the difference is the backend hop. A
// third load is the whole path a user of nginx gets: nginx with the guide's configuration asking
// forward auth, then forwarding to the same backend. A fourth is Envoy's gRPC Check
// (EXTAUTH_GRPC_PORT), sent by h2load (Debian's nghttp2-client).
import fs from 'node:fs';
import path from 'node:path';
import { nginxFromGuide } from '../../tests/helpers/gateway-configs.ts';
import { spawn } from 'node:child_process';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { AUTHORIZATION_PROTO, LOADER_OPTIONS } from '../../tests/helpers/envoy-protos.ts';
import { checkRequest } from '../../tests/helpers/envoy-messages.ts';
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

/** EXTAUTH_PORT and EXTAUTH_GRPC_PORT beside each Tollgate's own ports. */
const EXTAUTH_OFFSET = 200;
const GRPC_OFFSET = 201;

/**
 * Envoy's Check for `GET /bench/item?id=42` with `secret`, as h2load posts it: the CheckRequest of
 * tests/helpers/envoy-messages.ts, serialised from Envoy's protos (tests/helpers/envoy-protos.ts) in a
 * gRPC frame (no compression, 4-byte length).
 */
function checkFrame(secret: string): string {
  const definitions = loadSync([AUTHORIZATION_PROTO], LOADER_OPTIONS);
  const check = (definitions['envoy.service.auth.v3.Authorization'] as ServiceDefinition).Check!;
  const message = check.requestSerialize(checkRequest('/bench/item?id=42', { 'x-api-key': secret }));
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  const file = path.join(run.workDir, 'check-request.bin');
  fs.writeFileSync(file, frame);
  return file;
}

/**
 * Check calls for `seconds` by h2load (nghttp2's load generator, in C, as wrk is for HTTP/1.1): 2
 * connections of 25 streams each, gRPC over h2c. A call gRPC or HTTP/2 failed is counted as non-2xx.
 */
function grpcChecks(address: string, frame: string, seconds: number): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const args = ['-D', String(seconds), '-c', '2', '-m', '25', '-t', String(THREADS), '-d', frame];
    // Envoy's ext_authz sends its `timeout` (default 200 ms) as every call's deadline.
    args.push('-H', 'content-type: application/grpc', '-H', 'te: trailers', '-H', 'grpc-timeout: 200m');
    args.push(`http://${address}/envoy.service.auth.v3.Authorization/Check`);
    const child = spawn('h2load', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => {
      const done = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded/.exec(out);
      const mean = /time for request:\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)/.exec(out);
      if (code !== 0 || done === null) return reject(new Error(`h2load exited ${code}:\n${out}`));
      const requests = Number(done[1]);
      const meanMs = mean === null ? NaN : Number(mean[1]) * ({ us: 0.001, ms: 1, s: 1000 }[mean[2]!] ?? NaN);
      resolve({
        rps: requests / seconds,
        requests,
        p50: meanMs,
        p99: NaN,
        non2xx: requests - Number(done[2]),
        socketErrors: 0,
      });
    });
  });
}

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
  ensureTools(['wrk', 'h2load']);
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
      extraEnv: { EXTAUTH_PORT: String(extauthPort), EXTAUTH_GRPC_PORT: String(port + GRPC_OFFSET) },
    });
    await ensurePlan(port);
    const secret = await createKey(port, `extauth-bench-${mode}`);
    const frame = checkFrame(secret);
    const nginx = await startGuideNginx(mode, extauthPort);
    // Tollgate's CPU time per request of each run (warm-up first): steadier than req/s on a shared machine.
    const cpu = {
      proxied: [] as number[],
      forwardAuth: [] as number[],
      grpcCheck: [] as number[],
      nginx: [] as number[],
    };
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
      grpcCheck: timed('grpcCheck', (seconds) =>
        grpcChecks(`127.0.0.1:${port + GRPC_OFFSET}`, frame, seconds),
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
          grpcCheck: "Envoy's gRPC Check, admitted (OK, no backend call; h2load, p99 column: mean)",
          nginx: "nginx (the guide's configuration) asking forward auth, then the backend",
        },
        'proxied',
      ),
      '',
      `Tollgate's CPU µs per request, median of the rounds (nginx's own not counted): proxied ${fmt(median(cpu.proxied.slice(1)), 1)}, forward auth ${fmt(median(cpu.forwardAuth.slice(1)), 1)}, gRPC Check ${fmt(median(cpu.grpcCheck.slice(1)), 1)}, behind nginx ${fmt(median(cpu.nginx.slice(1)), 1)}.`,
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
