import pino from 'pino';
import { Metrics } from '../../src/ops/metrics.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { MAX_ENDPOINT_LENGTH, OTHER_ENDPOINT, type UsageBatch, type UsageSink } from '../../src/usage/usage.js';
import { pendingTotal } from '../helpers/pending.js';

/** The sink port is small enough to implement here: it keeps what it is given, or refuses on demand. */
class MemorySink implements UsageSink {
  readonly written: UsageBatch[] = [];
  failing = false;
  write(batch: UsageBatch): Promise<void> {
    if (this.failing) return Promise.reject(new Error('store down'));
    this.written.push(batch);
    return Promise.resolve();
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

  it('keeps a batch the store refused, shows it as pending, and writes it with the next flush', async () => {
    const sink = new MemorySink();
    const recorder = new UsageRecorder(sink, silent, new Metrics());
    recorder.record('k', '/a', undefined, true, 1);
    sink.failing = true;
    await recorder.flush();
    recorder.record('k', '/a', undefined, true, 1);
    expect((await pendingTotal(recorder, 'k'))?.endpoints.get('/a')?.requests).toBe(2);
    sink.failing = false;
    await recorder.stop();
    expect(sink.written).toHaveLength(1);
    expect(sink.written[0]!.get('k')!.endpoints.get('/a')?.requests).toBe(2);
    expect(await pendingTotal(recorder, 'k')).toBeUndefined();
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
});
