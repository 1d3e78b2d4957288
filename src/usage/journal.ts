import { closeSync, fsyncSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { requestsOf, type BucketCounts, type DayUsage, type KeyUsage, type UsageBatch } from './usage.js';

/** A batch handed to the single-node sink, under the id Postgres records when it applies it. */
export interface HeldBatch {
  readonly batchId: string;
  readonly batch: UsageBatch;
}

/** Room reserved at start-up: a few seconds of a busy node's usage, written over in place at exit. */
const RESERVED_BYTES = 4 * 1024 * 1024;
/** The journal's first bytes: the length of the JSON that follows (0: nothing kept). */
const HEADER_BYTES = 8;

type Counts = number[];
type Named = [string, Counts][];
/** A key's usage: totals by endpoint and customer, then (absent in older journals) minutes and days. */
type SerialisedKey = [string, Named, Named, [number, Counts][]?, [number, Named, Named][]?];
type Serialised = [string, SerialisedKey[]][];

const counts = (c: BucketCounts) => `[${c.requests},${c.successful},${c.failed},${c.rateLimited},${c.totalDurationMs}]`;
const named = (entries: Map<string, BucketCounts>) => [...entries].map(([name, c]) => `[${JSON.stringify(name)},${counts(c)}]`).join(',');

/**
 * One key's usage as journal JSON (a `SerialisedKey`), written out directly: the exit path encodes up
 * to the whole room. The totals' elements come first, as every earlier version reads them.
 */
function encodeKey(keyId: string, u: KeyUsage): string {
  const endpoints = [...u.endpoints].map(([e, c]) => `[${JSON.stringify(e)},[${c.requests},${c.successful},${c.failed},${c.totalDurationMs}]]`).join(',');
  const customers = [...u.customers].map(([name, c]) => `[${JSON.stringify(name)},[${c.requests},${c.successful},${c.failed}]]`).join(',');
  const minutes = [...u.minutes].map(([minute, c]) => `[${minute},${counts(c)}]`).join(',');
  const days = [...u.days].map(([day, d]) => `[${day},[${named(d.endpoints)}],[${named(d.customers)}]]`).join(',');
  return `[${JSON.stringify(keyId)},[${endpoints}],[${customers}],[${minutes}],[${days}]]`;
}

const decodeBucket = ([requests, successful, failed, rateLimited, totalDurationMs]: Counts): BucketCounts => ({
  requests: requests!,
  successful: successful!,
  failed: failed!,
  rateLimited: rateLimited!,
  totalDurationMs: totalDurationMs!,
});
const decodeNamed = (entries: Named) => new Map(entries.map(([name, c]) => [name, decodeBucket(c)]));

function decode(data: Serialised): HeldBatch[] {
  return data.map(([batchId, keys]) => ({
    batchId,
    batch: new Map(
      keys.map(([keyId, endpoints, customers, minutes = [], days = []]): [string, KeyUsage] => [
        keyId,
        {
          endpoints: new Map(endpoints.map(([e, [requests, successful, failed, totalDurationMs]]) => [e, { requests: requests!, successful: successful!, failed: failed!, totalDurationMs: totalDurationMs! }])),
          customers: new Map(customers.map(([name, [requests, successful, failed]]) => [name, { requests: requests!, successful: successful!, failed: failed! }])),
          minutes: new Map(minutes.map(([minute, c]) => [minute, decodeBucket(c)])),
          days: new Map(days.map(([day, e, c]): [number, DayUsage] => [day, { endpoints: decodeNamed(e), customers: decodeNamed(c) }])),
        },
      ]),
    ),
  }));
}

/** Bytes a key's usage takes as journal JSON, give or take escapes: names, and ~60 bytes an entry. */
function estimatedBytes(keyId: string, u: KeyUsage): number {
  let bytes = keyId.length + 16;
  const add = (names: Iterable<string>) => {
    for (const name of names) bytes += name.length + 60;
  };
  add(u.endpoints.keys());
  add(u.customers.keys());
  bytes += u.minutes.size * 60;
  for (const d of u.days.values()) {
    bytes += 40;
    add(d.endpoints.keys());
    add(d.customers.keys());
  }
  return bytes;
}

/** One key's part of one held batch: what the journal keeps or drops whole. */
interface Part {
  readonly batch: number;
  readonly keyId: string;
  readonly usage: KeyUsage;
  readonly requests: number;
  readonly bytes: number;
}

/**
 * Single node: usage that could not reach the database before exit (it refused writes: a full disk,
 * a read-only or stopped server) is kept in `DATA_DIR/usage-journal` and applied, under its batch
 * ids, at the next start. The file's room is reserved at start-up and written over in place at exit,
 * so keeping usage needs no new space even on a disk that has filled up meanwhile.
 */
export class UsageJournal {
  constructor(private readonly file: string) {}

  /** Makes sure the room exists; false when it cannot be made (then nothing can be kept at exit). */
  reserve(): boolean {
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const fd = openSync(this.file, 'a+');
      try {
        const size = statSync(this.file).size;
        if (size < RESERVED_BYTES) writeSync(fd, Buffer.alloc(RESERVED_BYTES - size), 0, RESERVED_BYTES - size, size);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      return true;
    } catch {
      return false;
    }
  }

  /** What the previous process kept, oldest first (empty when nothing). */
  take(): HeldBatch[] {
    let fd: number;
    try {
      fd = openSync(this.file, 'r');
    } catch {
      return [];
    }
    try {
      const header = Buffer.alloc(HEADER_BYTES);
      if (readSync(fd, header, 0, HEADER_BYTES, 0) < HEADER_BYTES) return [];
      const length = Number(header.readBigUInt64BE());
      if (length === 0) return [];
      const body = Buffer.alloc(length);
      readSync(fd, body, 0, length, HEADER_BYTES);
      return decode(JSON.parse(body.toString('utf8')) as Serialised);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Keeps what fits of `held` in the reserved room, in place, under the batch ids; returns the
   * requests it could not keep (all of them when the file cannot be written).
   *
   * When not everything fits, what is kept is chosen to keep the most requests: a key's part of a
   * batch goes in whole or not at all (its totals, buckets and series stay consistent), the parts
   * with the most requests per byte first. So what is dropped is the usage that needs the most room
   * per request, typically a key that sent a new path or customer id with every request, and not
   * every key's newest seconds. Time and memory are linear in what is held, and the encoding stops
   * once the room is full.
   */
  save(held: readonly HeldBatch[]): number {
    const parts: Part[] = [];
    held.forEach(({ batch }, index) => {
      for (const [keyId, usage] of batch) parts.push({ batch: index, keyId, usage, requests: requestsOf(usage), bytes: estimatedBytes(keyId, usage) });
    });
    const total = parts.reduce((n, p) => n + p.requests, 0);
    parts.sort((a, b) => b.requests / b.bytes - a.requests / a.bytes || a.batch - b.batch);

    const kept = new Map<number, string[]>();
    let room = RESERVED_BYTES - HEADER_BYTES - 2;
    let keptRequests = 0;
    for (const part of parts) {
      if (part.bytes > room) continue;
      const json = encodeKey(part.keyId, part.usage);
      const keys = kept.get(part.batch);
      // A batch's first part also brings its id and brackets.
      const bytes = Buffer.byteLength(json) + 1 + (keys ? 0 : Buffer.byteLength(JSON.stringify(held[part.batch]!.batchId)) + 8);
      if (bytes > room) continue;
      room -= bytes;
      keptRequests += part.requests;
      if (keys) keys.push(json);
      else kept.set(part.batch, [json]);
    }
    if (kept.size === 0) return total;
    const batches = [...kept].sort(([a], [b]) => a - b).map(([index, keys]) => `[${JSON.stringify(held[index]!.batchId)},[${keys.join(',')}]]`);
    try {
      this.write(Buffer.from(`[${batches.join(',')}]`));
    } catch {
      return total;
    }
    return total - keptRequests;
  }

  /** Marks everything kept as applied. */
  clear(): void {
    this.write(Buffer.alloc(0));
  }

  private write(body: Buffer): void {
    const fd = openSync(this.file, 'r+');
    try {
      // The body first, then the header that makes it count: a crash in between keeps the old state.
      if (body.length > 0) writeSync(fd, body, 0, body.length, HEADER_BYTES);
      fsyncSync(fd);
      const header = Buffer.alloc(HEADER_BYTES);
      header.writeBigUInt64BE(BigInt(body.length));
      writeSync(fd, header, 0, HEADER_BYTES, 0);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}
