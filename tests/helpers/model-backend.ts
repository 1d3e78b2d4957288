/**
 * An HTTP server on 127.0.0.1 that plays a language-model API for the metering tests: it records every
 * request as sent (headers and the exact body bytes) and answers with what `answer` writes, the
 * usage figures a test chose. `openai-backend.ts` and `anthropic-backend.ts` give it each API's shapes.
 * Given a content coding, it answers in it whoever asks for it (`Accept-Encoding`), as the hosted APIs do.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createBrotliCompress, createDeflate, createGzip, createZstdCompress } from 'node:zlib';
import type { Transform } from 'node:stream';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export type Answer = (
  request: RecordedRequest,
  json: Record<string, unknown>,
  response: ServerResponse,
) => void;

export class ModelBackend {
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];

  private constructor(
    private readonly server: Server,
    /** The server's root, e.g. `http://127.0.0.1:41234`. */
    readonly url: string,
  ) {}

  static async start(answer: Answer, coding?: Coding): Promise<ModelBackend> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const backend = new ModelBackend(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('request', (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const recorded = {
          method: request.method!,
          path: request.url!,
          headers: request.headers,
          body: Buffer.concat(chunks),
        };
        backend.requests.push(recorded);
        if (coding !== undefined && accepts(request.headers['accept-encoding'], coding))
          encodeAnswer(response, coding);
        answer(recorded, JSON.parse(recorded.body.toString('utf8')) as Record<string, unknown>, response);
      });
    });
    return backend;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** What the backends answer unless told otherwise, in words streamed one an event. */
export const REPLY = 'Tokens are counted where they are spent.';
export const wordsOf = (reply: string) => reply.split(/(?<= )/);

/**
 * Answers one request of an API: from its JSON body, the usage the test set, and the reply to give;
 * `path` is the request's, for an API of several endpoints.
 */
export type ApiAnswer<Usage> = (
  body: Record<string, unknown>,
  usage: Usage,
  reply: string,
  response: ServerResponse,
  path: string,
) => void;

/**
 * Starts a backend answering with `answer`, reporting `usage()` for each request, in `coding` to a
 * client that accepts it.
 */
export const backendOf =
  <Usage>(answer: ApiAnswer<Usage>) =>
  (usage: () => Usage, reply = REPLY, coding?: Coding): Promise<ModelBackend> =>
    ModelBackend.start(
      (request, body, response) => answer(body, usage(), reply, response, request.path),
      coding,
    );

/** The content codings a backend may answer in. */
export type Coding = 'gzip' | 'deflate' | 'br' | 'zstd';

const ENCODERS: Record<Coding, () => Transform> = {
  gzip: () => createGzip(),
  deflate: () => createDeflate(),
  br: () => createBrotliCompress(),
  zstd: () => createZstdCompress(),
};

const accepts = (acceptEncoding: string | undefined, coding: Coding) =>
  (acceptEncoding ?? '').split(',').some((accepted) => accepted.trim().split(';')[0] === coding);

/**
 * Makes `response` send its body in `coding`, each write flushed at once so that a stream's events
 * still leave one by one, as a server that compresses a stream does.
 */
function encodeAnswer(response: ServerResponse, coding: Coding): void {
  const encoder = ENCODERS[coding]();
  const [writeHead, write, end] = [response.writeHead, response.write, response.end];
  encoder.on('data', (chunk: Buffer) => (write as (chunk: Buffer) => boolean).call(response, chunk));
  encoder.on('end', () => (end as () => ServerResponse).call(response));
  response.writeHead = ((status: number, headers: Record<string, string>) =>
    writeHead.call(response, status, {
      ...headers,
      'content-encoding': coding,
      vary: 'accept-encoding',
    })) as ServerResponse['writeHead'];
  response.write = ((chunk: string) => {
    encoder.write(chunk);
    (encoder as Transform & { flush(): void }).flush();
    return true;
  }) as ServerResponse['write'];
  response.end = ((chunk?: string) => {
    if (chunk !== undefined) encoder.write(chunk);
    encoder.end();
    return response;
  }) as ServerResponse['end'];
}

/** Answers JSON. */
export function sendJson(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * Answers a `text/event-stream` of these events (`[name, data]`, name undefined for none), each written
 * in two pieces cut mid-line, so a reader meets events split across chunks as a network splits them.
 */
export function sendEvents(response: ServerResponse, events: readonly [string | undefined, string][]): void {
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  for (const [name, data] of events) {
    const text = `${name === undefined ? '' : `event: ${name}\n`}data: ${data}\n\n`;
    const cut = Math.floor(text.length / 2);
    response.write(text.slice(0, cut));
    response.write(text.slice(cut));
  }
  response.end();
}
