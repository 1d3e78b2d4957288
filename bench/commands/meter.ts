// `npm run bench -- meter`: what reading a usage-priced answer's units costs, the built meters alone (in
// the bench's own process): answers an OpenAI-compatible API sends, each given to its meter in 64 KiB
// chunks as the proxy passes them, then ended. Per answer, the fastest of 9 readings and their median,
// and the bytes read a second. Sizes past the JSON bound (src/metering/meter-bounds.ts) are read too: it
// is lifted here, to price what it lets through.
import { gzipSync } from 'node:zlib';
import type * as DecodingModule from '../../src/metering/decoding-meter.ts';
import type * as BoundsModule from '../../src/metering/meter-bounds.ts';
import type * as OpenMeterModule from '../../src/metering/open-meter.ts';
import { builtModule } from '../lib/built-module.ts';
import { fmt, machine, median } from '../lib/report.ts';
import { buildTollgate } from '../lib/services.ts';

const READINGS = 9;
const CHUNK = 64 * 1024;

const USAGE = '"usage":{"prompt_tokens":8000,"completion_tokens":0,"total_tokens":8000}';

/** An embeddings answer of `count` vectors of `dims` numbers, base64 (the openai client's default) or a list. */
function embeddings(count: number, dims: number, base64: boolean): Buffer {
  const numbers = Array.from({ length: dims }, (_, i) => (Math.sin(i) / 20).toFixed(16)).join(',');
  const vector = base64 ? `"${Buffer.alloc(dims * 4, 7).toString('base64')}"` : `[${numbers}]`;
  const data = Array.from(
    { length: count },
    (_, i) => `{"object":"embedding","index":${i},"embedding":${vector}}`,
  ).join(',');
  return Buffer.from(`{"object":"list","data":[${data}],"model":"text-embedding-3-small",${USAGE}}`);
}

const chat = Buffer.from(
  `{"id":"chatcmpl-bench","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"${'Tokens are counted where they are spent. '.repeat(20)}"},"finish_reason":"stop"}],${USAGE}}`,
);
const stream = Buffer.from(
  Array.from(
    { length: 199 },
    (_, i) =>
      `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"token ${i} "}}]}\n\n`,
  ).join('') + `data: {"object":"chat.completion.chunk","choices":[],${USAGE}}\n\ndata: [DONE]\n\n`,
);

const ANSWERS = [
  { name: 'a chat answer', body: chat, type: 'application/json' },
  { name: 'the same in gzip (read decoded)', body: gzipSync(chat), type: 'application/json', coding: 'gzip' },
  { name: 'a stream of 200 events', body: stream, type: 'text/event-stream' },
  {
    name: 'embeddings, 2,048 × 1,536, base64',
    body: embeddings(2_048, 1_536, true),
    type: 'application/json',
  },
  {
    name: 'embeddings, 2,048 × 3,072, base64',
    body: embeddings(2_048, 3_072, true),
    type: 'application/json',
  },
  {
    name: 'embeddings, 1,000 × 1,536, numbers',
    body: embeddings(1_000, 1_536, false),
    type: 'application/json',
  },
] as const;

export async function meter(): Promise<string> {
  if (!buildTollgate()) throw new Error('Tollgate is not built');
  const { openMeter } = await builtModule<typeof OpenMeterModule>('metering/open-meter.js');
  const { decodedMeter } = await builtModule<typeof DecodingModule>('metering/decoding-meter.js');
  const { METER_BOUNDS_DEFAULT } = await builtModule<typeof BoundsModule>('metering/meter-bounds.js');
  const bounds = { ...METER_BOUNDS_DEFAULT, documentMaxBytes: Number.MAX_SAFE_INTEGER };
  const rows = ANSWERS.map((answer) => {
    const coding = 'coding' in answer ? answer.coding : undefined;
    const headers = { 'content-type': answer.type, 'content-encoding': coding };
    // Small answers are read many times a reading, so that each takes milliseconds.
    const times = Math.max(1, Math.round((4 * 2 ** 20) / answer.body.length));
    const readOnce = () => {
      const reader = decodedMeter(openMeter({ preset: 'openai' }, headers, bounds)!, coding);
      for (let at = 0; at < answer.body.length; at += CHUNK)
        reader.write(answer.body.subarray(at, at + CHUNK));
      const reading = reader.end({ complete: true });
      if (!reading.settled || reading.units !== 8_000)
        throw new Error(`${answer.name}: read ${JSON.stringify(reading)}`);
    };
    const msPerAnswer: number[] = [];
    for (let r = 0; r < READINGS; r++) {
      const started = performance.now();
      for (let t = 0; t < times; t++) readOnce();
      msPerAnswer.push((performance.now() - started) / times);
    }
    const fastest = Math.min(...msPerAnswer);
    const mib = answer.body.length / 2 ** 20;
    return `| ${answer.name} | ${fmt(mib, mib < 1 ? 3 : 1)} | ${fmt(fastest, 3)} / ${fmt(median(msPerAnswer), 3)} | ${fmt(mib / (fastest / 1000))} |`;
  });
  return [
    machine(),
    '',
    `Each answer read through its meter (the \`openai\` preset) in ${CHUNK / 1024} KiB chunks, ${READINGS} readings:`,
    '',
    '| answer | MiB | ms an answer (fastest / median) | MiB/s (fastest) |',
    '|---|--:|--:|--:|',
    ...rows,
  ].join('\n');
}
