import { planOf, type Plan } from '../plans/plan.js';
import { Pricing } from '../plans/pricing.js';
import { subjectsOf, type Subject } from '../plans/subject.js';
import type { Metrics } from '../ops/metrics.js';
import type { KeyWithPlan } from '../store/key-with-plan.js';
import { changeConcerns, dropsEntries, type KeyChange, type KeyEvents } from './key-events.js';
import { restrictionsOf, type KeyRestrictions } from './restrictions.js';
import { hashSecret, looksLikeKeyId, looksLikeSecret } from './secret.js';
import { DEFAULT_KEY_PREFIX } from '../config.js';
import { hasWrongChecksum } from './secret-format.js';
import { signingKeyOf } from './token.js';
import { VerifiedTokens } from './verified-tokens.js';
import { ChangesDuringLookUps } from './changes-during-look-ups.js';

/**
 * What the proxy needs to admit a request: the key id, its state, the consumer it belongs to, if any,
 * and the subjects its requests are charged to: the key with its own plan (else DEFAULT_RATE_LIMIT)
 * and credits, and its consumer with the consumer's plan and credits, shared by all its keys.
 */
export interface ResolvedKey {
  readonly id: string;
  /** A disabled key is refused (403) without consuming quota. */
  readonly enabled: boolean;
  /** From this instant (epoch ms) the key is refused (401 key_expired); null: never. */
  readonly expiresAtMs: number | null;
  readonly consumerId: string | undefined;
  /** Undefined: no limit applies (the key is counted, not limited). */
  readonly subjects: readonly Subject[] | undefined;
  /**
   * Set when a plan of the key or its consumer has limits with a match or costs: then a request's
   * subjects and cost depend on it (`subjects` holds every limit). Undefined: `subjects` at cost 1.
   */
  readonly pricing: Pricing | undefined;
  /** The routes the key may take; null: every route. */
  readonly allowedRouteIds: ReadonlySet<string> | null;
  /** The origins and client addresses it may be used from; undefined: anywhere (src/keys/restrictions.ts). */
  readonly restrictions: KeyRestrictions | undefined;
  /** What verify answers of the key besides its decision; the proxy never reads it. */
  readonly identity: KeyIdentity;
  /** What checks its tokens: set on the entry a token's `kid` found (`resolveToken`), else undefined. */
  readonly signing?: TokenSigning;
}

/**
 * A key's secret and the keys its tokens are signed with (keys/token.ts), derived once when it enters
 * the cache: the current secret's, and a rolled one's until its grace ends.
 */
export interface TokenSigning {
  /** The key's own secret: the backend gets it in `x-api-key` for a request that carried a token. */
  readonly secret: string;
  readonly keys: readonly { readonly signingKey: Buffer; readonly untilMs: number }[];
}

/** A key found by id, with its secrets opened (`KeyRepository.findForToken`, then decrypted). */
export interface KeyWithSecrets {
  readonly key: KeyWithPlan;
  readonly secret: string;
  readonly previous: { readonly secret: string; readonly untilMs: number } | null;
}

/**
 * A key's name and owner as the caller set them (verify answers them from memory:
 * docs/guides/verify-and-client.md).
 */
export interface KeyIdentity {
  readonly name: string;
  readonly externalId: string | null;
  /** The caller's JSON object as serialised, members in the order written. */
  readonly metadata: string;
}

/** The database look-up by SHA-256 of the secret (`KeyRepository.findBySecretHash`). */
export type KeyLookup = (secretHash: Buffer) => Promise<KeyWithPlan | undefined>;
/** The database look-up of the key a token names by id, its secrets opened. */
export type TokenKeyLookup = (keyId: string) => Promise<KeyWithSecrets | undefined>;

export interface KeyCacheOptions {
  readonly lookup: KeyLookup;
  /** Absent: tokens are refused as unknown keys. */
  readonly lookupForToken?: TokenKeyLookup;
  readonly events: KeyEvents;
  readonly metrics: Pick<Metrics, 'keyCache'>;
  /** Applies to keys with no plan bound (`DEFAULT_RATE_LIMIT`). */
  readonly defaultRateLimit: Plan | undefined;
  readonly clock?: () => number;
  /** Backstop for a lost invalidation message; invalidation itself is immediate. */
  readonly ttlMs?: number;
  readonly maxEntries?: number;
  readonly negativeTtlMs?: number;
  readonly maxNegativeEntries?: number;
  /** KEY_PREFIX: secrets of its checksummed shape are refused on their checksum alone. */
  readonly keyPrefix?: string;
}

/** What a look-up found: the key's row, and for a key found by id its signing keys. */
interface Found {
  readonly row: KeyWithPlan;
  readonly signing?: TokenSigning;
}

/** Entries of keys found by a token's `kid` are held under this and the id: no secret starts so. */
const TOKEN_ENTRY = 'kid:';

/** How long an expired entry is trusted again after a failed refresh, before the next attempt. */
const STALE_GRACE_MS = 5_000;

interface Entry {
  readonly key: ResolvedKey;
  /** The plans the key is limited by, its own and its consumer's: a change of either makes the entry stale. */
  readonly rateLimitIds: readonly string[];
  readonly expiresAt: number;
  /** The end of a rolled secret's grace: never served after it, not even while the database is down. */
  readonly notAfter: number;
}

/**
 * Secret → key, so a known key costs no database query. Entries are dropped the moment a change of
 * the key, of its plan, of its consumer or of its consumer's plan is announced on `KeyEvents`; their lifetime only covers a lost announcement. Unknown secrets
 * are remembered briefly (bounded), and strings that cannot be secrets never reach the database.
 *
 * `resolve` answers synchronously whenever memory can, so a hit allocates no promise. A failed
 * look-up rejects (the caller answers 503) unless an expired entry for that secret is still held:
 * then that entry keeps the key working while the database is down.
 */
export class KeyCache {
  /** Tokens whose signature was checked (verified-tokens.ts). */
  readonly tokens = new VerifiedTokens();
  private readonly entries = new Map<string, Entry>();
  /** keyId → its secrets held (the current one, and a rolled one in its grace): a key change finds them without a scan. */
  private readonly byKeyId = new Map<string, Set<string>>();
  /** secret → expiry; Map order is insertion order, so the first entry is the oldest. */
  private readonly negative = new Map<string, number>();
  /** Concurrent misses for one secret share one look-up. */
  private readonly inFlight = new Map<string, Promise<ResolvedKey | undefined>>();
  /** What a look-up that raced a change of its key keeps: nothing, or an entry to check again at its next use. */
  private readonly changes = new ChangesDuringLookUps();

  private readonly lookup: KeyLookup;
  private readonly lookupForToken: TokenKeyLookup | undefined;
  private readonly metrics: Pick<Metrics, 'keyCache'>;
  private readonly defaultRateLimit: Plan | undefined;
  private readonly clock: () => number;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly negativeTtlMs: number;
  private readonly maxNegativeEntries: number;
  private readonly keyPrefix: string;

  constructor(options: KeyCacheOptions) {
    this.lookup = options.lookup;
    this.lookupForToken = options.lookupForToken;
    this.metrics = options.metrics;
    this.defaultRateLimit = options.defaultRateLimit;
    this.clock = options.clock ?? Date.now;
    this.ttlMs = options.ttlMs ?? 300_000;
    this.maxEntries = options.maxEntries ?? 100_000;
    this.negativeTtlMs = options.negativeTtlMs ?? 10_000;
    this.maxNegativeEntries = options.maxNegativeEntries ?? 10_000;
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    options.events.subscribe((change) => this.invalidate(change));
  }

  /** A secret of the current prefix's checksummed shape whose checksum is wrong: no key has it, no store is asked. */
  forged(secret: string): boolean {
    return hasWrongChecksum(secret, this.keyPrefix);
  }

  /** The key of a secret whose entry is fresh, from memory alone; else `undefined` (ask `resolve`). */
  fresh(secret: string): ResolvedKey | undefined {
    const entry = this.entries.get(secret);
    if (entry === undefined || entry.expiresAt <= this.clock()) return undefined;
    this.metrics.keyCache.inc({ result: 'hit' });
    return entry.key;
  }

  /** The key a secret belongs to, or `undefined` for an unknown, deleted or malformed secret. */
  resolve(secret: string): ResolvedKey | undefined | Promise<ResolvedKey | undefined> {
    return this.resolveEntry(secret, looksLikeSecret(secret), (stale) =>
      this.load(secret, stale, this.bySecret),
    );
  }

  /**
   * The key a token names (its `kid`), with its signing keys; `undefined` for an unknown or deleted
   * key. Cached as a secret is, under a name no secret has, so a token costs one look-up per key, not
   * per token, and a change of the key drops it as it drops the key's secrets.
   */
  resolveToken(kid: string): ResolvedKey | undefined | Promise<ResolvedKey | undefined> {
    const name = TOKEN_ENTRY + kid;
    return this.resolveEntry(name, this.lookupForToken !== undefined && looksLikeKeyId(kid), (stale) =>
      this.load(name, stale, this.byId(kid)),
    );
  }

  /** The key a token names (its `kid`) whose entry is fresh, from memory alone (as `fresh`). */
  freshToken(kid: string): ResolvedKey | undefined {
    return this.fresh(TOKEN_ENTRY + kid);
  }

  /** Whether memory holds the key a token names, or a look-up of it is under way (as `knows`). */
  knowsToken(kid: string): boolean {
    return this.knows(TOKEN_ENTRY + kid);
  }

  private resolveEntry(
    secret: string,
    wellFormed: boolean,
    load: (stale: Entry | undefined) => Promise<ResolvedKey | undefined>,
  ): ResolvedKey | undefined | Promise<ResolvedKey | undefined> {
    const hit = this.fresh(secret);
    if (hit !== undefined) return hit;
    const now = this.clock();
    const entry = this.entries.get(secret);
    if (!wellFormed) {
      this.metrics.keyCache.inc({ result: 'negative' });
      return undefined;
    }
    const refusedUntil = this.negative.get(secret);
    if (refusedUntil !== undefined) {
      if (refusedUntil > now) {
        this.metrics.keyCache.inc({ result: 'negative' });
        return undefined;
      }
      this.negative.delete(secret);
    }
    this.metrics.keyCache.inc({ result: 'miss' });
    let pending = this.inFlight.get(secret);
    if (pending === undefined) {
      pending = load(entry);
      this.inFlight.set(secret, pending);
    }
    return pending;
  }

  /**
   * Whether memory holds a key for this secret, fresh or not, or a look-up of it is under way: asking
   * now starts no look-up of a new secret (not counted).
   */
  knows(secret: string): boolean {
    return this.entries.has(secret) || this.inFlight.has(secret);
  }

  /**
   * Every entry is re-checked on its next use, but kept: should the database be down as well, the
   * expired entry still serves its key (the stale grace of `load`).
   */
  private expireAll(): void {
    for (const secret of this.entries.keys()) this.expire(secret);
    this.negative.clear();
    this.inFlight.clear();
  }

  /** Checked again on its next use, and kept for the stale grace of `load`. */
  private expire(secret: string): void {
    const entry = this.entries.get(secret);
    if (entry !== undefined) this.entries.set(secret, { ...entry, expiresAt: 0 });
  }

  /** A key by its secret: the row's `secretValidUntilMs` says until when that secret opens it. */
  private readonly bySecret = async (secret: string): Promise<Found | undefined> => {
    const row = await this.lookup(hashSecret(secret));
    return row && { row };
  };

  /** A key by id, for its tokens: its signing keys derived here, once per entry. */
  private byId(kid: string): (name: string) => Promise<Found | undefined> {
    return async () => {
      const found = await this.lookupForToken!(kid);
      if (found === undefined) return undefined;
      const { key: row, secret, previous } = found;
      const keys = [{ signingKey: signingKeyOf(secret), untilMs: Infinity }];
      if (previous !== null)
        keys.push({ signingKey: signingKeyOf(previous.secret), untilMs: previous.untilMs });
      return { row, signing: { secret, keys } };
    };
  }

  private async load(
    secret: string,
    stale: Entry | undefined,
    find: (secret: string) => Promise<Found | undefined>,
  ): Promise<ResolvedKey | undefined> {
    const mark = this.changes.begin();
    let found: Found | undefined;
    try {
      found = await find(secret);
    } catch (err) {
      this.changes.over();
      if (!this.changes.since(mark)) this.inFlight.delete(secret);
      const now = this.clock();
      if (stale === undefined || this.entries.get(secret) !== stale || stale.notAfter <= now) throw err;
      // Database down: the expired entry keeps its key working, re-checked after a short grace.
      this.entries.set(secret, { ...stale, expiresAt: Math.min(now + STALE_GRACE_MS, stale.notAfter) });
      return stale.key;
    }
    const changed = this.changes.since(mark);
    if (!changed) this.inFlight.delete(secret); // else the change cleared it: a later look-up may be there
    const row = found?.row;
    const now = this.clock();
    const notAfter = row?.secretValidUntilMs ?? Infinity;
    if (row === undefined || notAfter <= now) {
      this.changes.over();
      // A look-up that raced a change (a key's roll, say) may have read before its secret existed.
      if (!changed) {
        this.forget(secret);
        this.rememberUnknown(secret, now);
      }
      return undefined;
    }
    const key = this.toKey(row, found!.signing);
    const rateLimitIds = [row.rateLimitId, row.consumer?.rateLimitId ?? null].filter((id) => id !== null);
    // A change of the key during the look-up may have made `row` stale: after a message, it is answered
    // once and not kept; after a read-back, kept as that change keeps entries (known, checked at next use).
    const race = this.changes.raced(mark, (change) => changeConcerns(change, { key, rateLimitIds }));
    if (race === 'dropped') return key;
    // A rolled secret's entry ends with its grace: every replica refuses it from then on, unprompted.
    const expiresAt = race === 'rechecked' ? 0 : Math.min(now + this.ttlMs, notAfter);
    this.store(secret, { key, rateLimitIds, expiresAt, notAfter });
    return key;
  }

  private toKey(row: KeyWithPlan, signing: TokenSigning | undefined): ResolvedKey {
    const key = {
      id: row.id,
      plan: row.limits !== null ? planOf(row.limits, row.costs) : this.defaultRateLimit,
      balance: row.balance ?? undefined,
    };
    const consumer =
      row.consumer === null
        ? undefined
        : {
            id: row.consumer.id,
            plan: row.consumer.limits !== null ? planOf(row.consumer.limits, row.consumer.costs) : undefined,
            balance: row.consumer.balance ?? undefined,
          };
    return {
      id: row.id,
      enabled: row.enabled,
      expiresAtMs: row.expiresAtMs,
      consumerId: consumer?.id,
      subjects: subjectsOf(row.id, key, consumer),
      pricing: Pricing.of(key, consumer),
      allowedRouteIds: row.allowedRouteIds === null ? null : new Set(row.allowedRouteIds),
      restrictions: restrictionsOf(row),
      identity: { name: row.name, externalId: row.externalId, metadata: row.metadata },
      ...(signing !== undefined && { signing }),
    };
  }

  private store(secret: string, entry: Entry): void {
    if (!this.entries.has(secret) && this.entries.size >= this.maxEntries) {
      // Evict the oldest insertion; a live key evicted this way costs one look-up on its next request.
      const oldest = this.entries.keys().next().value as string;
      this.forget(oldest);
    }
    this.entries.set(secret, entry);
    let secrets = this.byKeyId.get(entry.key.id);
    if (secrets === undefined) this.byKeyId.set(entry.key.id, (secrets = new Set()));
    secrets.add(secret);
  }

  private rememberUnknown(secret: string, now: number): void {
    if (this.negative.size >= this.maxNegativeEntries) {
      this.negative.delete(this.negative.keys().next().value as string);
    }
    this.negative.set(secret, now + this.negativeTtlMs);
  }

  private forget(secret: string): void {
    const entry = this.entries.get(secret);
    if (entry === undefined) return;
    this.entries.delete(secret);
    const secrets = this.byKeyId.get(entry.key.id);
    secrets?.delete(secret);
    if (secrets?.size === 0) this.byKeyId.delete(entry.key.id);
  }

  private invalidate(change: KeyChange): void {
    // The route table is not the key cache's: its entries stay fresh.
    if (change.kind === 'routes') return;
    this.changes.changed(change);
    // Requests after the change must not join a look-up that started before it.
    this.inFlight.clear();
    if (change.kind === 'all') return this.expireAll();
    const drop = dropsEntries(change)
      ? (secret: string) => this.forget(secret)
      : (secret: string) => this.expire(secret);
    if (change.kind === 'key') {
      for (const secret of [...(this.byKeyId.get(change.keyId) ?? [])]) drop(secret);
      return;
    }
    // Plan and consumer changes are rare administrative events: a scan is cheaper than indexing every
    // entry by plan and consumer.
    for (const [secret, entry] of this.entries) if (changeConcerns(change, entry)) drop(secret);
  }
}
