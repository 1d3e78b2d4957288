import { randomBytes } from 'node:crypto';
import { retrying } from '../ops/retrying.js';
import type { Settlement } from './redis-settlement.js';
import type { SettleCall } from './settle-script.js';

/** A call that failed is sent again after this long, then twice as long each time, up to RETRY_MOST_MS… */
const RETRY_FIRST_MS = 100;
const RETRY_MOST_MS = 2_000;
/** …until this long after its first sending: then its requests keep their reservations. */
const GIVE_UP_MS = 60_000;
/** A call's mark outlives every sending of it, so none charges twice (settle-script.ts). */
const MARK_MS = 2 * GIVE_UP_MS;

/**
 * The settlements of one turn that charge the same counts and balances: the first, the sum of their
 * deltas and the latest of their clocks, and one promise for them all.
 */
interface Due extends PromiseWithResolvers<void> {
  readonly settlement: Settlement;
  delta: number;
  now: number;
}

/** Sends one call of the settle script: `keys` end with the call's mark. */
export type SendSettlement = (settlement: Settlement, keys: string[], call: SettleCall) => Promise<void>;

/**
 * The settlements of one turn sent together: those that charge the same counts, slots and balances
 * (a busy key's requests, settled as their responses end) go as one call of the settle script carrying
 * the sum of their deltas, so settling costs a round trip per turn and set of counts, not one per
 * request. The sum is what the calls one by one would charge: each count and balance takes every
 * delta, and a token bucket is brought up to the latest of their clocks, as the last call would.
 *
 * A call that fails (Redis hanging, restarting, failing over) is sent again, under the same mark, so
 * that a sending which reached Redis before its answer was lost is not charged twice; after GIVE_UP_MS
 * its settlements fail and their requests keep their reservations. The settlements of one call share
 * its promise: a request's settling costs no promise of its own.
 */
export class SettleBatches {
  private due = new Map<string, Due>();
  private readonly sending = new Set<Promise<void>>();
  /** This replica's calls are `<replica>:<n>`: no two calls anywhere share a mark. */
  private readonly replica = randomBytes(8).toString('hex');
  private calls = 0;
  private closing = false;

  constructor(
    private readonly send: SendSettlement,
    /** Runs its argument with the connection corked: the calls of a turn leave in one write. */
    private readonly corked: (send: () => void) => void,
  ) {}

  add(settlement: Settlement): Promise<void> {
    const { keys, call } = settlement;
    const id = `${keys.join('\n')}\n${JSON.stringify(call.limits)}${JSON.stringify(call.balances)}`;
    const due = this.due.get(id);
    if (due === undefined) {
      // setImmediate runs once the loop has read every socket that was ready: this turn's responses.
      if (this.due.size === 0) setImmediate(this.sendDue);
      const first: Due = { settlement, delta: call.delta, now: call.now, ...Promise.withResolvers<void>() };
      this.due.set(id, first);
      return first.promise;
    }
    due.delta += call.delta;
    due.now = Math.max(due.now, call.now);
    return due.promise;
  }

  /**
   * Sends what is due and waits for every call under way; a call that fails is no longer sent again (a
   * replica stopping: what Redis did not take keeps its reservations).
   */
  async close(): Promise<void> {
    this.sendDue();
    this.closing = true;
    await Promise.allSettled([...this.sending]);
  }

  private readonly sendDue = (): void => {
    const due = this.due;
    this.due = new Map();
    this.corked(() => {
      for (const { settlement, delta, now, resolve, reject } of due.values()) {
        // Deltas that cancel out change nothing: no call.
        const sent =
          delta === 0
            ? Promise.resolve()
            : this.sendOnce({ ...settlement, call: { ...settlement.call, delta, now } });
        const done = sent.then(resolve, reject);
        this.sending.add(done);
        void done.finally(() => this.sending.delete(done));
      }
    });
  };

  /** One call, under one mark, sent until Redis takes it or GIVE_UP_MS have passed. */
  private sendOnce(settlement: Settlement): Promise<void> {
    const keys = [...settlement.keys, `${settlement.markBase}${this.replica}:${++this.calls}`];
    const call = { ...settlement.call, markMs: MARK_MS };
    return retrying(() => this.send(settlement, keys, call), {
      firstMs: RETRY_FIRST_MS,
      mostMs: RETRY_MOST_MS,
      giveUpMs: GIVE_UP_MS,
      stopped: () => this.closing,
    });
  }
}
