import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { freeBytes } from '../store/disk-space.js';
import type { FailureEntry } from './failure-log.js';
import { addToBin } from './latency-histogram.js';
import { requestsHeld } from './refused-parts.js';
import {
  OUTCOMES,
  STATUS_FIELDS,
  emptyBucket,
  type BucketCounts,
  type DayUsage,
  type EndpointUsage,
  type FiledUsage,
  type KeyUsage,
  type UsageBatch,
  type UsageCounts,
} from './usage.js';

/** A batch handed to the single-node sink, under the id Postgres records when it applies it. */
export interface HeldBatch {
  readonly batchId: string;
  readonly batch: UsageBatch;
}

/** Room reserved at start-up: a few seconds of a busy node's usage, written over in place at exit. */
const RESERVED_BYTES = 4 * 1024 * 1024;
/** What the reservation leaves free on its disk at the least: the database needs room to write too. */
export const LEFT_FREE_BYTES = 1024 * 1024;
/** The reservation's zeros are written this much at a time. */
const RESERVE_CHUNK_BYTES = 256 * 1024;
/** The journal's first bytes: the length of the JSON that follows (0: nothing kept). */
const HEADER_BYTES = 8;

/** A bucket's numbers in BUCKET_ORDER, then its latency bins flat (bin, count, ...). */
type Counts = (number | number[])[];
type Named = [string, Counts][];
/** A day: its endpoints, its customers and (absent in older journals) its routes. */
type SerialisedDay = [number, Named, Named, Named?];
/** Totals by endpoint and customer, then (absent in older journals) minutes and days. */
type SerialisedFiling = [Named, Named, [number, Counts][]?, SerialisedDay[]?];
/** A key's failure log: its entries, and its left-out counts by name (src/usage/failure-log.ts). */
type SerialisedFailures = [FailureEntry[], [string, number][]];
/** A key's usage: its whole, then (absent in older journals) each consumer's part and its failures. */
type SerialisedKey = [string, ...SerialisedFiling, [string, ...SerialisedFiling][]?, SerialisedFailures?];
type Serialised = [string, SerialisedKey[]][];

/**
 * A bucket's numbers in the journal, the first five as every earlier version wrote them: the
 * measures of request facts follow (decision record 0026), absent in older journals. Then the latency
 * bins, and `unsettled` after them when there is one.
 */
const BUCKET_ORDER = [
  'requests',
  'successful',
  'failed',
  'rateLimited',
  'totalDurationMs',
  'cost',
  ...STATUS_FIELDS,
  ...OUTCOMES.filter((o) => o !== 'rateLimited'),
] as const satisfies readonly (keyof BucketCounts)[];

/** A bucket as journal JSON, written out directly (the exit path encodes up to the whole room). */
function counts(c: BucketCounts): string {
  let json = '[';
  for (const m of BUCKET_ORDER) json += `${c[m]},`;
  let bins = '';
  for (const [bin, n] of c.latency) bins += `${bins === '' ? '' : ','}${bin},${n}`;
  return `${json}[${bins}]${c.unsettled ? `,${c.unsettled}` : ''}]`;
}
const named = (entries: Map<string, BucketCounts>) =>
  [...entries].map(([name, c]) => `[${JSON.stringify(name)},${counts(c)}]`).join(',');

/** One filing of a key's usage as the elements of a `SerialisedFiling`, written out directly. */
function encodeFiled(u: FiledUsage): string {
  const endpoints = [...u.endpoints]
    .map(
      ([e, c]) =>
        `[${JSON.stringify(e)},[${c.requests},${c.successful},${c.failed},${c.totalDurationMs},${c.cost}${c.unsettled ? `,${c.unsettled}` : ''}]]`,
    )
    .join(',');
  const customers = [...u.customers]
    .map(([name, c]) => `[${JSON.stringify(name)},[${c.requests},${c.successful},${c.failed}]]`)
    .join(',');
  const minutes = [...u.minutes].map(([minute, c]) => `[${minute},${counts(c)}]`).join(',');
  const days = [...u.days]
    .map(([day, d]) => `[${day},[${named(d.endpoints)}],[${named(d.customers)}],[${named(d.routes)}]]`)
    .join(',');
  return `[${endpoints}],[${customers}],[${minutes}],[${days}]`;
}

/**
 * One key's usage as journal JSON (a `SerialisedKey`), written out directly: the exit path encodes up
 * to the whole room. The totals' elements come first, as every earlier version reads them.
 */
function encodeKey(keyId: string, u: KeyUsage): string {
  const parts = [...u.consumers]
    .map(([consumerId, part]) => `[${JSON.stringify(consumerId)},${encodeFiled(part)}]`)
    .join(',');
  const failures =
    u.failures === undefined ? '' : `,${JSON.stringify([u.failures.entries, [...u.failures.leftOut]])}`;
  return `[${JSON.stringify(keyId)},${encodeFiled(u)},[${parts}]${failures}]`;
}

function decodeBucket(c: Counts): BucketCounts {
  const bucket = emptyBucket();
  BUCKET_ORDER.forEach((m, i) => {
    if (typeof c[i] === 'number') bucket[m] = c[i];
  });
  const bins = c[BUCKET_ORDER.length];
  if (Array.isArray(bins))
    for (let i = 0; i + 1 < bins.length; i += 2) addToBin(bucket.latency, bins[i]!, bins[i + 1]);
  const unsettled = c[BUCKET_ORDER.length + 1];
  if (typeof unsettled === 'number') bucket.unsettled = unsettled;
  return bucket;
}
const decodeNamed = (entries: Named) => new Map(entries.map(([name, c]) => [name, decodeBucket(c)]));

function decodeFiled([endpoints, customers, minutes = [], days = []]: SerialisedFiling): FiledUsage {
  return {
    endpoints: new Map(
      endpoints.map(([e, [requests, successful, failed, totalDurationMs, cost = 0, unsettled]]) => [
        e,
        {
          requests,
          successful,
          failed,
          totalDurationMs,
          cost,
          ...(unsettled !== undefined && { unsettled }),
        } as EndpointUsage,
      ]),
    ),
    customers: new Map(
      customers.map(([name, [requests, successful, failed]]) => [
        name,
        { requests, successful, failed } as UsageCounts,
      ]),
    ),
    minutes: new Map(minutes.map(([minute, c]) => [minute, decodeBucket(c)])),
    days: new Map(
      days.map(([day, e, c, r = []]): [number, DayUsage] => [
        day,
        { endpoints: decodeNamed(e), customers: decodeNamed(c), routes: decodeNamed(r) },
      ]),
    ),
  };
}

function decode(data: Serialised): HeldBatch[] {
  return data.map(([batchId, keys]) => ({
    batchId,
    batch: new Map(
      keys.map(([keyId, endpoints, customers, minutes, days, parts = [], failures]): [string, KeyUsage] => [
        keyId,
        {
          ...decodeFiled([endpoints, customers, minutes, days]),
          consumers: new Map(parts.map(([consumerId, ...filing]) => [consumerId, decodeFiled(filing)])),
          ...(failures !== undefined && {
            failures: { entries: failures[0], leftOut: new Map(failures[1]) },
          }),
        },
      ]),
    ),
  }));
}

/** Bytes a key's usage takes as journal JSON, give or take escapes: names, and ~60 bytes an entry. */
function estimatedBytes(keyId: string, u: KeyUsage): number {
  let bytes = keyId.length + 16 + filedBytes(u);
  for (const [consumerId, part] of u.consumers) bytes += consumerId.length + 16 + filedBytes(part);
  // A failure entry is a few hundred bytes of JSON, its texts cut (failure-log.ts).
  if (u.failures !== undefined) bytes += u.failures.entries.length * 400 + u.failures.leftOut.size * 80;
  return bytes;
}

/** A bucket's numbers and its latency bins (~8 bytes each). */
const bucketBytes = (c: BucketCounts) => 60 + c.latency.size * 8;

function filedBytes(u: FiledUsage): number {
  let bytes = 0;
  for (const name of u.endpoints.keys()) bytes += name.length + 60;
  for (const name of u.customers.keys()) bytes += name.length + 60;
  for (const c of u.minutes.values()) bytes += bucketBytes(c);
  for (const d of u.days.values()) {
    bytes += 40;
    for (const [name, c] of d.endpoints) bytes += name.length + bucketBytes(c);
    for (const [name, c] of d.customers) bytes += name.length + bucketBytes(c);
    for (const [name, c] of d.routes) bytes += name.length + bucketBytes(c);
  }
  return bytes;
}

/** What the reservation holds, and what of RESERVED_BYTES it could not take without filling the disk. */
export interface Reservation {
  readonly reservedBytes: number;
  readonly missingBytes: number;
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

  /**
   * Makes sure the room exists, as much of it as the disk can spare: it never takes the last
   * LEFT_FREE_BYTES of the disk, so on a nearly full one it holds less, or nothing, and says what it lacks.
   */
  reserve(): Reservation {
    let size = 0;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const fd = openSync(this.file, 'a+');
      try {
        size = fstatSync(fd).size;
        const spare = (freeBytes(dirname(this.file)) ?? Infinity) - LEFT_FREE_BYTES;
        const target = size + Math.max(0, Math.min(RESERVED_BYTES - size, spare));
        const zeros = Buffer.alloc(RESERVE_CHUNK_BYTES);
        // A write may take less than asked (the disk filled meanwhile): count what it took.
        while (size < target) size += writeSync(fd, zeros, 0, Math.min(zeros.length, target - size), size);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch {
      // What was written before the failure stays reserved; the rest is missing.
    }
    return { reservedBytes: size, missingBytes: Math.max(0, RESERVED_BYTES - size) };
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
   * Keeps what fits of `held` in the room reserved (never more: the disk may be full), in place, under
   * the batch ids; returns the requests it could not keep (all of them when the file cannot be written).
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
      for (const [keyId, usage] of batch)
        parts.push({
          batch: index,
          keyId,
          usage,
          requests: requestsHeld(usage),
          bytes: estimatedBytes(keyId, usage),
        });
    });
    const total = parts.reduce((n, p) => n + p.requests, 0);
    let room = this.reservedBytes() - HEADER_BYTES - 2;
    parts.sort((a, b) => b.requests / b.bytes - a.requests / a.bytes || a.batch - b.batch);

    const kept = new Map<number, string[]>();
    let keptRequests = 0;
    for (const part of parts) {
      if (part.bytes > room) continue;
      const json = encodeKey(part.keyId, part.usage);
      const keys = kept.get(part.batch);
      // A batch's first part also brings its id and brackets.
      const bytes =
        Buffer.byteLength(json) +
        1 +
        (keys ? 0 : Buffer.byteLength(JSON.stringify(held[part.batch]!.batchId)) + 8);
      if (bytes > room) continue;
      room -= bytes;
      keptRequests += part.requests;
      if (keys) keys.push(json);
      else kept.set(part.batch, [json]);
    }
    if (kept.size === 0) return total;
    const batches = [...kept]
      .sort(([a], [b]) => a - b)
      .map(([index, keys]) => `[${JSON.stringify(held[index]!.batchId)},[${keys.join(',')}]]`);
    try {
      this.write(Buffer.from(`[${batches.join(',')}]`));
    } catch {
      return total;
    }
    return total - keptRequests;
  }

  private reservedBytes(): number {
    try {
      return Math.min(statSync(this.file).size, RESERVED_BYTES);
    } catch {
      return 0;
    }
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
