/**
 * A customer id holding a control character (U+0000 to U+001F, U+007F) is refused wherever it enters,
 * in both modes (contract section 32, decision record 0145): the customer-id header (400
 * `invalid_customer_id`, neither forwarded nor charged), a token's `sub` (401 `invalid_api_key`) and
 * verify's `customerId` (400 `validation_failed`); lengths are code points. A NUL in the header never
 * passes Node's parser (400 before the proxy), and one in an Envoy Check's headers is refused as the
 * proxy refuses it. The portal's `subject` is tried in tests/security/portal-walk.e2e.test.ts.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { mintToken } from '../../packages/client/src/generated/mint-token.js';
import { EnvoyClient } from '../helpers/envoy-client.js';
import { HARNESS_MODES, harnessIn } from '../helpers/harness-modes.js';
import { waitFor } from '../helpers/poll.js';
import { closeDatabase } from '../helpers/proxy-harness.js';

afterAll(closeDatabase);

interface Answer {
  readonly status: number;
  readonly code: string | undefined;
}

/** Usage reaches the management API within a flush or two; a loaded machine takes longer. */
const PATIENCE = { timeoutMs: 30_000 };

/** A GET whose headers go on the wire as given, one byte a character. */
function send(port: number, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/things', headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode!, code: body.startsWith('{') ? JSON.parse(body).code : undefined }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** The status code of the answer to a request written byte for byte on a socket of its own. */
function sendRaw(port: number, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.from(head, 'latin1')));
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
  });
}

describe.each(HARNESS_MODES)('$name', (mode) => {
  const h = harnessIn(mode, { env: { EXTAUTH_GRPC_PORT: '0' } });

  const verify = async (body: unknown) => {
    const res = await fetch(h.base + '/tollgate/verify', {
      method: 'POST',
      headers: { authorization: `Bearer ${h.rootToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { code?: string; valid?: boolean } };
  };

  it('refuses a customer-id header holding a control character: 400 invalid_customer_id, neither forwarded nor charged', async () => {
    const key = await h.createKey({ limit: 1, period: 'hour' });
    const forwarded = h.backend.received.length;
    // A tab is the one control character Node's parser lets through in a header value.
    expect(await send(h.port, { 'x-api-key': key.secret, 'x-customer-id': 'cus\t1' })).toEqual({
      status: 400,
      code: 'invalid_customer_id',
    });
    expect(h.backend.received.length).toBe(forwarded);
    // The hour's one request is still there: the refusal charged nothing.
    expect((await send(h.port, { 'x-api-key': key.secret, 'x-customer-id': 'cus-1' })).status).toBe(200);

    // Counted in the key's usage as failed, without the customer id; the failure log says why. The
    // customers' counts may reach the store a flush after the totals, so both are waited for.
    const usage = (
      await waitFor(
        () => h.usage(key.id),
        (u) => u.requests === 2 && Object.keys(u.customers).length > 0,
        PATIENCE,
      )
    ).value;
    expect({ requests: usage.requests, failed: usage.failed, customers: usage.customers }).toEqual({
      requests: 2,
      failed: 1,
      customers: { 'cus-1': 1 },
    });
    const { value: log } = await waitFor(
      async () =>
        (await (await h.manage(`/consumer-api-key/${key.id}/failures`)).json()) as {
          failures: { code: string; status: number; customerId: string | null }[];
        },
      (l) => l.failures.length === 1,
      PATIENCE,
    );
    expect(log.failures).toHaveLength(1);
    expect(log.failures[0]).toMatchObject({ code: 'invalid_customer_id', status: 400, customerId: null });
    expect(await h.metric('tollgate_proxy_requests_total{outcome="bad_request"}')).toMatch(/ [1-9]\d*$/);
  });

  it('takes no token whose `sub` holds a control character or more than 200 code points', async () => {
    const key = await h.createKey();
    const mint = (subject: string) =>
      mintToken(key.secret, { consumerApiKeyId: key.id, expiresInSeconds: 600, nowMs: h.now, subject });
    const forwarded = h.backend.received.length;
    for (const subject of ['a\u0000b', 'a\r\nx-injected: 1', 'tab\there', 'del\u007f', '😀'.repeat(201)])
      expect({ subject, ...(await send(h.port, { authorization: `Bearer ${mint(subject)}` })) }).toEqual({
        subject,
        status: 401,
        code: 'invalid_api_key',
      });
    expect(h.backend.received.length).toBe(forwarded);

    // 200 code points outside the BMP are 400 UTF-16 units: still a token, as the portal mints it.
    const wide = '😀'.repeat(200);
    expect((await send(h.port, { authorization: `Bearer ${mint(wide)}` })).status).toBe(200);
    const header = h.backend.received.at(-1)!.headers['x-customer-id'] as string;
    expect(Buffer.from(header, 'latin1').toString('utf8')).toBe(wide);
    expect(
      (
        await waitFor(
          () => h.usage(key.id),
          (u) => u.requests === 1,
          PATIENCE,
        )
      ).value.customers,
    ).toEqual({
      [wide]: 1,
    });
  });

  it('takes no NUL in the customer-id header, on the wire or in an Envoy Check: neither forwarded nor counted under it', async () => {
    const key = await h.createKey({ limit: 5, period: 'hour' });
    const forwarded = h.backend.received.length;
    // On the wire Node's parser refuses the request itself: it reaches neither the proxy nor usage.
    const head = `GET /v1/things HTTP/1.1\r\nhost: x\r\nx-api-key: ${key.secret}\r\nx-customer-id: a\u0000b\r\nconnection: close\r\n\r\n`;
    expect(await sendRaw(h.port, head)).toBe(400);
    // A gateway's Check carries headers as strings that may hold one: refused as the proxy refuses it.
    const envoy = new EnvoyClient(`127.0.0.1:${h.extauthGrpcPort}`);
    try {
      const checked = await envoy.check('/v1/things', {
        'x-api-key': key.secret,
        'x-customer-id': 'a\u0000b',
      });
      const denied = checked.denied_response as { status: { code: string }; body: string } | undefined;
      expect({ status: denied?.status.code, code: denied && JSON.parse(denied.body).code }).toEqual({
        status: 'BadRequest',
        code: 'invalid_customer_id',
      });
    } finally {
      envoy.close();
    }
    expect(h.backend.received.length).toBe(forwarded);
    // A clean request after them: usage counts the Check's refusal and it, and keeps no NUL anywhere.
    expect((await send(h.port, { 'x-api-key': key.secret, 'x-customer-id': 'cus-2' })).status).toBe(200);
    const { value: usage } = await waitFor(
      () => h.usage(key.id),
      (u) => u.requests === 2 && Object.keys(u.customers).length > 0,
      PATIENCE,
    );
    expect({ requests: usage.requests, failed: usage.failed, customers: usage.customers }).toEqual({
      requests: 2,
      failed: 1,
      customers: { 'cus-2': 1 },
    });
  });

  it("answers verify's `customerId` holding a control character 400 validation_failed, charging nothing", async () => {
    const key = await h.createKey({ limit: 1, period: 'hour' });
    for (const customerId of ['a\u0000b', 'a\nb', '\u001f', 'x\u007f']) {
      const answer = await verify({ key: key.secret, path: '/v1/things', customerId });
      expect({ customerId, status: answer.status, code: answer.body.code }).toEqual({
        customerId,
        status: 400,
        code: 'validation_failed',
      });
    }
    expect((await verify({ key: key.secret, path: '/v1/things', customerId: 'cus-1' })).body.valid).toBe(
      true,
    );
  });
});
