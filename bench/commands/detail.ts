// `npm run bench -- detail`: the key detail of a key at both usage caps (1,000 endpoints and 10,000
// customers, the rest under "(other)"), over HTTP in Redis mode: its size and how long it takes. Twice:
// with short names, and with the longest a client can send (paths cut at 512 characters, customer ids
// at 200), made of `"` and `\`, which JSON writes in two bytes each: the largest the detail can be.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { PORT, ROOT_TOKEN, log } from '../lib/config.ts';
import { fmt, machine, median } from '../lib/report.ts';
import {
  buildTollgate,
  ensurePlan,
  ensureTools,
  freshDatabase,
  management,
  runRedis,
  startBackend,
  startTollgate,
} from '../lib/services.ts';

const ENDPOINTS = 1_050;
const CUSTOMERS = 10_500;
const READS = 30;
/** The recorder's caps on what a client sends (src/usage/usage.ts). */
const LONGEST_PATH = 512;
const LONGEST_CUSTOMER_ID = 200;

interface Names {
  readonly label: string;
  path(i: number): string;
  customer(i: number): string;
}

const SHORT: Names = { label: 'short names', path: (i) => `/v1/caps/${i}`, customer: (i) => `customer-${i}` };
const LONGEST: Names = {
  label: `longest names (${LONGEST_PATH}-character paths, ${LONGEST_CUSTOMER_ID}-character customer ids, all escaped in JSON)`,
  path: (i) => `/${i}/`.padEnd(LONGEST_PATH, '"\\'),
  customer: (i) => `${i}:`.padEnd(LONGEST_CUSTOMER_ID, '"\\'),
};

// node:http sends a path as given (fetch would percent-encode the quotes), on kept-alive connections.
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

function proxied(port: number, path: string, secret: string, customer: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, agent, headers: { 'x-api-key': secret, 'x-customer-id': customer } },
      (res) => {
        res.resume();
        res.on('end', () => resolve());
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Sends the traffic that fills both caps, then reads the detail: one table row. */
async function measure(port: number, names: Names): Promise<string> {
  const key = await management(port, '/consumer-api-key/create', { name: `at-the-caps (${names.label})` });
  log(`${CUSTOMERS} requests over ${ENDPOINTS} paths, each with its own customer id: ${names.label}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < CUSTOMERS) {
        const i = next++;
        await proxied(port, names.path(i % ENDPOINTS), String(key.secret), names.customer(i));
      }
    }),
  );
  await sleep(3_000); // flushed into Postgres
  const ms: number[] = [];
  let bytes = 0;
  let shape = '';
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/consumer-api-key/${String(key.id)}`, {
      headers: { authorization: `Bearer ${ROOT_TOKEN}` },
    });
    const body = await res.text();
    ms.push(performance.now() - started);
    bytes = Buffer.byteLength(body);
    const usage = (
      JSON.parse(body) as {
        usage: {
          totalRequests: number;
          endpoints: unknown[];
          usageByCustomer: unknown[];
          usageByCustomerNotListed?: { customers: number };
        };
      }
    ).usage;
    shape = `${fmt(usage.totalRequests)} requests, ${fmt(usage.endpoints.length)} endpoint entries, ${fmt(usage.usageByCustomer.length)} customers listed + ${fmt(usage.usageByCustomerNotListed?.customers ?? 0)} summed`;
  }
  ms.sort((a, b) => a - b);
  return `| ${names.label} | ${shape} | ${fmt(bytes / 1024 / 1024, 2)} MB | ${fmt(median(ms), 1)} ms | ${fmt(ms[Math.floor(ms.length * 0.95)]!, 1)} ms | ${fmt(ms.at(-1)!, 1)} ms |`;
}

export async function detail(): Promise<string> {
  ensureTools();
  if (!buildTollgate()) return 'Tollgate could not be built: nothing measured.';
  await runRedis();
  await startBackend();
  const port = PORT.tollgateRedis;
  await startTollgate({ name: 'tollgate-detail', port, mode: 'redis', databaseUrl: await freshDatabase() });
  await ensurePlan(port);
  const rows = [await measure(port, SHORT), await measure(port, LONGEST)];
  agent.destroy();
  return [
    `Latest run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run bench -- detail\` (Tollgate Redis mode + Postgres, one process; ${READS} reads of GET /consumer-api-key/{id} after ${fmt(CUSTOMERS)} requests over ${fmt(ENDPOINTS)} paths with a customer id each).`,
    '',
    machine(),
    '',
    '| names | key detail at both caps | body | median | p95 | max |',
    '|---|---|--:|--:|--:|--:|',
    ...rows,
  ].join('\n');
}
