import { isDatabaseUnavailable } from '../../src/management/db-errors.js';

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['connection refused', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    [
      'both addresses refused',
      new AggregateError([withCode('', 'ECONNREFUSED'), withCode('', 'ECONNREFUSED')], ''),
    ],
    ['connection terminated', new Error('Connection terminated unexpectedly')],
    ['pool connect timeout', new Error('timeout exceeded when trying to connect')],
    [
      'pool connect timeout with cause',
      new Error('Connection terminated due to connection timeout', { cause: new Error('x') }),
    ],
    ['query timeout', new Error('Query read timeout')],
    ['admin shutdown', withCode('terminating connection due to administrator command', '57P01')],
    ['starting up', withCode('the database system is starting up', '57P03')],
    ['too many connections', withCode('sorry, too many clients already', '53300')],
    ['connection exception class 08', withCode('connection failure', '08006')],
    ['destroyed Kysely', new Error('driver has already been destroyed')],
    ['wrapped cause', new Error('query failed', { cause: withCode('read ECONNRESET', 'ECONNRESET') })],
  ])('recognises %s', (_label, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('duplicate key value violates unique constraint', '23505')],
    ['a syntax error', withCode('syntax error at or near "selec"', '42601')],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a non-error', 'ECONNREFUSED'],
    ['nothing', undefined],
  ])('does not mistake %s for an outage', (_label, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});
