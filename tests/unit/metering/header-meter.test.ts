import { openMeter } from '../../../src/metering/open-meter.js';
import type { HeaderBag } from '../../../src/metering/unit-meter.js';

const read = (headers: HeaderBag, trailers?: HeaderBag, complete = true) => {
  const meter = openMeter({ header: 'X-Units' }, headers)!;
  meter.write(Buffer.from('{"the body": "is not read"}'));
  return meter.end({ complete, trailers });
};

it.each([
  [{ 'x-units': '42' }, undefined, { settled: true, units: 42 }],
  [{ 'x-units': ' 42 ' }, undefined, { settled: true, units: 42 }],
  [{}, { 'x-units': '17' }, { settled: true, units: 17 }], // a trailer, sent after the body
  [{ 'x-units': '5' }, { 'x-units': '17' }, { settled: true, units: 5 }],
  [{ 'x-units': '99999999999999999999' }, undefined, { settled: true, units: 10_000_000 }],
  [{}, undefined, { settled: false, reason: 'not-reported' }],
  [{ 'x-units': '4.5' }, undefined, { settled: false, reason: 'malformed' }],
  [{ 'x-units': '-4' }, undefined, { settled: false, reason: 'malformed' }],
  [{ 'x-units': '' }, undefined, { settled: false, reason: 'malformed' }],
  [{ 'x-units': ['1', '2'] }, undefined, { settled: false, reason: 'malformed' }],
])('headers %j, trailers %j → %j', (headers: HeaderBag, trailers: HeaderBag | undefined, reading) => {
  expect(read(headers, trailers)).toEqual(reading);
});

it('is unsettled when the response was cut short, though the header came', () => {
  expect(read({ 'x-units': '42' }, undefined, false)).toEqual({ settled: false, reason: 'cut-short' });
});
