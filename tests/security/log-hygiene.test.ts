/**
 * A management write that the database refuses is logged without the failed query's parameters,
 * text or detail: drivers attach them to their errors, and they carry secret hashes and ciphertexts.
 * The service is built as production builds it (buildAdapters + buildApp), on the embedded SQLite store
 * and on Postgres.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { buildAdapters } from '../../src/adapters.js';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/ops/logger.js';
import { Metrics } from '../../src/ops/metrics.js';
import { openEmbedded, type DbHandle } from '../../src/store/db.js';
import { migrate } from '../../src/store/migrate.js';
import { createTestDatabase, type TestDatabase } from '../helpers/services.js';

const ROOT_TOKEN = 'root-' + randomBytes(16).toString('hex');

/**
 * Every new key row fails inside the database, after its secret hash and ciphertext were sent as
 * parameters: a check constraint in Postgres (whose error carries the failing row as `detail`), a
 * trigger in SQLite (which has no ALTER TABLE … ADD CONSTRAINT), each with its SQLSTATE.
 */
const REFUSE_NEW_KEYS = {
  postgres: {
    statement: sql`alter table api_keys add constraint refuse_all check (false) not valid`,
    code: '23514',
  },
  embedded: {
    statement: sql`create trigger refuse_all before insert on api_keys begin select raise(abort, 'refuse_all'); end`,
    code: 'P0001',
  },
};

describe.each(['embedded', 'postgres'] as const)('logs of a failed management write (%s)', (kind) => {
  const lines: string[] = [];
  let app: App;
  let db: DbHandle;
  let database: TestDatabase | undefined;
  let url: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-logs-'));

  beforeAll(async () => {
    if (kind === 'postgres') database = await createTestDatabase();
    const config = loadConfig({
      ROOT_TOKEN,
      PORT: '0',
      OPS_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ...(database && { DATABASE_URL: database.url }),
    });
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    const metrics = new Metrics();
    db = database ? await database.open() : await openEmbedded(dataDir);
    await migrate(db);
    const adapters = await buildAdapters(config, db, logger, metrics);
    app = buildApp({
      config,
      logger,
      metrics,
      adapters,
      rootToken: ROOT_TOKEN,
      encryptionKeys: [config.secretEncryptionKey!],
    });
    url = `http://127.0.0.1:${(await app.listen()).port}`;
  }, 60_000);

  afterAll(async () => {
    await app.shutdown();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 500 and logs the error by type, message and SQLSTATE only', async () => {
    await REFUSE_NEW_KEYS[kind].statement.execute(db.db);
    const res = await fetch(url + '/consumer-api-key/create', {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'never stored' }),
    });
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 500,
      body: { error: 'Internal error', code: 'internal_error' },
    });

    const failure = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'management request failed');
    expect(failure).toBeDefined();
    expect(failure.err).toMatchObject({
      type: expect.any(String),
      message: expect.stringContaining('refuse_all'),
      code: REFUSE_NEW_KEYS[kind].code,
    });
    for (const property of Object.keys(failure.err))
      expect(['type', 'message', 'code', 'stack', 'cause']).toContain(property);
    const log = lines.join('\n');
    // No bytea value (a secret hash or ciphertext), no parameters, no failing row, no query text.
    expect(log).not.toMatch(/\\\\x[0-9a-f]{16}/);
    expect(log).not.toMatch(/"params"|"parameters"|"detail"|Failing row|insert into/i);
  });
});
