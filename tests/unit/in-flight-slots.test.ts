/**
 * The proxy's usage-priced requests in flight (src/reservations/in-flight.ts) are held in slots that
 * the next request takes again once one ends or is written: a request whose slot another took since is
 * still told apart from it when it ends.
 */
import { InFlight } from '../../src/reservations/in-flight.js';
import type { Held } from '../../src/reservations/held.js';
import type { InFlightStore, ReservationRecord } from '../../src/reservations/store.js';
import { createLogger } from '../../src/ops/logger.js';

/** An in-memory store that tells each write as it happens. */
class Recorded implements InFlightStore {
  readonly replica = 'replica-a';
  readonly records = new Map<string, ReservationRecord>();
  private written: (() => void) | undefined;

  nextWrite(): Promise<void> {
    return new Promise((resolve) => (this.written = resolve));
  }

  write(records: readonly ReservationRecord[]): Promise<void> {
    for (const record of records) this.records.set(record.id, record);
    if (records.length > 0) this.written?.();
    return Promise.resolve();
  }

  take(id: string): Promise<ReservationRecord | undefined> {
    const record = this.records.get(id);
    this.records.delete(id);
    return Promise.resolve(record);
  }
}

const held = (reserved: number): Held =>
  ({ reserved, settleMax: 100, usage: { keyId: 'key_1' }, reason: 'replica-gone' }) as unknown as Held;

const request = (receivedAt: number, reserved: number) => ({ receivedAt, held: () => held(reserved) });

let inFlight: InFlight;
afterEach(() => inFlight.stop());

it('writes a request in flight past half a second, and counts it, and the one that took its slot, once each', async () => {
  const store = new Recorded();
  inFlight = new InFlight(store, {
    config: { concurrencyLeaseSeconds: 15 },
    metrics: { requestsInFlightWritten: { set: () => undefined } } as never,
    logger: createLogger('silent'),
    clock: Date.now,
    expired: () => undefined,
  });
  // Arrived a second ago: written at the first turn.
  const long = request(performance.now() - 1_000, 40);
  const longSlot = inFlight.open(long);
  const written = store.nextWrite();
  inFlight.start();
  await written;
  expect([...store.records.values()].map((r) => JSON.parse(r.body).reserved)).toEqual([40]);

  // A request that came after takes the slot the written one left.
  const short = request(performance.now(), 10);
  const shortSlot = inFlight.open(short);
  expect(shortSlot).toBe(longSlot);
  // It ends before it is written: its caller counts it now, and nothing is in the store for it.
  expect(inFlight.close(short, shortSlot)).toBe(true);
  expect(store.records.size).toBe(1);
  // The written one ends: its record is taken back first, so the caller counts it and no sweep can.
  await expect(inFlight.close(long, longSlot)).resolves.toBe(true);
  expect(store.records.size).toBe(0);
});
