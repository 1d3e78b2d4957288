/**
 * Which database errors set a usage batch aside (decision record 0145): a refusal of the data itself,
 * never the database's state, which is retried in order as before.
 */
import { describe, expect, it } from '@jest/globals';
import { isRefusedData } from '../../src/usage/set-aside.js';

const withCode = (code: string) => Object.assign(new Error('refused'), { code });

describe('isRefusedData', () => {
  it('is a data exception (class 22), an integrity constraint (class 23) or a trigger’s RAISE', () => {
    for (const code of ['22021', '22001', '22003', '22P02', '23514', '23502', '23505', '23503', 'P0001'])
      expect({ code, refused: isRefusedData(withCode(code)) }).toEqual({ code, refused: true });
  });

  it('is not the database being away, full, read-only, shutting down or in a deadlock', () => {
    for (const code of [
      '08006',
      '08001',
      '53100',
      '53300',
      '57P01',
      '40P01',
      '40001',
      '25006',
      '58030',
      '55P03',
    ])
      expect({ code, refused: isRefusedData(withCode(code)) }).toEqual({ code, refused: false });
    for (const err of [new Error('connect ECONNREFUSED'), withCode('ECONNREFUSED'), undefined, 'text'])
      expect(isRefusedData(err)).toBe(false);
  });
});
