// The consume script's reply (consume-script.ts), read by position.

/**
 * The script's reply as it comes, unparsed (one call per request for keys in rotation): 2 and the
 * lost limits and balances (1-based) when Redis lost keys of the call; else: 1 when requests did not fit while leased units are being asked back (ask again shortly); per limit i, its
 * count after the call and, for a sliding limit, the oldest slot that still holds units (0 for a fixed
 * limit; for a token bucket its parts and units leased out, bucketPartsOf; for a concurrency limit the places
 * leased to the caller's pool); per subject, the units leased to it (the last ones of each of its counts); per balance, its
 * epoch, window, and units granted and spent after the call as decimal strings (exact up to 2^53 - 1,
 * which an integer reply is not: ioredis parses it through a double); per run, how many of its requests were
 * admitted (its first ones).
 */
export type ConsumeReply = readonly (number | string)[];

/** How many limits, subjects and balances a call had: where each part of its reply is. */
export interface ReplyLayout {
  readonly limits: number;
  readonly subjects: number;
  readonly balances: number;
}

export function heldOf(reply: ConsumeReply): boolean {
  return reply[0] === 1;
}

/**
 * When Redis lost keys of the call (nothing was decided): the limits (their index in KEYS order) and
 * the balances (the number of limits plus theirs) found lost; else undefined.
 */
export function lostOf(
  reply: ConsumeReply,
  limits: number,
): { limits: number[]; balances: number[] } | undefined {
  if (reply[0] !== 2) return undefined;
  const lost = (reply.slice(1) as number[]).map((i) => i - 1);
  return {
    limits: lost.filter((i) => i < limits),
    balances: lost.filter((i) => i >= limits).map((i) => i - limits),
  };
}

/** Limit i's count after the call (counting every limit of every subject, in KEYS order). */
export function countOf(reply: ConsumeReply, i: number): number {
  return reply[1 + 2 * i] as number;
}

/** Limit i's oldest slot holding units (sliding limits). */
export function oldestSlotOf(reply: ConsumeReply, i: number): number {
  return reply[2 + 2 * i] as number;
}

/**
 * Token bucket i's parts, and the units leased out of it and not yet settled (in its count, which is what
 * it lacks of its burst for requests: the bucket itself holds them until they are used).
 */
export function bucketPartsOf(reply: ConsumeReply, i: number): { parts: number; outstanding: number } {
  const [parts, outstanding] = reply[2 + 2 * i] as unknown as readonly [number, number];
  return { parts, outstanding };
}

/** Concurrency limit i's places leased to the caller's pool (concurrency-places.ts). */
export function placesLeasedOf(reply: ConsumeReply, i: number): number {
  return reply[2 + 2 * i] as number;
}

/** Units leased to subject s. */
export function leasedOf(reply: ConsumeReply, layout: ReplyLayout, s: number): number {
  return reply[1 + 2 * layout.limits + s] as number;
}

/** Balance k after the call (the balances of the call's subjects, in order). */
export function balanceOf(
  reply: ConsumeReply,
  layout: ReplyLayout,
  k: number,
): { epoch: number; window: number; granted: number; spent: number } {
  const at = 1 + 2 * layout.limits + layout.subjects + 4 * k;
  return {
    epoch: reply[at] as number,
    window: reply[at + 1] as number,
    granted: Number(reply[at + 2]),
    spent: Number(reply[at + 3]),
  };
}

/** Requests of run r admitted. */
export function admittedOf(reply: ConsumeReply, layout: ReplyLayout, r: number): number {
  return reply[1 + 2 * layout.limits + layout.subjects + 4 * layout.balances + r] as number;
}

/** The shifts of a subject of one limit. */
export const NO_SHIFTS: readonly number[] = [0];

/**
 * The counts of limits `first` … `first + length - 1` (one subject's) less the first's: the units a call
 * took are the last ones of every count, so the first limit's unit p is unit p + shift of limit i.
 */
export function shiftsOf(reply: ConsumeReply, first: number, length: number): readonly number[] {
  if (length === 1) return NO_SHIFTS;
  const base = countOf(reply, first);
  return Array.from({ length }, (_, i) => countOf(reply, first + i) - base);
}
