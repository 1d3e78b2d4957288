/** A bucket as its row's columns and back: each count in the column BUCKET_COLUMNS names for it. */
import { describe, expect, it } from '@jest/globals';
import { BUCKET_COLUMNS, NUMBER_COLUMNS, bucketOf, bucketRow } from '../../src/usage/bucket-columns.js';
import { emptyBucket, type BucketCounts } from '../../src/usage/usage.js';

describe('bucket columns', () => {
  it('writes each count of a bucket in its own column, and reads it back from there', () => {
    const bucket: BucketCounts = { ...emptyBucket(), latency: new Map([[7, 2]]) };
    // A different count in each field: a count written to another's column reads back wrong.
    Object.keys(BUCKET_COLUMNS).forEach(
      (measure, i) => ((bucket as unknown as Record<string, number>)[measure] = i + 1),
    );
    const row = bucketRow(bucket);
    expect(Object.keys(row).sort()).toEqual([...NUMBER_COLUMNS, 'latency'].sort());
    for (const [measure, column] of Object.entries(BUCKET_COLUMNS))
      expect([column, row[column]]).toEqual([column, (bucket as unknown as Record<string, number>)[measure]]);
    expect(row.latency).toBe('{"7":2}');
    expect(bucketOf(row)).toEqual({ ...bucket, latency: new Map() });
  });

  it('writes a count that usage of an earlier version lacks as 0', () => {
    const { unsettled: _, concurrencyLimited: __, ...older } = { ...emptyBucket(), requests: 3 };
    const row = bucketRow(older as BucketCounts);
    expect(row).toMatchObject({ requests: 3, unsettled: 0, concurrency_limited: 0 });
  });
});
