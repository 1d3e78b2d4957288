import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { splitAt } from './split.js';
import {
  BODY_MATCH_MAX_BYTES_DEFAULT,
  readRequestBody,
  type RequestBody,
} from '../../../src/metering/request-body.js';

it('returns the bytes as sent, and their parse, however they arrive; too large exactly past the bound', async () => {
  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 150 }).map((bytes) => ({ bytes: Buffer.from(bytes), json: undefined })),
    fc.jsonValue().map((value) => ({
      bytes: Buffer.from(JSON.stringify(value)),
      json: JSON.parse(JSON.stringify(value)) as unknown,
    })),
  );
  await fc.assert(
    fc.asyncProperty(
      bodies,
      fc.array(fc.nat(), { maxLength: 6 }),
      fc.nat(120),
      async (body, cuts, maxBytes) => {
        const chunks = splitAt(body.bytes, cuts).map((chunk) => Buffer.from(chunk));
        const read = await readRequestBody(Readable.from(chunks), maxBytes);
        if (body.bytes.length > maxBytes) return expect(read).toEqual({ kind: 'too-large' });
        expect(read).toMatchObject({ kind: 'read', bytes: body.bytes });
        // Random bytes may happen to be JSON ("0"): only a JSON text's parse is known here.
        if (body.json !== undefined)
          expect(read).toEqual({ kind: 'read', bytes: body.bytes, json: body.json });
      },
    ),
    { numRuns: 300 },
  );
});

it('parses a JSON body once, and reads one that is not JSON as none', async () => {
  const body = { model: 'gpt-4o', max_tokens: 300 };
  expect(await readRequestBody(Readable.from([Buffer.from(JSON.stringify(body))]), 1024)).toEqual({
    kind: 'read',
    bytes: Buffer.from(JSON.stringify(body)),
    json: body,
  });
  expect(await readRequestBody(Readable.from([Buffer.from('{"model": ')]), 1024)).toMatchObject({
    json: undefined,
  });
  expect(await readRequestBody(Readable.from([]), 1024)).toEqual({
    kind: 'read',
    bytes: Buffer.alloc(0),
    json: undefined,
  });
});

it('allows 1 MiB by default', () => {
  expect(BODY_MATCH_MAX_BYTES_DEFAULT).toBe(1_048_576);
});

describe('over HTTP', () => {
  let server: Server;
  let url: URL;
  const outcomes: RequestBody[] = [];
  const readings: Promise<RequestBody>[] = [];
  const MAX = 64 * 1024;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const declared = req.headers['content-length'];
      const reading = readRequestBody(req, MAX, {
        length: declared === undefined ? undefined : Number(declared),
      });
      readings.push(reading);
      reading.then(
        (outcome) => {
          outcomes.push(outcome);
          if (outcome.kind === 'too-large') {
            res.writeHead(413, { connection: 'close' }).end('body_too_large');
          } else {
            res.writeHead(200).end(outcome.bytes); // what the proxy forwards: the bytes, unchanged
          }
        },
        () => {}, // the test awaits the rejection
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`);
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    outcomes.length = 0;
    readings.length = 0;
  });

  it('reads a body within the bound and hands back its bytes to forward', async () => {
    const body = JSON.stringify({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'é'.repeat(20_000) }],
    });
    const response = await fetch(url, { method: 'POST', body });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(body);
  });

  it('refuses a declared length over the bound before reading it', async () => {
    // Only 10 of the declared bytes are sent: a reader that waited for the body would never answer.
    const client = request(url, { method: 'POST', headers: { 'content-length': String(MAX + 1) } });
    client.on('error', () => {}); // the server closes the connection after its 413
    client.write('{"model": ');
    const response = await new Promise<IncomingMessage>((resolve) => client.on('response', resolve));
    expect(response.statusCode).toBe(413);
    expect(outcomes).toEqual([{ kind: 'too-large' }]);
    client.destroy();
  });

  it('stops a chunked body at the first byte past the bound', async () => {
    const chunks = async function* () {
      for (let i = 0; i < 100; i++) yield Buffer.alloc(1024, 0x20);
    };
    const response = await fetch(url, {
      method: 'POST',
      body: Readable.toWeb(Readable.from(chunks())) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(outcomes).toEqual([{ kind: 'too-large' }]);
  });

  it('rejects when the client leaves mid-body', async () => {
    const client = request(url, { method: 'POST', headers: { 'content-length': '1000' } });
    client.on('error', () => {});
    client.write('{"model": "gpt-4o"');
    await new Promise<void>((resolve) => server.once('request', () => setImmediate(resolve)));
    client.destroy();
    await expect(readings[0]).rejects.toMatchObject({ code: 'ECONNRESET' });
  });
});
