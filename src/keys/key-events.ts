/**
 * A change that makes cached key entries (or the route table) stale, broadcast to every replica: of
 * one key, of a plan (its keys, and the keys of its consumers), of a consumer (its keys), of the route
 * table (each replica reads it again). `all`: changes may have been missed (a subscriber reconnected),
 * so every entry is stale and the route table is read again. `recheck`: a change read back from the
 * record, which a message has most likely brought already: entries are checked again at their next use
 * but kept, like `all`'s, should the database not answer.
 */
export type KeyChange =
  | { readonly kind: 'key'; readonly keyId: string; readonly recheck?: true }
  | { readonly kind: 'plan'; readonly rateLimitId: string; readonly recheck?: true }
  | { readonly kind: 'consumer'; readonly consumerId: string; readonly recheck?: true }
  | { readonly kind: 'routes'; readonly recheck?: true }
  | { readonly kind: 'all' };

/**
 * Whether a change drops the entries it concerns: one announced by message does; one read back from the
 * record, or a reconnection's, has them checked again at their next use but kept.
 */
export const dropsEntries = (change: KeyChange): boolean => change.kind !== 'all' && change.recheck !== true;

/** Whether a change makes a cached key stale: one of the key, of a plan it is limited by, of its consumer. */
export function changeConcerns(
  change: KeyChange,
  cached: {
    readonly key: { readonly id: string; readonly consumerId: string | undefined };
    /** The plans the key is limited by, its own and its consumer's. */
    readonly rateLimitIds: readonly string[];
  },
): boolean {
  if (change.kind === 'key') return cached.key.id === change.keyId;
  if (change.kind === 'plan') return cached.rateLimitIds.includes(change.rateLimitId);
  if (change.kind === 'consumer') return cached.key.consumerId === change.consumerId;
  return change.kind === 'all';
}

/**
 * Key-change notifications. In-process on a single node; Redis pub/sub across replicas, where a
 * lost message is covered by the key cache's entry lifetime.
 */
export interface KeyEvents {
  publish(change: KeyChange): Promise<void>;
  subscribe(listener: (change: KeyChange) => void): void;
  close(): Promise<void>;
}

export class LocalKeyEvents implements KeyEvents {
  private readonly listeners: ((change: KeyChange) => void)[] = [];

  publish(change: KeyChange): Promise<void> {
    for (const listener of this.listeners) listener(change);
    return Promise.resolve();
  }

  subscribe(listener: (change: KeyChange) => void): void {
    this.listeners.push(listener);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
