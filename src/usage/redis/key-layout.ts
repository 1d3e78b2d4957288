/**
 * Where usage waits in Redis on its way from the replicas to Postgres. Every name carries the one
 * hash tag `{usage}`, so on a Cluster it all lives in one slot and a push, a seal or a read is one
 * atomic script, however many API keys it spans; each script gets every name it touches in KEYS.
 * (The traffic is one push per replica per second.)
 *
 *   <p>{usage}:live:<keyId>             hash: what replicas pushed for that key since the last seal
 *   <p>{usage}:dirty                    set: key ids that have a live hash
 *   <p>{usage}:batch:<batchId>          set: key ids sealed into that batch
 *   <p>{usage}:batch:<batchId>:<keyId>  hash: a sealed live hash, waiting for Postgres
 *   <p>{usage}:batches                  set: batch ids sealed and not yet removed
 *   <p>{usage}:set-aside                set: those of them Postgres refused (../set-aside.ts)
 *   <p>{usage}:push:<pushId>            marker of an applied push, so a push is never counted twice
 *   <p>{usage}:lock                     the flusher lock: a random token, with an expiry
 *   <p>{usage}:flushed-at               epoch ms of the last complete flush, by any replica
 *   <p>{usage}:seals                    how many seals made a batch: a key detail that read a live hash
 *                                       reads again when a seal came between it and Postgres
 *
 * The names are those of every earlier version (`set-aside` and `seals` are new, and an older
 * replica reads neither): replicas of two versions share them during a rolling upgrade. The hash fields are field-codec.ts's.
 */
export interface UsageKeys {
  readonly dirty: string;
  readonly batches: string;
  /** Sealed batches Postgres refused, still in `batches`: tried again at each flush. */
  readonly setAside: string;
  readonly lock: string;
  readonly flushedAt: string;
  /** A counter of the seals that made a batch. */
  readonly seals: string;
  live(keyId: string): string;
  marker(pushId: string): string;
  /** The set of key ids sealed into a batch. */
  batch(batchId: string): string;
  /** A key's sealed hash in a batch. */
  batchHash(batchId: string, keyId: string): string;
}

export function usageKeys(prefix: string): UsageKeys {
  const base = prefix + '{usage}:';
  return {
    dirty: base + 'dirty',
    batches: base + 'batches',
    setAside: base + 'set-aside',
    lock: base + 'lock',
    flushedAt: base + 'flushed-at',
    seals: base + 'seals',
    live: (keyId) => base + 'live:' + keyId,
    marker: (pushId) => base + 'push:' + pushId,
    batch: (batchId) => base + 'batch:' + batchId,
    batchHash: (batchId, keyId) => base + 'batch:' + batchId + ':' + keyId,
  };
}
