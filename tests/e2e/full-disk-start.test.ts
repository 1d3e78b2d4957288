// Embedded mode started on a full disk: the operator reads that the disk holding DATA_DIR is full, not
// SQLite's "database or disk is full" alone; once space is freed the same DATA_DIR starts and keeps
// everything it held. A private 64 MiB tmpfs stands in for the disk (root needed, as in CI).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, rmdirSync, statSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectNoSecretsLogged, startTollgate } from './helpers/tollgate.js';

const KIB = 1024;
const USAGE_JOURNAL_KIB = 4 * 1024;
let disk: string;
let mounted = false;

function freeKiB(): number {
  const stats = statfsSync(disk);
  return (stats.bavail * stats.bsize) / KIB;
}

/** Fills the disk until `leaveKiB` is free, to a page (dd stops at ENOSPC when asked for more than there is). */
function fill(leaveKiB: number): void {
  const count = Math.max(0, Math.floor((freeKiB() - leaveKiB) / 4));
  spawnSync('dd', [
    'if=/dev/zero',
    `of=${join(disk, `fill-${Date.now()}`)}`,
    'bs=4K',
    `count=${leaveKiB === 0 ? count + 1 : count}`,
  ]);
}

function unfill(): void {
  for (const name of execFileSync('ls', [disk], { encoding: 'utf8' }).split('\n')) {
    if (name.startsWith('fill-')) rmSync(join(disk, name));
  }
}

/** The start-up failure's output, or a failure of the test if it started. */
async function failedStart(dataDir: string): Promise<string> {
  const started = await startTollgate({ DATA_DIR: dataDir }).then(
    async (t) => {
      await t.stop();
      return undefined;
    },
    (err: Error) => err.message,
  );
  if (started === undefined)
    throw new Error(`Tollgate started on a full disk (${freeKiB().toFixed(0)} KiB free)`);
  return started;
}

beforeAll(() => {
  disk = mkdtempSync(join(tmpdir(), 'tollgate-full-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', disk]);
  mounted = true;
});

afterAll(() => {
  if (mounted) execFileSync('umount', [disk]);
  rmdirSync(disk);
  expectNoSecretsLogged();
});

afterEach(() => {
  if (mounted) unfill();
});

test.each([
  ['no byte free', 0],
  ['128 KiB free, less than a new database takes', 128],
])(
  'a first start with %s names DATA_DIR and the full disk; freed, the same DATA_DIR starts',
  async (_label, leaveKiB) => {
    const dataDir = join(disk, `data-${leaveKiB}`);
    fill(leaveKiB);
    const output = await failedStart(dataDir);
    expect(output).toContain(`start-up failed: the disk holding DATA_DIR ${dataDir} is full`);
    expect(output).toContain('free space there or set DATA_DIR to a folder on a larger disk');

    unfill();
    const t = await startTollgate({ DATA_DIR: dataDir });
    try {
      const created = await t.admin('POST', '/consumer-api-key/create', { name: 'after-space-freed' });
      expect(created.status).toBe(201);
    } finally {
      await t.stop();
    }
    rmSync(dataDir, { recursive: true, force: true });
  },
);

test('a database that exists keeps every key through a restart on a full disk and after space is freed', async () => {
  const dataDir = join(disk, 'data-existing');
  const first = await startTollgate({ DATA_DIR: dataDir });
  const created = await first.admin('POST', '/consumer-api-key/create', { name: 'kept' });
  expect(created.status).toBe(201);
  expect(await first.stop()).toBe(0);

  fill(0);
  // Either it starts (nothing to write yet) or it says why not; it never starts with the key gone.
  const onFullDisk = await startTollgate({ DATA_DIR: dataDir }).then(
    async (t) => {
      const found = await t.admin('GET', `/consumer-api-key/${created.body.id}`);
      await t.stop();
      return `started, key ${found.status}`;
    },
    (err: Error) =>
      err.message.includes(`the disk holding DATA_DIR ${dataDir} is full`)
        ? 'refused: disk full named'
        : err.message,
  );
  expect(['started, key 200', 'refused: disk full named']).toContain(onFullDisk);

  unfill();
  const again = await startTollgate({ DATA_DIR: dataDir });
  try {
    const found = await again.admin('GET', `/consumer-api-key/${created.body.id}`);
    expect({ status: found.status, name: found.body?.name }).toEqual({ status: 200, name: 'kept' });
  } finally {
    await again.stop();
  }
}, 240_000);

test('a first start with about 1 MiB free leaves the disk room, and warns naming DATA_DIR and what the usage journal lacks', async () => {
  const dataDir = join(disk, 'data-journal');
  fill(1024);
  const t = await startTollgate({ DATA_DIR: dataDir });
  try {
    expect(freeKiB()).toBeGreaterThan(0);
    const journalKiB = statSync(join(dataDir, 'usage-journal')).size / KIB;
    expect(journalKiB).toBeLessThan(USAGE_JOURNAL_KIB);
    const warnings = t.output
      .map((l) => (l.startsWith('{') ? JSON.parse(l) : {}))
      .filter((l) => l.level === 40);
    expect(warnings).toContainEqual(
      expect.objectContaining({
        dataDir,
        missingBytes: (USAGE_JOURNAL_KIB - journalKiB) * KIB,
        msg: expect.stringContaining(`DATA_DIR ${dataDir} lacks`),
      }),
    );
    expect(
      (await t.admin('POST', '/consumer-api-key/create', { name: 'on-a-nearly-full-disk' })).status,
    ).toBe(201);
  } finally {
    await t.stop();
  }
  rmSync(dataDir, { recursive: true, force: true });
});
