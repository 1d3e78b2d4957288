/**
 * contract-verify-double: NOT Tollgate's verify. It answers `POST /tollgate/verify` in the shape contract
 * section 18 documents, from answers a test hands it, so @tollgate/client's middleware can be tested
 * against a real proxy's refusals before the endpoint exists. It exists until /tollgate/verify lands:
 * then the tests that use it point their `verifyBaseUrl` at the real Tollgate and this file is deleted.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VerifyAnswer, VerifyRequest } from '../../packages/client/src/verify-types.js';

export interface ContractVerifyDouble {
  readonly url: string;
  /** Every verify request received, in order. */
  readonly calls: VerifyRequest[];
  /** What to answer for `key` from now on; any other key is `invalid_api_key`, as contract 18 says. */
  answer(key: string, answer: VerifyAnswer): void;
  close(): Promise<void>;
}

const json = (status: number, body: unknown) => ({ status, body: JSON.stringify(body) });

export async function startContractVerifyDouble(token: string): Promise<ContractVerifyDouble> {
  const answers = new Map<string, VerifyAnswer>();
  const calls: VerifyRequest[] = [];
  const decide = (
    method: string | undefined,
    url: string | undefined,
    authorization: string | undefined,
    text: string,
  ) => {
    if (method !== 'POST' || url !== '/tollgate/verify')
      return json(404, { error: 'No such route', code: 'not_found' });
    if (authorization !== `Bearer ${token}`)
      return json(401, { error: 'A valid root token is required', code: 'unauthorized' });
    let request: VerifyRequest;
    try {
      request = JSON.parse(text) as VerifyRequest;
    } catch {
      return json(400, { error: 'The request body is not valid JSON', code: 'invalid_json' });
    }
    if (typeof request?.key !== 'string')
      return json(400, { error: 'The request is not valid', code: 'validation_failed' });
    calls.push(request);
    return json(200, answers.get(request.key) ?? { valid: false, code: 'invalid_api_key', limits: [] });
  };
  const server: Server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const { status, body } = decide(req.method, req.url, req.headers.authorization, text);
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    answer: (key, answer) => answers.set(key, answer),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
