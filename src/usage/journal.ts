import { closeSync, fsyncSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { KeyUsage, UsageBatch } from './usage.js';

/** A batch handed to the single-node sink, under the id Postgres records when it applies it. */
export interface HeldBatch {
  readonly batchId: string;
  readonly batch: UsageBatch;
}

/** Room reserved at start-up: a few seconds of a busy node's usage, written over in place at exit. */
const RESERVED_BYTES = 4 * 1024 * 1024;
/** The journal's first bytes: the length of the JSON that follows (0: nothing kept). */
const HEADER_BYTES = 8;

/** Per key: endpoints, customers and (since usage over time; absent in older journals) minutes. */
type Serialised = [string, [string, [string, number[]][], [string, number[]][], [number, number[]][]?][]][];

function encode(held: readonly HeldBatch[]): Serialised {
  return held.map(({ batchId, batch }) => [
    batchId,
    [...batch].map(([keyId, u]) => [
      keyId,
      [...u.endpoints].map(([e, c]) => [e, [c.requests, c.successful, c.failed, c.totalDurationMs]]),
      [...u.customers].map(([name, c]) => [name, [c.requests, c.successful, c.failed]]),
      [...u.minutes].map(([minute, c]) => [minute, [c.requests, c.successful, c.failed, c.rateLimited, c.totalDurationMs]]),
    ]),
  ]);
}

function decode(data: Serialised): HeldBatch[] {
  return data.map(([batchId, keys]) => ({
    batchId,
    batch: new Map(
      keys.map(([keyId, endpoints, customers, minutes = []]): [string, KeyUsage] => [
        keyId,
        {
          endpoints: new Map(endpoints.map(([e, [requests, successful, failed, totalDurationMs]]) => [e, { requests: requests!, successful: successful!, failed: failed!, totalDurationMs: totalDurationMs! }])),
          customers: new Map(customers.map(([name, [requests, successful, failed]]) => [name, { requests: requests!, successful: successful!, failed: failed! }])),
          minutes: new Map(
            minutes.map(([minute, [requests, successful, failed, rateLimited, totalDurationMs]]) => [
              minute,
              { requests: requests!, successful: successful!, failed: failed!, rateLimited: rateLimited!, totalDurationMs: totalDurationMs! },
            ]),
          ),
        },
      ]),
    ),
  }));
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
   * Keeps the oldest batches that fit in the reserved room, in place; returns the batches that did
   * not fit (or all of them when the file cannot be written).
   */
  save(held: readonly HeldBatch[]): HeldBatch[] {
    let kept = held.length;
    let body = Buffer.from(JSON.stringify(encode(held)));
    while (kept > 0 && body.length > RESERVED_BYTES - HEADER_BYTES) {
      kept--;
      body = Buffer.from(JSON.stringify(encode(held.slice(0, kept))));
    }
    if (kept === 0) return [...held];
    try {
      this.write(body);
    } catch {
      return [...held];
    }
    return held.slice(kept);
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
