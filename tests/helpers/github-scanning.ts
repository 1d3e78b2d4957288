/**
 * GitHub's side of the secret scanning partner program, played by the test: P-256 keys it generates,
 * served as GitHub serves them (`{public_keys: [{key_identifier, key, is_current}]}`) at the URL a
 * Tollgate takes as GITHUB_SECRET_SCANNING_KEYS_URL, and reports signed with them.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface SigningKey {
  readonly id: string;
  readonly privateKey: KeyObject;
  readonly publicPem: string;
}

export function newSigningKey(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { id: createHash('sha256').update(publicPem).digest('hex'), privateKey, publicPem };
}

/** A report's headers: `body` signed with `key` (DER ECDSA P-256 over SHA-256, base64), as GitHub sends it. */
export function signedHeaders(body: string, key: SigningKey): Record<string, string> {
  return {
    'content-type': 'application/json',
    'github-public-key-identifier': key.id,
    'github-public-key-signature': sign('sha256', Buffer.from(body), key.privateKey).toString('base64'),
  };
}

/** A report of `tokens` found in a public repository, as GitHub words it. */
export function reportBody(tokens: readonly string[], file = 'config.js'): string {
  return JSON.stringify(
    tokens.map((token) => ({
      token,
      type: 'tollgate_api_key',
      url: `https://github.com/octocat/hello-world/blob/main/${file}`,
      source: 'content',
    })),
  );
}

export class GitHubKeyServer {
  /** How many times the keys were read (counted as each read arrives). */
  reads = 0;
  /** While set, a read is answered only once it resolves: GitHub slow to answer. */
  answerAfter: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    readonly url: string,
    /** The keys served now. */
    readonly served: SigningKey[],
  ) {}

  static async start(): Promise<GitHubKeyServer> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const keys = new GitHubKeyServer(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/meta/public_keys/secret_scanning`,
      [newSigningKey()],
    );
    server.on('request', (_req, res) => {
      keys.reads++;
      void (keys.answerAfter ?? Promise.resolve()).then(() => {
        const public_keys = keys.served.map((key, i) => ({
          key_identifier: key.id,
          key: key.publicPem,
          is_current: i === keys.served.length - 1,
        }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ public_keys }));
      });
    });
    return keys;
  }

  /** The key GitHub signs with now. */
  get current(): SigningKey {
    return this.served.at(-1)!;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
