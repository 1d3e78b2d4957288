import { dropsEntries, type KeyChange } from './key-events.js';

/** What changed, during a look-up, of what it read: a change dropped it, or made it to be checked again. */
export type LookUpRace = 'dropped' | 'rechecked' | undefined;

/**
 * The key changes announced while look-ups are under way, kept only so long: a look-up that read a key
 * before a change of that key (or of its plan or consumer) must not keep what it read as fresh, while a
 * change of another key leaves it alone. With look-ups under way for long and changes pouring in, past
 * `max` kept the oldest are let go, and a look-up that began before them takes itself as dropped.
 */
export class ChangesDuringLookUps {
  private readonly kept: { readonly number: number; readonly change: KeyChange }[] = [];
  /** How many changes have been announced. */
  private count = 0;
  /** Changes numbered up to this one are not kept. */
  private forgottenUpTo = 0;
  private underWay = 0;

  constructor(private readonly max = 1_000) {}

  /** A look-up begins: its mark, for `raced`. */
  begin(): number {
    this.underWay++;
    return this.count;
  }

  /** Whether any change was announced since a look-up began at `mark`, of whatever key. */
  since(mark: number): boolean {
    return this.count > mark;
  }

  changed(change: KeyChange): void {
    this.count++;
    if (this.underWay === 0) this.forgottenUpTo = this.count;
    else if (this.kept.length < this.max) this.kept.push({ number: this.count, change });
    else {
      this.kept.length = 0;
      this.forgottenUpTo = this.count;
    }
  }

  /**
   * A look-up that began at `mark` is over; `concerns` tells whether a change is of what it read, and
   * what it does to what it concerns says what the look-up keeps (`dropsEntries`).
   */
  raced(mark: number, concerns: (change: KeyChange) => boolean): LookUpRace {
    const race = this.raceOf(mark, concerns);
    this.over();
    return race;
  }

  private raceOf(mark: number, concerns: (change: KeyChange) => boolean): LookUpRace {
    if (mark < this.forgottenUpTo) return 'dropped';
    let race: LookUpRace = undefined;
    for (const { number, change } of this.kept) {
      if (number <= mark || !concerns(change)) continue;
      if (dropsEntries(change)) return 'dropped';
      race = 'rechecked';
    }
    return race;
  }

  /** A look-up that began is over without a key to keep (it failed, or found none). */
  over(): void {
    if (--this.underWay > 0) return;
    this.kept.length = 0;
    this.forgottenUpTo = this.count;
  }
}
