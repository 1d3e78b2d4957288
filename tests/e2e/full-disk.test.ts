/**
 * Embedded mode on a disk that fills up (a private 64 MB tmpfs): management writes answer 503
 * storage_unavailable with Retry-After, readiness names the database, proxying of known keys goes on,
 * and everything recovers by itself once space is freed, the usage of the full period included; and
 * usage that cannot be written when SIGTERM comes under load waits in the journal under DATA_DIR and is counted,
 * once, at the next start.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from './helpers/backend.js';
import { hit, load, sleep, totalOn, waitFor } from './helpers/replicas.js';
import { expectNoSecretsLogged, startTollgate, type Tollgate } from './helpers/tollgate.js';
import { heldInJournal, journalEmptied } from './helpers/usage-journal.js';

const mountPoint = mkdtempSync(join(tmpdir(), 'tollgate-full-'));
const filler = join(mountPoint, 'filler');
let mounted = false;
let backend: Backend;
let tollgate: Tollgate;

/** Writes to the filler until the disk is full (again: Tollgate's own files may have given space back). */
function fillDisk(): void {
  const fd = openSync(filler, 'a');
  const block = Buffer.alloc(256 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    closeSync(fd);
  }
}

beforeAll(async () => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mountPoint]);
  mounted = true;
  backend = await startBackend();
  tollgate = await startTollgate({ DATA_DIR: join(mountPoint, 'data'), UPSTREAM_URL: backend.url });
}, 120_000);

afterAll(async () => {
  try {
    await tollgate?.stop();
    await backend?.close();
  } finally {
    if (mounted) execFileSync('umount', ['-l', mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
  if (tollgate) expectNoSecretsLogged();
}, 60_000);

it('refuses management writes with 503 storage_unavailable, keeps proxying, recovers by itself', async () => {
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'before-full' });
  expect(await hit(tollgate, key.secret, '/v1/before')).toBe(200);

  fillDisk();
  const refused = await fetch(tollgate.url + '/consumer-api-key/create', {
    method: 'POST',
    headers: { authorization: `Bearer ${tollgate.rootToken}`, 'content-type': 'application/json' },
    // A large name makes sure the row needs new space, whatever the last page had free.
    body: JSON.stringify({ name: 'x'.repeat(200) }),
  });
  let answer = {
    status: refused.status,
    retryAfter: refused.headers.get('retry-after'),
    body: await refused.json(),
  };
  // The first insert may still fit a page; keep creating until the disk says no.
  for (let i = 0; i < 200 && answer.status === 201; i++) {
    const res = await fetch(tollgate.url + '/consumer-api-key/create', {
      method: 'POST',
      headers: { authorization: `Bearer ${tollgate.rootToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'y'.repeat(200) }),
    });
    answer = { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  }
  expect(answer).toEqual({
    status: 503,
    retryAfter: '5',
    body: { error: expect.any(String), code: 'storage_unavailable' },
  });
  // SQLite may have given pages back meanwhile (a checkpoint): the probe must meet a full disk.
  fillDisk();
  const ready = await fetch(tollgate.opsUrl + '/readyz');
  expect({ status: ready.status, body: await ready.json() }).toEqual({
    status: 503,
    body: { status: 'not_ready', checks: { database: 'unavailable' } },
  });
  // Known keys keep working from the key cache; their usage waits for the disk.
  for (let i = 0; i < 5; i++) expect(await hit(tollgate, key.secret, '/v1/during')).toBe(200);
  expect(tollgate.output.some((l) => l.includes('management request failed'))).toBe(false);

  unlinkSync(filler);
  const back = await waitFor(
    async () => (await fetch(tollgate.opsUrl + '/readyz')).status,
    (s) => s === 200,
    { timeoutMs: 15_000, everyMs: 250 },
  );
  expect(back.value).toBe(200);
  expect((await tollgate.admin('POST', '/consumer-api-key/create', { name: 'after-full' })).status).toBe(201);
  const counted = await waitFor(
    () => totalOn(tollgate, key.id),
    (n) => n === 6,
    { timeoutMs: 10_000 },
  );
  expect(counted.value).toBe(6);
}, 120_000);

it('keeps usage it cannot write at SIGTERM on a full disk, and counts it once at the next start', async () => {
  const dataDir = join(mountPoint, 'data');
  const { body: key } = await tollgate.admin('POST', '/consumer-api-key/create', { name: 'journaled' });
  for (let i = 0; i < 3; i++) expect(await hit(tollgate, key.secret, '/v1/before')).toBe(200);
  expect(
    (
      await waitFor(
        () => totalOn(tollgate, key.id),
        (n) => n === 3,
        { timeoutMs: 10_000 },
      )
    ).value,
  ).toBe(3);

  fillDisk();
  // Under load on the full disk, then SIGTERM while requests are in flight: they finish (and count),
  // the listener refuses the rest.
  let stopping = false;
  const traffic = load(tollgate, key.secret, 16, () => stopping);
  // A hundred answered on the full disk first, however slow the machine (beside a CPU burner, 1.5 s
  // of load brought 83).
  await waitFor(
    async () => traffic.answered(),
    (n) => n >= 100,
    { timeoutMs: 30_000, what: 'a hundred requests answered on the full disk' },
  );
  const exited = tollgate.stop();
  await sleep(500);
  stopping = true;
  await traffic.done;
  expect(await exited).toBe(0);
  const answered = 3 + traffic.answered();
  expect(answered).toBeGreaterThan(100);
  expect(tollgate.output.some((l) => l.includes('usage kept in the journal until the next start'))).toBe(
    true,
  );
  expect(tollgate.output.some((l) => l.includes('usage could not be written before exit'))).toBe(false);

  unlinkSync(filler);
  tollgate = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url });
  expect(
    (
      await waitFor(
        () => totalOn(tollgate, key.id),
        (n) => n === answered,
        { timeoutMs: 10_000 },
      )
    ).value,
  ).toBe(answered);
  // Applied once: another restart finds nothing left in the journal to add (a start shows what it
  // holds at once, applied or not yet).
  await journalEmptied(dataDir);
  await tollgate.stop();
  expect(heldInJournal(dataDir)).toEqual([]);
  tollgate = await startTollgate({ DATA_DIR: dataDir, UPSTREAM_URL: backend.url });
  expect(await totalOn(tollgate, key.id)).toBe(answered);
}, 180_000);
