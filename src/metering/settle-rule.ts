import type { SettleRule } from '../plans/usage-pricing.js';
import { parsePointer, type JsonPointer } from '../plans/json-pointer.js';

export type { SettleRule };

/**
 * One amount the backend reports: the last integer seen at any of its pointers. A rule's units are
 * the sum of its quantities; each pointer of `json` is a quantity of its own. Every quantity must be
 * seen, but an `optional` one, a field only some servers send, which counts 0 when none is.
 */
export interface Quantity {
  readonly pointers: readonly JsonPointer[];
  readonly optional?: true;
}

const parsed = (texts: string[]) => texts.map((text) => parsePointer(text)!);
const quantity = (...texts: string[]): Quantity => ({ pointers: parsed(texts) });
const optional = (...texts: string[]): Quantity => ({ pointers: parsed(texts), optional: true });

const PRESETS: Record<Extract<SettleRule, { preset: string }>['preset'], readonly Quantity[]> = {
  // Chat completions and embeddings answer `usage`; a streamed chat completion reports it only in the
  // final chunk that `stream_options.include_usage` asks for. The Responses API streams its usage in
  // the response that `response.completed` (or `.incomplete`, `.failed`) carries.
  openai: [quantity('/usage/total_tokens', '/response/usage/total_tokens')],
  // `message_start` carries `message.usage`, `message_delta` a cumulative `usage`: the last of each counts.
  // `input_tokens` leaves out the prompt written to and read from the cache, which servers that cache
  // report beside it (the prompt is the three together); other servers send neither.
  anthropic: [
    quantity('/usage/input_tokens', '/message/usage/input_tokens'),
    quantity('/usage/output_tokens', '/message/usage/output_tokens'),
    optional('/usage/cache_creation_input_tokens', '/message/usage/cache_creation_input_tokens'),
    optional('/usage/cache_read_input_tokens', '/message/usage/cache_read_input_tokens'),
  ],
};

/**
 * The quantities a `json` or `preset` rule sums, or undefined when a `json` pointer is not a pointer
 * or there are not 1–4 of them (the plan schema refuses those; this keeps the meter from guessing).
 */
export function quantitiesOf(rule: Exclude<SettleRule, { header: string }>): readonly Quantity[] | undefined {
  if ('preset' in rule) return PRESETS[rule.preset];
  if (rule.json.length < 1 || rule.json.length > 4) return undefined;
  const pointers = rule.json.map(parsePointer);
  return pointers.every((pointer) => pointer !== undefined)
    ? pointers.map((pointer) => ({ pointers: [pointer] }))
    : undefined;
}
