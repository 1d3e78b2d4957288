/** What admission answers (src/proxy/admission.ts): a request admitted, with what it was charged, or refused. */
import type { ResolvedKey } from '../keys/key-cache.js';
import type { BalanceState, LimitState } from '../limits/rate-limiter.js';
import type { Subject } from '../plans/subject.js';
import type { RefusalCode } from '../refusals.js';
import type { PendingSettlement } from './settlement.js';

/** The limit a decision reports (Decision.limit), and the subjects whose limits it covered. */
export interface Limited {
  readonly subjects: readonly Subject[];
  readonly decision: LimitState;
}

/** A request that may go on; `limit` is set when a limit applies to it. */
export interface Admitted {
  readonly admitted: true;
  readonly secret: string;
  readonly key: ResolvedKey;
  readonly limit: Limited | undefined;
  /** The balance with the fewest units left after the charge, when a balance applies. */
  readonly balance: BalanceState | undefined;
  /** Units charged to every limit and balance that applies, and recorded in usage. */
  readonly cost: number;
  /** A token's `sub`: the request's customer id in place of any the client sent. */
  readonly subject?: string;
  /** Gives back its places of concurrency limits (Decision.release): call once it ends; undefined: it holds none. */
  readonly release: (() => void) | undefined;
  /** Its cost is what its response reports (a cost entry's `settle`); undefined: `cost` is final. */
  readonly settlement?: PendingSettlement;
  /** Its body, read to match or reserve on it: forwarded as it is; undefined: not read, streamed on. */
  readonly body?: Buffer;
}

/** A request answered by Tollgate itself; `key` is set when it carried a valid key (usage counts it). */
export interface Refused {
  readonly admitted: false;
  readonly code: RefusalCode;
  readonly key: ResolvedKey | undefined;
  readonly limit: Limited | undefined;
  /** `credits_exhausted`: the balance that does not hold the cost, and the cost. */
  readonly short?: { readonly balance: BalanceState; readonly cost: number };
  /** When a throttled client may try again, epoch ms. */
  readonly retryAtMs?: number;
  /** A valid token's `sub` (see Admitted). */
  readonly subject?: string;
}

export type Admission = Admitted | Refused;

/** A refusal for `code`, with the key it carried and the limit that refused it, when known. */
export function refused(code: RefusalCode, key?: ResolvedKey, limit?: Refused['limit']): Refused {
  return { admitted: false, code, key, limit };
}
