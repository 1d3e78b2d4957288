/**
 * Where the reservations of verify and of the gateways wait for their settle call
 * (docs/decisions/0212): a record each, taken once, by whichever replica is asked first. In process
 * here; in Redis for replicas (redis-store.ts). What a record holds is reservations.ts's.
 */

/** One reservation as stored: plain JSON, so that another replica can settle it. */
export interface ReservationRecord {
  readonly id: string;
  /** Epoch ms after which it is no longer settled: it keeps its reservation as its cost. */
  readonly deadlineMs: number;
  /** The replica that holds its concurrency places, if any (only that replica can give them back). */
  readonly holder: string;
  /** What it holds, as reservations.ts writes it. */
  readonly body: string;
}

export interface ReservationStore {
  /** This process's name among the replicas: a record's `holder`. */
  readonly replica: string;
  /** Other replicas take from it too (Redis); false: this process alone, which settles or expires all. */
  readonly shared: boolean;
  put(record: ReservationRecord): Promise<void>;
  /**
   * The record of `id`, taken out: at most one `token`, on any replica, ever gets it. A call whose
   * answer was lost (Redis hanging) may have taken it: the same token gets it again until `keptUntilMs`.
   */
  take(id: string, token: string, keptUntilMs: number): Promise<ReservationRecord | undefined>;
  /**
   * Up to `max` records whose deadline is `nowMs` or before, taken out as `take` takes them: a call
   * whose answer was lost gets the same records again with the same `token` until `keptUntilMs`, and
   * takes no others.
   */
  takeDue(nowMs: number, max: number, token: string, keptUntilMs: number): Promise<ReservationRecord[]>;
  /** Asks `holder` to give back the places of reservation `id`; `onFree` hears it there. */
  free(holder: string, id: string): void;
  /** Where this replica hears that a reservation it holds places of was settled elsewhere. */
  onFree(listener: (id: string) => void): void;
  /**
   * Asks `holder` to act on `message` (`onAsk` there); resolves true once it has, false when it did
   * not answer within `waitMs` (gone, or cut off from Redis).
   */
  ask(holder: string, message: string, waitMs: number): Promise<boolean>;
  onAsk(listener: (message: string) => Promise<void>): void;
  /** True for the first caller only, on any replica, for `id` (within a minute of each other). */
  claim(id: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Where the proxy writes its usage-priced requests still in flight after a moment (in-flight.ts), so
 * that a process that dies holding them counts each once, at its reservation (docs/decisions/0224).
 */
export interface InFlightStore {
  /** This process's name: a record's `holder`. */
  readonly replica: string;
  /**
   * Writes `records`, and moves the deadline of `open` (ids written before and not taken) to
   * `deadlineMs`: past it, the reservations' sweep of any replica takes them.
   */
  write(records: readonly ReservationRecord[], open: readonly string[], deadlineMs: number): Promise<void>;
  take(id: string, token: string, keptUntilMs: number): Promise<ReservationRecord | undefined>;
  /** The records of a process gone, taken out (a single node, at start); absent: the sweep takes them. */
  left?(): Promise<ReservationRecord[]>;
}

/** A single process's reservations: a map, taken from synchronously, so once. */
export class MemoryReservationStore implements ReservationStore {
  readonly replica = 'local';
  readonly shared = false;
  private readonly records = new Map<string, ReservationRecord>();
  private listener: ((id: string) => void) | undefined;

  put(record: ReservationRecord): Promise<void> {
    this.records.set(record.id, record);
    return Promise.resolve();
  }

  /** Nothing is ever lost on the way in process: the token is not needed. */
  take(id: string): Promise<ReservationRecord | undefined> {
    const record = this.records.get(id);
    this.records.delete(id);
    return Promise.resolve(record);
  }

  takeDue(nowMs: number, max: number): Promise<ReservationRecord[]> {
    const due: ReservationRecord[] = [];
    for (const record of this.records.values()) {
      if (due.length === max) break;
      if (record.deadlineMs <= nowMs) due.push(record);
    }
    for (const record of due) this.records.delete(record.id);
    return Promise.resolve(due);
  }

  free(_holder: string, id: string): void {
    this.listener?.(id);
  }

  onFree(listener: (id: string) => void): void {
    this.listener = listener;
  }

  /** Never asked: this process holds every reservation. */
  ask(): Promise<boolean> {
    return Promise.resolve(false);
  }

  onAsk(): void {}

  /** Never needed either: only a replica that asked another claims, and this one never asks. */
  claim(): Promise<boolean> {
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
