// `npm run bench -- cors`: a CORS preflight costs at most what a refused request costs. One embedded
// Tollgate whose catch-all has a CORS policy (CORS_ALLOWED_ORIGINS): req/s and p99 of preflights
// (answered by Tollgate itself, docs/guides/browser.md) against requests without a key (401), in
// alternating rounds. Neither reaches the backend.
import path from 'node:path';
import { alternatingRounds, roundsTable } from '../lib/alternating-rounds.ts';
import { DURATION, PORT, ROOT, ROUNDS, THREADS, CONNECTIONS } from '../lib/config.ts';
import { machine } from '../lib/report.ts';
import { buildTollgate, ensureTools, startBackend, startTollgate } from '../lib/services.ts';
import { wrk } from '../lib/wrk.ts';

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
  const rounds = await alternatingRounds(loads);
  const label = { preflight: 'preflight (204, answered by Tollgate)', unauthorized: 'no key (401)' };
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- cors\` (${machine()}; embedded, wrk -t${THREADS} -c${CONNECTIONS}, ${ROUNDS} alternating rounds × ${DURATION} s, medians).`,
    '',
    machine(),
    '',
    ...roundsTable(rounds, label, 'unauthorized'),
  ].join('\n');
}
