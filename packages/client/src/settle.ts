/**
 * Settling a request whose cost only its response tells (docs/guides/usage-priced-apis.md#verify): the
 * units the handler's response reports are read beside it, by the Tollgate proxy's own meters (copied
 * into generated/metering/: a header, JSON pointers, the `openai` and `anthropic` presets, JSON bodies
 * and event streams alike), and once it has ended the reservation verify made is settled at them.
 */
import type { ServerResponse } from 'node:http';
import type { TollgateConnection } from './connection.js';
import { METER_BOUNDS_DEFAULT } from './generated/metering/meter-bounds.js';
import { openMeter } from './generated/metering/open-meter.js';
import type { HeaderBag, UnitMeter } from './generated/metering/unit-meter.js';
import type { SettleRule } from './generated/plans/usage-pricing.js';
import type { components } from './generated/management-api.js';
import { TollgateVerifyError, VERIFY_PATH } from './verify.js';

export type { SettleRule } from './generated/plans/usage-pricing.js';
/** What a settle call answers: the units the request cost, and what the settlement charged (units − reserved). */
export type SettleAnswer = components['schemas']['VerifySettleResponse'];

export const SETTLE_PATH = `${VERIFY_PATH}/settle`;

/**
 * Settles reservation `reservationId` (a verify answer's, or a gateway's `x-tollgate-reservation`) at
 * `units`: `units − reserved` is charged to what it was charged to, and the request counted at `units`.
 * Throws TollgateVerifyError with code `reservation_not_found` when it is unknown, settled already or
 * too old.
 */
export async function settleReservation(
  connection: TollgateConnection,
  reservationId: string,
  units: number,
): Promise<SettleAnswer> {
  const response = await fetch(connection.baseUrl.replace(/\/+$/, '') + SETTLE_PATH, {
    method: 'POST',
    headers: { authorization: `Bearer ${connection.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ reservationId, units }),
  });
  const text = await response.text();
  if (response.status !== 200) throw TollgateVerifyError.of(response.status, text);
  return JSON.parse(text) as SettleAnswer;
}

export interface ResponseSettling {
  /** How the response reports its units: the forms of a plan's cost entry `settle`. */
  readonly settle: SettleRule;
  /** Units above this are cut to it, as a cost entry's `settleMax`; default 10,000,000. */
  readonly settleMax?: number;
  /**
   * Told the settle call's answer, or why there is none: a response that reported nothing readable
   * (an `Error` naming the reason; the reservation then stays the request's cost), or the call failing.
   */
  readonly onSettled?: (outcome: SettleAnswer | Error) => void;
}

type Headers = Readonly<Record<string, unknown>> | readonly unknown[] | undefined;

/** The response's headers: those set on it, and those `writeHead` was given (Fastify sets them so). */
function headerBagOf(res: ServerResponse, given: Headers): HeaderBag {
  const bag: Record<string, string | string[]> = {};
  const add = (name: unknown, value: unknown) => {
    if (value !== undefined && value !== null)
      bag[String(name).toLowerCase()] = Array.isArray(value) ? value.map(String) : String(value);
  };
  for (const [name, value] of Object.entries(res.getHeaders())) add(name, value);
  if (Array.isArray(given)) for (let i = 0; i + 1 < given.length; i += 2) add(given[i], given[i + 1]);
  else if (given !== undefined) for (const [name, value] of Object.entries(given)) add(name, value);
  return bag;
}

type Write = ServerResponse['write'];
type End = ServerResponse['end'];
type WriteHead = ServerResponse['writeHead'];

/**
 * Reads the units of `res` as it is written (each chunk goes out first) and, once it has ended,
 * settles `reservationId` at them. A response cut short, or that reports nothing readable, is not
 * settled: its reservation stays its cost.
 */
export function settleFromResponse(
  connection: TollgateConnection,
  options: ResponseSettling,
  reservationId: string,
  res: ServerResponse,
): void {
  let meter: UnitMeter | undefined | null = null;
  let given: Headers;
  const bounds = { ...METER_BOUNDS_DEFAULT, settleMax: options.settleMax ?? METER_BOUNDS_DEFAULT.settleMax };
  const read = (chunk: unknown, encoding: unknown): void => {
    meter ??= openMeter(options.settle, headerBagOf(res, given), bounds);
    if (meter === undefined || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    if (typeof chunk === 'string')
      meter.write(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    else if (chunk instanceof Uint8Array) meter.write(chunk);
  };
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    const last = rest[rest.length - 1];
    if (typeof last === 'object' && last !== null) given = last as Headers;
    return (writeHead as (...args: unknown[]) => ServerResponse).call(this, status, ...rest);
  } as WriteHead;
  const write = res.write;
  const end = res.end;
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    const written = (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    read(chunk, rest[0]);
    return written;
  } as Write;
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    const ended = (end as (...args: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    read(chunk, rest[0]);
    return ended;
  } as End;
  res.once('close', () => {
    meter ??= openMeter(options.settle, headerBagOf(res, given), bounds);
    const reading = meter?.end({ complete: res.writableFinished }) ?? {
      settled: false as const,
      reason: 'malformed' as const,
    };
    const told = options.onSettled ?? (() => {});
    if (!reading.settled) return told(new Error(`the response reported no units (${reading.reason})`));
    settleReservation(connection, reservationId, reading.units).then(told, (err: unknown) =>
      told(err instanceof Error ? err : new Error(String(err))),
    );
  });
}
