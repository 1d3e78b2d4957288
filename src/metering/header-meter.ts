import { settled, unsettled, type Reading } from './reading.js';
import type { HeaderBag, UnitMeter } from './unit-meter.js';

/** The units in one response header, or in the trailer of that name when the header is absent. */
export class HeaderMeter implements UnitMeter {
  private readonly name: string;

  constructor(
    name: string,
    private readonly headers: HeaderBag,
    private readonly settleMax: number,
  ) {
    this.name = name.toLowerCase();
  }

  write(): void {}

  end({ complete, trailers }: { complete: boolean; trailers?: HeaderBag }): Reading {
    if (!complete) return unsettled('cut-short');
    const value = this.headers[this.name] ?? trailers?.[this.name];
    if (value === undefined) return unsettled('not-reported');
    // Several fields of that name are several answers: none is taken.
    if (typeof value !== 'string' || !/^[0-9]+$/.test(value.trim())) return unsettled('malformed');
    return settled(Number(value.trim()), this.settleMax);
  }
}
