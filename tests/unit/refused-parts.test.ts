/**
 * A refused usage batch cut into parts (decision record 0207): the parts add up to the batch, so
 * applying each once counts every request once, and each customer's rows, in the whole and in each
 * consumer's part, are in one part of their own, apart from the key's counts.
 */
import pino from 'pino';
import { Metrics } from '../../src/ops/metrics.js';
import { mergeKeyUsage } from '../../src/usage/merge-usage.js';
import { UsageRecorder } from '../../src/usage/recorder.js';
import { partsOf, requestsHeldIn } from '../../src/usage/refused-parts.js';
import { emptyKeyUsage, entryOf, type UsageBatch, type UsageSink } from '../../src/usage/usage.js';
import { refused, requestFacts } from '../helpers/request-facts.js';

/** A batch as the recorder hands it over: what `record` adds up. */
async function recorded(record: (recorder: UsageRecorder) => void): Promise<UsageBatch> {
  const batches: UsageBatch[] = [];
  const sink: UsageSink = {
    write: (batch) => {
      batches.push(batch);
      return Promise.resolve();
    },
    heldRequests: () => 0,
  };
  const recorder = new UsageRecorder(sink, pino({ level: 'silent' }), new Metrics());
  record(recorder);
  await recorder.flush();
  return batches[0]!;
}

function added(parts: UsageBatch[]): UsageBatch {
  const sum: UsageBatch = new Map();
  for (const part of parts)
    for (const [keyId, usage] of part) mergeKeyUsage(entryOf(sum, keyId, emptyKeyUsage), usage, false);
  return sum;
}

describe('partsOf', () => {
  it('cuts a key into its counts and each customer, in the whole and in each consumer, adding up to it', async () => {
    const batch = await recorded((r) => {
      r.record(requestFacts('k1', { customerId: 'poison', consumerId: 'c1', endpoint: '/a' }));
      r.record(requestFacts('k1', { customerId: 'later', consumerId: 'c1', endpoint: '/b' }));
      r.record(requestFacts('k1', { customerId: 'later', endpoint: '/a', atMs: Date.now() - 86_400_000 }));
      r.record(
        requestFacts('k1', {
          ...refused('rateLimited'),
          endpoint: '/c',
          failure: { requestId: 'r1', method: 'GET', code: 'rate_limited', limit: null, clientAddress: null },
        }),
      );
    });
    const parts = partsOf(batch);
    expect(parts).toHaveLength(3);
    expect(added(parts)).toEqual(batch);

    const [counts, poison, later] = parts.map((p) => p.get('k1')!);
    expect([...counts!.customers.keys()]).toEqual([]);
    expect([...counts!.endpoints.keys()].sort()).toEqual(['/a', '/b', '/c']);
    expect(counts!.failures?.entries).toHaveLength(1);
    expect([...poison!.customers.keys()]).toEqual(['poison']);
    expect([...poison!.consumers.get('c1')!.customers.keys()]).toEqual(['poison']);
    expect([...later!.customers.keys()]).toEqual(['later']);
    expect([...later!.days.values()].map((d) => [...d.customers.keys()])).toEqual([['later'], ['later']]);
    for (const part of [poison, later]) expect([part!.endpoints.size, part!.minutes.size]).toEqual([0, 0]);
    // A customer's part is held by its customer's requests, and comes back alone when refused again.
    expect(parts.map(requestsHeldIn)).toEqual([4, 1, 2]);
    expect(partsOf(parts[1]!)).toEqual([parts[1]]);
    expect(partsOf(parts[0]!)).toEqual([parts[0]]);
  });

  it('cuts a batch of several keys into one batch a key', async () => {
    const batch = await recorded((r) => {
      r.record(requestFacts('k1', { customerId: 'a' }));
      r.record(requestFacts('k2', { customerId: 'a' }));
    });
    const parts = partsOf(batch);
    expect(parts.map((p) => [...p.keys()])).toEqual([['k1'], ['k2']]);
    expect(added(parts)).toEqual(batch);
  });
});
