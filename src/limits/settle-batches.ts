import type { Settlement } from './redis-settlement.js';

/** The settlements of one turn that charge the same counts and balances, summed. */
interface Due {
  settlement: Settlement;
  readonly settled: (() => void)[];
  readonly failed: ((err: unknown) => void)[];
}

/**
 * The settlements of one turn sent together: those that charge the same counts, slots and balances
 * (a busy key's requests, settled as their responses end) go as one call of the settle script carrying
 * the sum of their deltas, so settling costs a round trip per turn and set of counts, not one per
 * request. The sum is what the calls one by one would charge: each count and balance takes every
 * delta, and a token bucket is brought up to the latest of their clocks, as the last call would.
 * Each settlement's promise ends with its call.
 */
export class SettleBatches {
  private due = new Map<string, Due>();
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly send: (settlement: Settlement) => Promise<void>) {}

  add(settlement: Settlement): Promise<void> {
    const { keys, call } = settlement;
    const id = `${keys.join('\n')}\n${JSON.stringify(call.limits)}${JSON.stringify(call.balances)}`;
    return new Promise<void>((settled, failed) => {
      const due = this.due.get(id);
      if (due === undefined) {
        // setImmediate runs once the loop has read every socket that was ready: this turn's responses.
        if (this.due.size === 0) setImmediate(this.sendDue);
        this.due.set(id, { settlement, settled: [settled], failed: [failed] });
        return;
      }
      const sum = due.settlement.call;
      due.settlement = {
        ...due.settlement,
        call: { ...sum, delta: sum.delta + call.delta, now: Math.max(sum.now, call.now) },
      };
      due.settled.push(settled);
      due.failed.push(failed);
    });
  }

  /** Sends what is due and waits for every call under way (a replica stopping: nothing settled is left behind). */
  async close(): Promise<void> {
    this.sendDue();
    await Promise.allSettled([...this.sending]);
  }

  private readonly sendDue = (): void => {
    const due = this.due;
    this.due = new Map();
    for (const { settlement, settled, failed } of due.values()) {
      // Deltas that cancel out change nothing: no call.
      const sent = settlement.call.delta === 0 ? Promise.resolve() : this.send(settlement);
      const done = sent.then(
        () => settled.forEach((resolve) => resolve()),
        (err: unknown) => failed.forEach((reject) => reject(err)),
      );
      this.sending.add(done);
      void done.finally(() => this.sending.delete(done));
    }
  };
}
