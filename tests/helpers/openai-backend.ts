/**
 * A backend that speaks OpenAI's chat completions API (`POST /v1/chat/completions`), JSON and, with
 * `stream: true`, server-sent chunks ending in `data: [DONE]`; with `stream_options.include_usage`
 * the final chunk, with no choices, carries the usage; its Responses API (`POST /v1/responses`), JSON
 * and, with `stream: true`, named events from `response.created` to `response.completed`, whose
 * response carries the usage (and, asked for the image tool, a generated image of megabytes); and its embeddings API (`POST /v1/embeddings`): one vector of 1,536
 * numbers an input, in base64 when asked (as the `openai` client does), the usage last. It reports the
 * usage the test sets in `usage`.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { backendOf, sendEvents, sendJson, wordsOf } from './model-backend.js';

export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export const startOpenAiBackend = backendOf<OpenAiUsage>(
  (body, { prompt_tokens, completion_tokens }, reply, response, path) => {
    if (path.endsWith('/embeddings')) return sendEmbeddings(body, prompt_tokens, response);
    if (path.endsWith('/responses'))
      return sendResponse(body, prompt_tokens, completion_tokens, reply, response);
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

/** A Responses API answer: the response object, or its events as they stream. */
function sendResponse(
  body: Record<string, unknown>,
  input_tokens: number,
  output_tokens: number,
  reply: string,
  response: ServerResponse,
): void {
  const message = {
    type: 'message',
    id: 'msg_meter',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: reply, annotations: [] }],
  };
  const answer = (status: string, output: unknown[], usage: unknown) => ({
    id: 'resp_meter',
    object: 'response',
    created_at: 1_764_000_000,
    model: String(body.model),
    status,
    output,
    usage,
  });
  const usage = {
    input_tokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input_tokens + output_tokens,
  };
  // Asked for the image tool, it also answers an image, in the response and, streamed, as a partial.
  const drawing = Array.isArray(body.tools) && body.tools.some((tool) => tool?.type === 'image_generation');
  const image = { type: 'image_generation_call', id: 'ig_meter', status: 'completed', result: IMAGE };
  const output = drawing ? [message, image] : [message];
  if (body.stream !== true) return sendJson(response, answer('completed', output, usage));
  let sequence_number = 0;
  const event = (type: string, fields: Record<string, unknown>): [string, string] => [
    type,
    JSON.stringify({ type, sequence_number: sequence_number++, ...fields }),
  ];
  const partial = { item_id: image.id, output_index: 1, partial_image_index: 0, partial_image_b64: IMAGE };
  sendEvents(response, [
    event('response.created', { response: answer('in_progress', [], null) }),
    ...wordsOf(reply).map((delta) =>
      event('response.output_text.delta', { item_id: message.id, output_index: 0, content_index: 0, delta }),
    ),
    ...(drawing ? [event('response.image_generation_call.partial_image', partial)] : []),
    event('response.completed', { response: answer('completed', output, usage) }),
  ]);
}

/**
 * A generated image as the Responses API returns one, in base64: megabytes in one event. Random bytes,
 * as a PNG's are compressed already: a backend's gzip shrinks its base64 by a quarter, no more.
 */
const IMAGE = randomBytes(2 * 1024 * 1024).toString('base64');

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
