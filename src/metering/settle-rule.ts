import type { SettleRule } from '../plans/usage-pricing.js';
import { parsePointer, type JsonPointer } from '../plans/json-pointer.js';

export type { SettleRule };

/**
 * One amount the backend reports: the last integer seen at any of these pointers. A rule's units are
 * the sum of its quantities; each pointer of `json` is a quantity of its own.
 */
export type Quantity = readonly JsonPointer[];

const pointers = (...texts: string[]): Quantity => texts.map((text) => parsePointer(text)!);

const PRESETS: Record<Extract<SettleRule, { preset: string }>['preset'], readonly Quantity[]> = {
  // Chat completions and embeddings answer `usage`; a streamed chat completion reports it only in the
  // final chunk that `stream_options.include_usage` asks for. The Responses API streams its usage in
  // the response that `response.completed` (or `.incomplete`, `.failed`) carries.
  openai: [pointers('/usage/total_tokens', '/response/usage/total_tokens')],
  // `message_start` carries `message.usage`, `message_delta` a cumulative `usage`: the last of each counts.
  anthropic: [
    pointers('/usage/input_tokens', '/message/usage/input_tokens'),
    pointers('/usage/output_tokens', '/message/usage/output_tokens'),
  ],
};

/**
 * The quantities a `json` or `preset` rule sums, or undefined when a `json` pointer is not a pointer
 * or there are not 1–4 of them (the plan schema refuses those; this keeps the meter from guessing).
 */
export function quantitiesOf(rule: Exclude<SettleRule, { header: string }>): readonly Quantity[] | undefined {
  if ('preset' in rule) return PRESETS[rule.preset];
  if (rule.json.length < 1 || rule.json.length > 4) return undefined;
  const parsed = rule.json.map(parsePointer);
  return parsed.every((pointer) => pointer !== undefined) ? parsed.map((pointer) => [pointer]) : undefined;
}
