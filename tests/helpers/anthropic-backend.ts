/**
 * A backend that speaks Anthropic's messages API (`POST /v1/messages`), JSON and, with `stream: true`,
 * the events message_start (`message.usage`), content_block_start, ping, content_block_delta,
 * content_block_stop, message_delta (the cumulative `usage`, repeating `input_tokens`) and message_stop.
 * It reports the usage the test sets in `usage`, with the prompt written to and read from the cache
 * beside `input_tokens` when the test sets them, as Anthropic's API does.
 */
import { backendOf, sendEvents, sendJson, wordsOf } from './model-backend.js';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

export const startAnthropicBackend = backendOf<AnthropicUsage>(
  ({ model, stream }, { output_tokens, ...input }, reply, response) => {
    const message = {
      id: 'msg_meter',
      type: 'message',
      role: 'assistant',
      model: String(model),
      stop_sequence: null,
    };
    if (stream !== true) {
      return sendJson(response, {
        ...message,
        content: [{ type: 'text', text: reply }],
        stop_reason: 'end_turn',
        usage: { ...input, output_tokens },
      });
    }
    const event = (type: string, data: Record<string, unknown>): [string, string] => [
      type,
      JSON.stringify({ type, ...data }),
    ];
    const words = wordsOf(reply);
    sendEvents(response, [
      event('message_start', {
        message: { ...message, content: [], stop_reason: null, usage: { ...input, output_tokens: 1 } },
      }),
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('ping', {}),
      ...words.map((text) => event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
      event('content_block_stop', { index: 0 }),
      event('message_delta', {
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { ...input, output_tokens },
      }),
      event('message_stop', {}),
    ]);
  },
);
