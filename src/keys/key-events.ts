/**
 * A change that makes cached key entries stale, broadcast to every replica. `all`: changes may have
 * been missed (a subscriber reconnected), so every entry is stale.
 */
export type KeyChange =
  | { readonly kind: 'key'; readonly keyId: string }
  | { readonly kind: 'plan'; readonly rateLimitId: string }
  | { readonly kind: 'all' };

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
