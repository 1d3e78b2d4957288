// `npm run bench -- detail`: the key detail of a key at both usage caps (1,000 endpoints and 10,000
// customers, the rest under "(other)"), over HTTP in Redis mode: its size and how long it takes.
import { setTimeout as sleep } from 'node:timers/promises';
import { PORT, ROOT_TOKEN, log } from '../lib/config.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate, ensurePlan, ensureTools, freshDatabase, management, runRedis, startBackend, startTollgate } from '../lib/services.ts';

const ENDPOINTS = 1_050;
const CUSTOMERS = 10_500;
const READS = 30;

export async function detail(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) return 'Tollgate could not be built: nothing measured.';
  await runRedis();
  await startBackend();
  const port = PORT.tollgateRedis;
  await startTollgate({ name: 'tollgate-detail', port, mode: 'redis', databaseUrl: await freshDatabase() });
  await ensurePlan(port);
  const key = await management(port, '/consumer-api-key/create', { name: 'at-the-caps' });
  log(`${CUSTOMERS} requests over ${ENDPOINTS} paths, each with its own customer id`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < CUSTOMERS) {
        const i = next++;
        const res = await fetch(`http://127.0.0.1:${port}/v1/caps/${i % ENDPOINTS}`, { headers: { 'x-api-key': String(key.secret), 'x-customer-id': `customer-${i}` } });
        await res.arrayBuffer();
      }
    }),
  );
  await sleep(3_000); // flushed into Postgres
  const ms: number[] = [];
  let bytes = 0;
  let shape = '';
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/consumer-api-key/${String(key.id)}`, { headers: { authorization: `Bearer ${ROOT_TOKEN}` } });
    const body = await res.text();
    ms.push(performance.now() - started);
    bytes = Buffer.byteLength(body);
    const usage = (JSON.parse(body) as { usage: { totalRequests: number; endpoints: unknown[]; usageByCustomer: unknown[] } }).usage;
    shape = `${fmt(usage.totalRequests)} requests, ${fmt(usage.endpoints.length)} endpoint entries, ${fmt(usage.usageByCustomer.length)} customer entries`;
  }
  ms.sort((a, b) => a - b);
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- detail\` (Tollgate Redis mode + Postgres, one process; ${READS} reads of GET /consumer-api-key/{id} after ${fmt(CUSTOMERS)} requests over ${fmt(ENDPOINTS)} paths with a customer id each).`,
    '',
    machine(),
    '',
    '| key detail at both caps | body | median | p95 | max |',
    '|---|--:|--:|--:|--:|',
    `| ${shape} | ${fmt(bytes / 1024 / 1024, 2)} MB | ${fmt(median(ms), 1)} ms | ${fmt(ms[Math.floor(ms.length * 0.95)]!, 1)} ms | ${fmt(ms.at(-1)!, 1)} ms |`,
  ].join('\n');
}
