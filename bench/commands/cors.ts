// `npm run bench -- cors`: a CORS preflight costs at most what a refused request costs. One embedded
// Tollgate whose catch-all has a CORS policy (CORS_ALLOWED_ORIGINS): req/s and p99 of preflights
// (answered by Tollgate itself, docs/guides/browser.md) against requests without a key (401), in
// alternating rounds. Neither reaches the backend.
import path from 'node:path';
import { DURATION, PORT, ROOT, ROUNDS, THREADS, CONNECTIONS, WARMUP, log } from '../lib/config.ts';
import { fmt, machine, median, ratio } from '../lib/report.ts';
import { buildTollgate, ensureTools, startBackend, startTollgate } from '../lib/services.ts';
import { wrk, type WrkResult } from '../lib/wrk.ts';

const PREFLIGHT_SCRIPT = path.join(ROOT, 'bench/preflight.lua');

export async function cors(): Promise<string> {
  ensureTools(['wrk']);
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  await startBackend();
  const port = PORT.tollgateEmbedded;
  await startTollgate({
    name: 'cors',
    port,
    mode: 'embedded',
    extraEnv: { CORS_ALLOWED_ORIGINS: 'https://app.example.com' },
  });
  const url = `http://127.0.0.1:${port}/bench/item?id=42`;
  const loads = {
    preflight: (seconds: number) => wrk({ url, seconds, script: PREFLIGHT_SCRIPT }),
    unauthorized: (seconds: number) => wrk({ url, seconds }),
  };
  const ids = Object.keys(loads) as (keyof typeof loads)[];
  const rounds = new Map<string, WrkResult[]>(ids.map((id) => [id, []]));
  for (const id of ids) await loads[id](WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    for (const id of round % 2 === 0 ? ids : [...ids].reverse()) {
      const r = await loads[id](DURATION);
      rounds.get(id)!.push(r);
      log(`round ${round + 1}/${ROUNDS} ${id}: ${fmt(r.rps)} req/s`);
    }
  }
  const base = median(rounds.get('unauthorized')!.map((r) => r.rps));
  const label = { preflight: 'preflight (204, answered by Tollgate)', unauthorized: 'no key (401)' };
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- cors\` (${machine()}; embedded, wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians).`,
    '',
    machine(),
    '',
    '| request | req/s | ÷ 401 | p99 ms | req/s per round |',
    '|---|--:|--:|--:|---|',
    ...ids.map((id) => {
      const rs = rounds.get(id)!;
      const rps = median(rs.map((r) => r.rps));
      return `| ${label[id]} | ${fmt(rps)} | ${ratio(rps, base)} | ${fmt(median(rs.map((r) => r.p99)), 2)} | ${rs.map((r) => fmt(r.rps)).join(' / ')} |`;
    }),
  ].join('\n');
}
