import pino from 'pino';
import { Metrics } from '../../src/ops/metrics.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { undatedUsage } from '../../src/usage/undated-usage.js';
import {
  MAX_ENDPOINT_LENGTH,
  NO_ROUTE_ID,
  OTHER_ENDPOINT,
  emptyBucket,
  emptyDay,
  requestsIn,
  type UsageBatch,
  type UsageSink,
} from '../../src/usage/usage.js';
import { binOf } from '../../src/usage/latency-histogram.js';
import { pendingTotal } from '../helpers/pending.js';
import { refused, requestFacts } from '../helpers/request-facts.js';

/**
 * The sink port is small enough to implement here: it keeps what it is given, or refuses on demand
 * and then holds what it was handed, to write it on the next call.
 */
class MemorySink implements UsageSink {
  readonly written: UsageBatch[] = [];
  readonly held: UsageBatch[] = [];
  failing = false;
  write(batch: UsageBatch): Promise<void> {
    if (batch.size > 0) this.held.push(batch);
    if (this.failing) return Promise.reject(new Error('store down'));
    this.written.push(...this.held.splice(0));
    return Promise.resolve();
  }
  heldRequests(): number {
    return requestsIn(new Map(this.held.flatMap((b) => [...b])));
  }
}

const silent = pino({ level: 'silent' });

describe('UsageRecorder', () => {
  it('aggregates per key, endpoint and customer, and writes each request once', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record(requestFacts('k1', { endpoint: '/a', customerId: 'acme', durationMs: 10 }));
    recorder.record(
      requestFacts('k1', { endpoint: '/a', status: 502, outcome: 'backendUnreachable', durationMs: 30 }),
    );
    recorder.record(requestFacts('k2', { endpoint: '/b', customerId: 'acme', durationMs: 5 }));
    await recorder.flush();
    await recorder.flush();
    expect(sink.written).toHaveLength(1);
    const k1 = sink.written[0]!.get('k1')!;
    expect(k1.endpoints.get('/a')).toEqual({
      requests: 2,
      successful: 1,
      failed: 1,
      totalDurationMs: 40,
      cost: 2,
    });
    expect(k1.customers.get('acme')).toEqual({ requests: 1, successful: 1, failed: 0 });
    expect(sink.written[0]!.get('k2')!.endpoints.get('/b')?.requests).toBe(1);
  });

  it('hands a refused batch to the sink once, which writes it with the next flush, each request once', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record(requestFacts('k', { endpoint: '/a' }));
    sink.failing = true;
    await recorder.flush();
    recorder.record(requestFacts('k', { endpoint: '/a' }));
    // The refused batch is the sink's now; only what came since is the recorder's to show.
    expect((await pendingTotal(recorder, 'k'))?.endpoints.get('/a')?.requests).toBe(1);
    sink.failing = false;
    await recorder.stop();
    expect(sink.written.map((b) => b.get('k')!.endpoints.get('/a')?.requests)).toEqual([1, 1]);
    expect(await pendingTotal(recorder, 'k')).toBeUndefined();
  });

  it('on stop, retries until its deadline, then drops what is left loudly: error log and metric', async () => {
    const sink = new MemorySink();
    const metrics = new Metrics();
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    const recorder = new UsageRecorder(sink, logger, metrics);
    for (let i = 0; i < 7; i++) recorder.record(requestFacts('k', { endpoint: '/a' }));
    sink.failing = true;
    const started = Date.now();
    await recorder.stop(Date.now() + 600);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(sink.written).toEqual([]);
    const dropped = lines.map((l) => JSON.parse(l)).find((l) => l.level === 50);
    expect(dropped).toMatchObject({
      msg: 'usage could not be written before exit and is dropped',
      requests: 7,
    });
    expect(await metrics.registry.getSingleMetricAsString('tollgate_usage_dropped_total')).toMatch(
      /tollgate_usage_dropped_total 7$/m,
    );
  });

  it('bounds what a client controls: path and customer id lengths, distinct paths per key', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record(requestFacts('k', { endpoint: '/' + 'p'.repeat(5000), customerId: 'c'.repeat(500) }));
    for (let i = 0; i < 1005; i++) recorder.record(requestFacts('k', { endpoint: `/many/${i}` }));
    await recorder.flush();
    const usage = sink.written[0]!.get('k')!;
    expect([...usage.endpoints.keys()].every((e) => e.length <= MAX_ENDPOINT_LENGTH)).toBe(true);
    expect([...usage.customers.keys()][0]).toHaveLength(200);
    expect(usage.endpoints.size).toBe(1001);
    expect(usage.endpoints.get(OTHER_ENDPOINT)?.requests).toBe(6);
  });

  it('cuts a customer id at 200 code points, never inside an emoji, and keeps none holding a control character', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    // An emoji is two UTF-16 units and one code point: the 200th here, so it is kept.
    recorder.record(requestFacts('k', { endpoint: '/a', customerId: 'c'.repeat(199) + '🚀' }));
    recorder.record(requestFacts('k', { endpoint: '/a', customerId: 'd'.repeat(199) + '🚀🚀' }));
    recorder.record(requestFacts('k', { endpoint: '/a', customerId: 'nul\u0000inside' }));
    await recorder.flush();
    const usage = sink.written[0]!.get('k')!;
    expect([...usage.customers.keys()]).toEqual(['c'.repeat(199) + '🚀', 'd'.repeat(199) + '🚀']);
    expect([...usage.endpoints.values()][0]!.requests).toBe(3);
  });

  it('counts at most 10,000 customers per key, the rest under "(other)"', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    for (let i = 0; i < 10_050; i++)
      recorder.record(requestFacts('k', { customerId: `customer-${i}`, status: i % 2 === 0 ? 200 : 404 }));
    await recorder.flush();
    const customers = sink.written[0]!.get('k')!.customers;
    expect(customers.size).toBe(10_001);
    expect(customers.get(OTHER_ENDPOINT)).toEqual({ requests: 50, successful: 25, failed: 25 });
    expect([...customers.values()].reduce((n, c) => n + c.requests, 0)).toBe(10_050);
  });

  it('notes the UTC day of each request with its endpoint and customer, under the name the totals count it by', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    const midnight = Date.UTC(2026, 10, 1);
    recorder.record(
      requestFacts('k', { endpoint: '/a', customerId: 'acme', durationMs: 10, atMs: midnight - 1 }),
    );
    recorder.record(
      requestFacts('k', {
        endpoint: '/a',
        customerId: 'acme',
        ...refused('rateLimited'),
        durationMs: 30,
        atMs: midnight,
      }),
    );
    for (let i = 0; i < 1000; i++)
      recorder.record(requestFacts('k', { endpoint: `/p/${i}`, atMs: midnight + i }));
    await recorder.flush();
    const k = sink.written[0]!.get('k')!;
    expect([...k.days.keys()]).toEqual([midnight - 86_400_000, midnight]);
    const admitted = {
      ...emptyBucket(),
      requests: 1,
      successful: 1,
      totalDurationMs: 10,
      cost: 1,
      status2xx: 1,
      latency: new Map([[binOf(10), 1]]),
    };
    expect(k.days.get(midnight - 86_400_000)).toEqual({
      endpoints: new Map([['/a', admitted]]),
      customers: new Map([['acme', admitted]]),
      routes: new Map([[NO_ROUTE_ID, admitted]]),
    });
    const november = k.days.get(midnight)!;
    const limited = {
      ...emptyBucket(),
      requests: 1,
      failed: 1,
      rateLimited: 1,
      totalDurationMs: 30,
      status4xx: 1,
      latency: new Map([[binOf(30), 1]]),
    };
    expect(november.endpoints.get('/a')).toEqual(limited);
    expect(november.customers.get('acme')).toEqual(limited);
    // The 1,001st path counts under "(other)" in the totals, and in its day alike.
    expect(november.endpoints.has('/p/999')).toBe(false);
    expect(november.endpoints.get(OTHER_ENDPOINT)).toMatchObject({ requests: 1 });
    expect(k.endpoints.get(OTHER_ENDPOINT)).toMatchObject({ requests: 1 });
    // Every request is dated: the days add up to the totals, name by name.
    expect(undatedUsage(k)).toEqual(emptyDay());
  });

  it("notes each request's route in its day (the catch-all under an empty id), at most 1,000 a day, in each consumer's part too", async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    const noon = Date.UTC(2026, 10, 1, 12);
    recorder.record(requestFacts('k', { routeId: 'search', cost: 5, atMs: noon }));
    recorder.record(requestFacts('k', { routeId: 'search', cost: 5, consumerId: 'con_1', atMs: noon }));
    recorder.record(requestFacts('k', { routeId: null, ...refused('rateLimited'), atMs: noon }));
    for (let i = 0; i < 1_000; i++) recorder.record(requestFacts('k', { routeId: `r${i}`, atMs: noon + 1 }));
    await recorder.flush();
    const k = sink.written[0]!.get('k')!;
    const routes = k.days.get(Date.UTC(2026, 10, 1))!.routes;
    expect(routes.get('search')).toMatchObject({ requests: 2, successful: 2, cost: 10 });
    expect(routes.get(NO_ROUTE_ID)).toMatchObject({ requests: 1, failed: 1, rateLimited: 1, cost: 0 });
    // 1,000 routes a day: search, the catch-all and 998 more; the last two fold into "(other)".
    expect(routes.size).toBe(1_001);
    expect(routes.has('r997')).toBe(true);
    expect(routes.has('r998')).toBe(false);
    expect(routes.get(OTHER_ENDPOINT)).toMatchObject({ requests: 2 });
    expect([...routes.values()].reduce((n, r) => n + r.requests, 0)).toBe(1_003);
    // The consumer's part holds its own request's route.
    expect([...k.consumers.get('con_1')!.days.get(Date.UTC(2026, 10, 1))!.routes]).toEqual([
      ['search', expect.objectContaining({ requests: 1, cost: 5 })],
    ]);
  });

  it('counts each fact of a request in its minute: cost, status class, outcome and latency', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    const at = Date.UTC(2026, 10, 1, 12, 30, 5);
    const facts = [
      requestFacts('k', { status: 200, durationMs: 12, atMs: at }),
      requestFacts('k', { status: 304, durationMs: 3, atMs: at }),
      requestFacts('k', { status: 404, durationMs: 7, atMs: at }),
      requestFacts('k', { status: 503, outcome: 'backendError', durationMs: 40, atMs: at }),
      requestFacts('k', { status: 504, outcome: 'backendUnreachable', durationMs: 1_000, atMs: at }),
      requestFacts('k', { ...refused('rateLimited'), durationMs: 0.2, atMs: at }),
      requestFacts('k', { ...refused('disabled'), durationMs: 0.1, atMs: at }),
      requestFacts('k', { ...refused('expired'), durationMs: 0.1, atMs: at }),
      requestFacts('k', { status: 101, durationMs: 5, atMs: at }),
      requestFacts('k', { status: 499, durationMs: 2, atMs: at }),
    ];
    for (const f of facts) recorder.record(f);
    await recorder.flush();
    const minute = sink.written[0]!.get('k')!.minutes.get(Date.UTC(2026, 10, 1, 12, 30))!;
    expect(minute).toMatchObject({
      requests: 10,
      successful: 3,
      failed: 7,
      cost: 7,
      status2xx: 2,
      status3xx: 1,
      status4xx: 5,
      status5xx: 2,
      rateLimited: 1,
      disabled: 1,
      expired: 1,
      backendError: 1,
      backendUnreachable: 1,
      creditsExhausted: 0,
      concurrencyLimited: 0,
      routeNotAllowed: 0,
      originNotAllowed: 0,
      addressNotAllowed: 0,
    });
    expect([...minute.latency.values()].reduce((a, b) => a + b, 0)).toBe(10);
    expect(minute.latency.get(binOf(1_000))).toBe(1);
  });

  it("files a request under the key's consumer at the time too, the key's whole keeping everything", async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record(requestFacts('k', { endpoint: '/a', customerId: 'acme', consumerId: 'con_a' }));
    recorder.record(requestFacts('k', { endpoint: '/a', consumerId: 'con_b' }));
    recorder.record(requestFacts('k', { endpoint: '/b', consumerId: 'con_b' }));
    recorder.record(requestFacts('k', { endpoint: '/c' }));
    await recorder.flush();
    const k = sink.written[0]!.get('k')!;
    expect(requestsIn(new Map([['k', k]]))).toBe(4);
    expect([...k.consumers.keys()]).toEqual(['con_a', 'con_b']);
    expect(k.consumers.get('con_a')!.endpoints.get('/a')?.requests).toBe(1);
    expect(k.consumers.get('con_a')!.customers.get('acme')?.requests).toBe(1);
    expect([...k.consumers.get('con_b')!.endpoints].map(([e, u]) => [e, u.requests])).toEqual([
      ['/a', 1],
      ['/b', 1],
    ]);
    expect([...k.consumers.get('con_b')!.minutes.values()][0]?.requests).toBe(2);
  });
});
