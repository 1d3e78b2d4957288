// Loads compared in alternating rounds (the first load first in even rounds, last in odd ones), so a
// machine that slows down during a run weighs on each alike; medians per load.
import { ROUNDS, WARMUP, DURATION, log } from './config.ts';
import { fmt, median, ratio } from './report.ts';
import type { WrkResult } from './wrk.ts';

export type Loads<K extends string> = Readonly<Record<K, (seconds: number) => Promise<WrkResult>>>;

/** Warms every load up, then runs ROUNDS rounds of DURATION s of each; every load's results, in order. */
export async function alternatingRounds<K extends string>(loads: Loads<K>): Promise<Map<K, WrkResult[]>> {
  const ids = Object.keys(loads) as K[];
  const rounds = new Map<K, WrkResult[]>(ids.map((id) => [id, []]));
  for (const id of ids) await loads[id](WARMUP);
  for (let round = 0; round < ROUNDS; round++) {
    for (const id of round % 2 === 0 ? ids : [...ids].reverse()) {
      const r = await loads[id](DURATION);
      rounds.get(id)!.push(r);
      log(`round ${round + 1}/${ROUNDS} ${id}: ${fmt(r.rps)} req/s`);
    }
  }
  return rounds;
}

/**
 * `| label | req/s | ÷ base | ÷ it, round by round (median) | p99 ms | req/s per round |` rows, the
 * header first; `base` names the load divided by. The round-by-round column is the median of each round's
 * ratio to the base's run beside it: a machine whose speed drifts between rounds moves both loads of a
 * round alike, where a ratio of medians can set a fast round of one against a slow round of the other.
 */
export function roundsTable<K extends string>(
  rounds: ReadonlyMap<K, readonly WrkResult[]>,
  label: Readonly<Record<K, string>>,
  base: K,
): string[] {
  const baseRounds = rounds.get(base)!;
  const baseRps = median(baseRounds.map((r) => r.rps));
  return [
    `| request | req/s | ÷ ${label[base]} | ÷ it, round by round (median) | p99 ms | req/s per round |`,
    '|---|--:|--:|--:|--:|---|',
    ...[...rounds].map(([id, rs]) => {
      const rps = median(rs.map((r) => r.rps));
      const paired = median(rs.map((r, i) => r.rps / baseRounds[i]!.rps));
      return `| ${label[id]} | ${fmt(rps)} | ${ratio(rps, baseRps)} | ${ratio(paired, 1)} | ${fmt(median(rs.map((r) => r.p99)), 2)} | ${rs.map((r) => fmt(r.rps)).join(' / ')} |`;
    }),
  ];
}
