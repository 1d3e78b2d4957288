/**
 * A per-model limit (`match.body`) holds for a request in any form its backend reads (docs/decisions/0240):
 * a real backend in Python (`json.loads` of the bytes, as FastAPI reads them) and a real Express one
 * (`express.json()`) each answer the model they read, and every request they read as the limited model
 * counts against its limit, in both modes: bodies after a byte order mark, in UTF-16 and UTF-32, with
 * Python's bare `NaN`, and in content codings. A coded body that decodes past BODY_MATCH_MAX_BYTES is
 * refused 413 `body_too_large`, as a plain one that large is, and never reaches the backend; so is a
 * body whose content type names UTF-7, which Express reads otherwise than Tollgate and Python do,
 * with 415 `unsupported_charset` (docs/decisions/0245).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { BODY_FORMS, contentTypeOf, type Backend } from '../helpers/body-forms.js';
import { HARNESS_LIMITERS } from '../helpers/harness-limiters.js';
import { perModelKey, perModelRemaining } from '../helpers/per-model-key.js';
import { closeDatabase, ProxyHarness } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

const BODY_MATCH_MAX_BYTES = '4096';
const LIMIT = 1_000;
const REQUEST = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hé, 你好 🙂' }] });

/** The backend in Python: its port once it printed it. */
async function startPython(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn('python3', ['tests/helpers/python-json-backend.py'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`python3 exited ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

async function startExpress(): Promise<{ server: Server; url: string; received: () => number }> {
  let received = 0;
  const app = express();
  app.use((_req, _res, next) => {
    received++;
    next();
  });
  app.use(express.json());
  app.post('/{*path}', (req, res) => {
    res.json({ model: (req.body as { model?: unknown } | undefined)?.model });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
  };
}

describe.each(Object.keys(HARNESS_LIMITERS))('a request body read as its backend reads it, %s', (limiter) => {
  let h: ProxyHarness;
  let python: Awaited<ReturnType<typeof startPython>>;
  let expressBackend: Awaited<ReturnType<typeof startExpress>>;
  const routes: Record<Backend, string> = {
    python: `python-${randomBytes(4).toString('hex')}`,
    express: `express-${randomBytes(4).toString('hex')}`,
  };

  beforeAll(async () => {
    [python, expressBackend] = await Promise.all([startPython(), startExpress()]);
    h = new ProxyHarness();
    h.realTime = true;
    await h.start(await HARNESS_LIMITERS[limiter]!(h, { BODY_MATCH_MAX_BYTES }));
    for (const [backend, url] of [
      ['python', python.url],
      ['express', expressBackend.url],
    ] as const) {
      const route = await h.admin('POST', '/tollgate/routes', {
        routeId: routes[backend],
        match: { pathPrefix: `/${routes[backend]}` },
        upstreamUrl: url,
      });
      expect(route.status).toBe(201);
    }
  }, 60_000);
  afterAll(async () => {
    for (const route of Object.values(routes))
      expect((await h.admin('DELETE', `/tollgate/routes/${route}`)).status).toBe(200);
    await h.stop();
    python.child.kill();
    expressBackend.server.closeAllConnections();
    await new Promise<void>((resolve) => expressBackend.server.close(() => resolve()));
  });

  const modelKey = () => perModelKey(h, LIMIT);
  const remaining = (id: string) => perModelRemaining(h, id);

  const send = (secret: string, backend: Backend, body: Buffer, headers: Record<string, string>) =>
    fetch(`${h.base}/${routes[backend]}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, ...headers },
      body,
    });

  it('counts every form of a gpt-4o request that its backend reads as gpt-4o against the gpt-4o limit', async () => {
    const key = await modelKey();
    let sent = 0;
    for (const backend of ['python', 'express'] as const) {
      for (const form of BODY_FORMS.filter((f) => f.readBy.includes(backend))) {
        const answer = await send(key.secret, backend, form.bytes(REQUEST), {
          'content-type': contentTypeOf(form),
          ...form.headers,
        });
        // The backend read the model: a form Tollgate did not read would pass the limit.
        expect({ form: form.name, backend, status: answer.status, body: await answer.json() }).toEqual({
          form: form.name,
          backend,
          status: 200,
          body: { model: 'gpt-4o' },
        });
        sent++;
      }
    }
    // Python reads the bare words JSON has no place for.
    const withNaN = await send(key.secret, 'python', Buffer.from('{"model": "gpt-4o", "top_p": NaN}'), {
      'content-type': 'application/json',
    });
    expect(await withNaN.json()).toEqual({ model: 'gpt-4o' });
    sent++;
    expect(sent).toBeGreaterThan(15);
    expect(await remaining(key.id)).toBe(LIMIT - sent);
  });

  it('refuses a coded body that decodes past the bound with 413, forwarding nothing', async () => {
    const key = await modelKey();
    const before = expressBackend.received();
    const padded = JSON.stringify({ model: 'gpt-4o', padding: ' '.repeat(Number(BODY_MATCH_MAX_BYTES)) });
    const refused = await send(key.secret, 'express', gzipSync(padded), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    });
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ code: 'body_too_large' });
    expect(await remaining(key.id)).toBe(LIMIT);
    expect(expressBackend.received()).toBe(before);
  });

  it('refuses a body whose content type names UTF-7 or its IMAP form with 415, forwarding nothing', async () => {
    // `+AC0-` is `-` in UTF-7, `&AC0-` in its IMAP form: Tollgate and Python read another model.
    const forms = [
      { charset: 'utf-7', body: '{"model":"gpt+AC0-4o","max_tokens":40}' },
      { charset: '"UTF-7"', body: '{"model":"gpt+AC0-4o","max_tokens":40}' },
      { charset: 'utf-7-imap', body: '{"model":"gpt&AC0-4o","max_tokens":40}' },
    ];
    for (const { charset, body } of forms) {
      // Express itself reads gpt-4o.
      const direct = await fetch(`${expressBackend.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': `application/json; charset=${charset}` },
        body,
      });
      expect({ charset, model: await direct.json() }).toEqual({ charset, model: { model: 'gpt-4o' } });
    }
    const key = await modelKey();
    const before = expressBackend.received();
    for (const backend of ['express', 'python'] as const) {
      for (const { charset, body } of forms) {
        const refused = await send(key.secret, backend, Buffer.from(body), {
          'content-type': `application/json; charset=${charset}`,
        });
        expect({ backend, charset, status: refused.status, body: await refused.json() }).toEqual({
          backend,
          charset,
          status: 415,
          body: { code: 'unsupported_charset', error: expect.stringContaining('UTF-7') },
        });
      }
    }
    expect(await remaining(key.id)).toBe(LIMIT);
    expect(expressBackend.received()).toBe(before);
    await h.flushed();
    expect(await h.usage(key.id)).toMatchObject({ requests: 2 * forms.length, failed: 2 * forms.length });
  });
});
