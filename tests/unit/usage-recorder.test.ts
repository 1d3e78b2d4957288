import pino from 'pino';
import { Metrics } from '../../src/ops/metrics.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { MAX_ENDPOINT_LENGTH, OTHER_ENDPOINT, requestsIn, undatedUsage, type UsageBatch, type UsageSink } from '../../src/usage/usage.js';
import { pendingTotal } from '../helpers/pending.js';

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
    recorder.record('k1', '/a', 'acme', true, 10);
    recorder.record('k1', '/a', undefined, false, 30);
    recorder.record('k2', '/b', 'acme', true, 5);
    await recorder.flush();
    await recorder.flush();
    expect(sink.written).toHaveLength(1);
    const k1 = sink.written[0]!.get('k1')!;
    expect(k1.endpoints.get('/a')).toEqual({ requests: 2, successful: 1, failed: 1, totalDurationMs: 40 });
    expect(k1.customers.get('acme')).toEqual({ requests: 1, successful: 1, failed: 0 });
    expect(sink.written[0]!.get('k2')!.endpoints.get('/b')?.requests).toBe(1);
  });

  it('hands a refused batch to the sink once, which writes it with the next flush, each request once', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record('k', '/a', undefined, true, 1);
    sink.failing = true;
    await recorder.flush();
    recorder.record('k', '/a', undefined, true, 1);
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
    for (let i = 0; i < 7; i++) recorder.record('k', '/a', undefined, true, 1);
    sink.failing = true;
    const started = Date.now();
    await recorder.stop(Date.now() + 600);
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(sink.written).toEqual([]);
    const dropped = lines.map((l) => JSON.parse(l)).find((l) => l.level === 50);
    expect(dropped).toMatchObject({ msg: 'usage could not be written before exit and is dropped', requests: 7 });
    expect(await metrics.registry.getSingleMetricAsString('tollgate_usage_dropped_total')).toMatch(/tollgate_usage_dropped_total 7$/m);
  });

  it('bounds what a client controls: path and customer id lengths, distinct paths per key', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record('k', '/' + 'p'.repeat(5000), 'c'.repeat(500), true, 1);
    for (let i = 0; i < 1005; i++) recorder.record('k', `/many/${i}`, undefined, true, 1);
    await recorder.flush();
    const usage = sink.written[0]!.get('k')!;
    expect([...usage.endpoints.keys()].every((e) => e.length <= MAX_ENDPOINT_LENGTH)).toBe(true);
    expect([...usage.customers.keys()][0]).toHaveLength(200);
    expect(usage.endpoints.size).toBe(1001);
    expect(usage.endpoints.get(OTHER_ENDPOINT)?.requests).toBe(6);
  });

  it('counts at most 10,000 customers per key, the rest under "(other)"', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    for (let i = 0; i < 10_050; i++) recorder.record('k', '/a', `customer-${i}`, i % 2 === 0, 1);
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
    recorder.record('k', '/a', 'acme', true, 10, false, midnight - 1);
    recorder.record('k', '/a', 'acme', false, 30, true, midnight);
    for (let i = 0; i < 1000; i++) recorder.record('k', `/p/${i}`, undefined, true, 1, false, midnight + i);
    await recorder.flush();
    const k = sink.written[0]!.get('k')!;
    expect([...k.days.keys()]).toEqual([midnight - 86_400_000, midnight]);
    expect(k.days.get(midnight - 86_400_000)).toEqual({
      endpoints: new Map([['/a', { requests: 1, successful: 1, failed: 0, rateLimited: 0, totalDurationMs: 10 }]]),
      customers: new Map([['acme', { requests: 1, successful: 1, failed: 0, rateLimited: 0, totalDurationMs: 10 }]]),
    });
    const november = k.days.get(midnight)!;
    expect(november.endpoints.get('/a')).toEqual({ requests: 1, successful: 0, failed: 1, rateLimited: 1, totalDurationMs: 30 });
    expect(november.customers.get('acme')).toEqual({ requests: 1, successful: 0, failed: 1, rateLimited: 1, totalDurationMs: 30 });
    // The 1,001st path counts under "(other)" in the totals, and in its day alike.
    expect(november.endpoints.has('/p/999')).toBe(false);
    expect(november.endpoints.get(OTHER_ENDPOINT)).toMatchObject({ requests: 1 });
    expect(k.endpoints.get(OTHER_ENDPOINT)).toMatchObject({ requests: 1 });
    // Every request is dated: the days add up to the totals, name by name.
    expect(undatedUsage(k)).toEqual({ endpoints: new Map(), customers: new Map() });
  });
});
