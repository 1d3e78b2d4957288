/**
 * A backend that speaks OpenAI's chat completions API (`POST /v1/chat/completions`), JSON and, with
 * `stream: true`, server-sent chunks ending in `data: [DONE]`; with `stream_options.include_usage`
 * the final chunk, with no choices, carries the usage; and its embeddings API (`POST /v1/embeddings`, a
 * body with `input`): one vector of 1,536 numbers an input, in base64 when asked (as the `openai`
 * client does), the usage last. It reports the usage the test sets in `usage`.
 */
import type { ServerResponse } from 'node:http';
import { backendOf, sendEvents, sendJson, wordsOf } from './model-backend.js';

export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export const startOpenAiBackend = backendOf<OpenAiUsage>(
  (body, { prompt_tokens, completion_tokens }, reply, response) => {
    if (body.input !== undefined) return sendEmbeddings(body, prompt_tokens, response);
    const reported = { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
    const head = { id: 'chatcmpl-meter', created: 1_764_000_000, model: String(body.model) };
    if (body.stream !== true) {
      return sendJson(response, {
        ...head,
        object: 'chat.completion',
        choices: [
          { index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop', logprobs: null },
        ],
        usage: reported,
      });
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage;
    const chunk = (choices: unknown[], withUsage: unknown) =>
      JSON.stringify({
        ...head,
        object: 'chat.completion.chunk',
        choices,
        ...(includeUsage ? { usage: withUsage } : {}),
      });
    const words = wordsOf(reply);
    sendEvents(response, [
      [
        undefined,
        chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], null),
      ],
      ...words.map((word): [undefined, string] => [
        undefined,
        chunk([{ index: 0, delta: { content: word }, finish_reason: null }], null),
      ]),
      [undefined, chunk([{ index: 0, delta: {}, finish_reason: 'stop' }], null)],
      ...(includeUsage ? [[undefined, chunk([], reported)] as [undefined, string]] : []),
      [undefined, '[DONE]'],
    ]);
  },
);

const DIMENSIONS = 1_536;

function sendEmbeddings(body: Record<string, unknown>, tokens: number, response: ServerResponse): void {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const numbers = Array.from({ length: DIMENSIONS }, (_, i) => Math.sin(i) / 20);
  const embedding =
    body.encoding_format === 'base64'
      ? Buffer.from(new Float32Array(numbers).buffer).toString('base64')
      : numbers;
  sendJson(response, {
    object: 'list',
    data: inputs.map((_, index) => ({ object: 'embedding', index, embedding })),
    model: String(body.model),
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}
