/**
 * SIGTERM ends the process within SHUTDOWN_TIMEOUT_MS + 5 s whatever the reader of its stdout does: gone
 * (`npm start | head`, a log shipper that died: every write is a broken pipe) or alive but reading nothing
 * (a hung log shipper: the pipe is full). Logging must never hold the shutdown.
 */
import { startBackend, type Backend } from './helpers/backend.js';
import { MODES, type Deployment } from './helpers/modes.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';

const SHUTDOWN_TIMEOUT_MS = 2_000;
const CONTRACT_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 5_000;

/** SIGTERM, then how long the process took to end, or undefined if it was still running past the bound. */
async function secondsToEnd(tollgate: Tollgate): Promise<number | undefined> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const inTime = await new Promise<boolean>((resolve) => {
    tollgate.process.once('exit', () => resolve(true));
    timer = setTimeout(() => resolve(false), CONTRACT_BOUND_MS + 1_000);
    tollgate.process.kill('SIGTERM');
  });
  clearTimeout(timer);
  return inTime ? (performance.now() - started) / 1000 : undefined;
}

describe.each(MODES)('$name', (mode) => {
  let backend: Backend;
  let running: { tollgate?: Tollgate; deployment?: Deployment } = {};

  /** A Tollgate of its own per test: one that did not end must not hold the next test's data. */
  async function start(extraEnv: Record<string, string> = {}): Promise<Tollgate> {
    running.deployment = await mode.deploy();
    running.tollgate = await startTollgate({
      ...running.deployment.env,
      UPSTREAM_URL: backend.url,
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      ...extraEnv,
    });
    return running.tollgate;
  }

  beforeAll(async () => {
    backend = await startBackend();
  });

  afterEach(async () => {
    running.tollgate?.process.kill('SIGKILL');
    await running.deployment?.dispose();
    running = {};
  });

  afterAll(async () => {
    await backend?.close();
  });

  it('ends in time after the reader of stdout is gone', async () => {
    const tollgate = await start();
    expect(
      (await tollgate.admin('POST', '/consumer-api-key/create', { name: 'before-the-reader-left' })).status,
    ).toBe(201);
    tollgate.process.stdout!.destroy();

    const seconds = await secondsToEnd(tollgate);
    expect(seconds).toBeLessThan(CONTRACT_BOUND_MS / 1000);
  }, 60_000);

  it('ends in time while the reader of stdout reads nothing and the pipe is full', async () => {
    const tollgate = await start({ LOG_LEVEL: 'debug' });
    tollgate.process.stdout!.pause();
    // Each refused request writes an access-log line of about 700 bytes: far more than a pipe holds.
    const longPath = '/' + 'p'.repeat(500);
    for (let i = 0; i < 400; i++) expect((await fetch(`${tollgate.url}${longPath}/${i}`)).status).toBe(401);

    const seconds = await secondsToEnd(tollgate);
    expect(seconds).toBeLessThan(CONTRACT_BOUND_MS / 1000);
  }, 60_000);
});

it('never writes a secret to its logs', () => expectNoSecretsLogged());
