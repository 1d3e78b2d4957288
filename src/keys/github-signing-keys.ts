/**
 * The keys GitHub signs its secret scanning reports with (docs/guides/leaked-keys.md): the document
 * at GITHUB_SECRET_SCANNING_KEYS_URL, `{public_keys: [{key_identifier, key (PEM)}]}`. Read on first
 * use and kept; read again when a report names a key not held, at most once a minute, so a flood of
 * reports naming invented keys costs GitHub's endpoint one request a minute. A report naming a key not
 * held while the keys are being read waits for that read.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { Logger } from '../ops/logger.js';

const REFRESH_AT_MOST_EVERY_MS = 60_000;
const FETCH_TIMEOUT_MS = 5_000;

interface KeysDocument {
  readonly public_keys?: readonly { readonly key_identifier?: unknown; readonly key?: unknown }[];
}

export class GitHubSigningKeys {
  private keys = new Map<string, KeyObject>();
  private lastReadMs = -Infinity;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly url: URL,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Whether `signature` (base64 of a DER ECDSA P-256 signature with SHA-256) is the key `identifier`'s
   * over `body`, the raw bytes received.
   */
  async verify(body: Buffer, identifier: string, signature: string): Promise<boolean> {
    let key = this.keys.get(identifier);
    if (key === undefined) {
      // A read in progress is waited for, however recent it is: it may bring the key.
      if (this.reading === undefined && this.clock() - this.lastReadMs >= REFRESH_AT_MOST_EVERY_MS)
        this.reading = this.read().finally(() => (this.reading = undefined));
      await this.reading;
      key = this.keys.get(identifier);
    }
    if (key === undefined) return false;
    try {
      return verify('sha256', body, { key, dsaEncoding: 'der' }, Buffer.from(signature, 'base64'));
    } catch {
      return false;
    }
  }

  /** Replaces the keys held by those the document lists (P-256 keys only); kept as they were on failure. */
  private async read(): Promise<void> {
    this.lastReadMs = this.clock();
    try {
      const response = await fetch(this.url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const document = (await response.json()) as KeysDocument;
      const keys = new Map<string, KeyObject>();
      for (const { key_identifier: id, key: pem } of document.public_keys ?? []) {
        if (typeof id !== 'string' || typeof pem !== 'string') continue;
        const key = p256Key(pem);
        if (key !== undefined) keys.set(id, key);
      }
      this.keys = keys;
    } catch (err) {
      this.logger.warn(
        { url: this.url.href, err: (err as Error).message },
        "GitHub's secret scanning keys could not be read; reports signed with a key not held are refused",
      );
    }
  }
}

function p256Key(pem: string): KeyObject | undefined {
  try {
    const key = createPublicKey(pem);
    return key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? key : undefined;
  } catch {
    return undefined;
  }
}
