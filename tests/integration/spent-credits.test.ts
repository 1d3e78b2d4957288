/**
 * What replicas spent of credit balances, kept in the database (docs/guides/credits.md: a balance lives there
 * whatever becomes of Redis or of a process), over the embedded SQLite store and a real Postgres: a
 * save raises the record only within its period and only upwards, a save after a refill moves the
 * record to the refill's window, and the saving task keeps what a failed save held for the next.
 */
import { randomBytes } from 'node:crypto';
import { SpentCredits } from '../../src/credits/spent-credits.js';
import { encryptSecret, generateKeyId, generateSecret, hashSecret } from '../../src/keys/secret.js';
import { balanceSet, type Balance } from '../../src/plans/balance.js';
import { createLogger } from '../../src/ops/logger.js';
import { ConsumerRepository } from '../../src/store/consumer-repository.js';
import { CreditRepository, type Spend } from '../../src/store/credit-repository.js';
import { KeyRepository } from '../../src/store/key-repository.js';
import { migrate } from '../../src/store/migrate.js';
import { refuseWrites, STORAGES, type Storage } from '../helpers/management-storage.js';
import { waitFor } from '../helpers/poll.js';

/** 2026-03-20 12:00 UTC: the monthly refill on the 15th last came on 2026-03-15. */
const NOW = Date.UTC(2026, 2, 20, 12);
const MARCH_15 = Date.UTC(2026, 2, 15);
const APRIL_15 = Date.UTC(2026, 3, 15);

describe.each(Object.keys(STORAGES) as (keyof typeof STORAGES)[])('spent credits on %s storage', (kind) => {
  let storage: Storage;
  let credits: CreditRepository;
  let keys: KeyRepository;
  let consumers: ConsumerRepository;

  beforeAll(async () => {
    storage = await STORAGES[kind]();
    await migrate(storage.handle);
    credits = new CreditRepository(storage.handle.db);
    keys = new KeyRepository(storage.handle.db);
    consumers = new ConsumerRepository(storage.handle.db);
  }, 60_000);
  afterAll(() => storage.dispose());

  /** A key holding `balance`. */
  async function keyWith(balance: Balance): Promise<string> {
    const id = generateKeyId();
    await keys.insert({
      id,
      name: 'k',
      secretHash: hashSecret(generateSecret()),
      secretCiphertext: encryptSecret(generateSecret(), randomBytes(32)),
      createdAt: new Date(NOW),
    });
    await credits.set('key', id, balance, balance.epoch, new Date(NOW));
    return id;
  }
  const recordOf = async (id: string) => (await keys.get(id))!.balance!;
  const monthly = balanceSet(0, 100, { amount: 100, interval: 'month', dayOfMonth: 15 }, null, NOW);
  const spend = (id: string, fields: Partial<Spend>): Spend => ({
    scope: 'key',
    id,
    epoch: 1,
    window: MARCH_15,
    spent: 0,
    ...fields,
  });

  it('raises what a balance has spent within its period, never lowers it, and ignores an earlier epoch', async () => {
    const id = await keyWith(monthly);
    expect(await recordOf(id)).toMatchObject({ epoch: 1, window: MARCH_15, granted: 100, floor: 0 });
    await credits.saveSpent([spend(id, { spent: 30 })]);
    // Another replica saw less, or saves late: the record keeps the most.
    await credits.saveSpent([spend(id, { spent: 20 })]);
    expect((await recordOf(id)).floor).toBe(30);
    // A set since (epoch 2) counts afresh: what the earlier epoch spent no longer applies.
    const set = balanceSet(1, 50, monthly.refill, null, NOW);
    await credits.set('key', id, set, set.epoch, new Date(NOW));
    await credits.saveSpent([spend(id, { spent: 45 })]);
    expect(await recordOf(id)).toMatchObject({ epoch: 2, granted: 50, floor: 0 });
    await credits.saveSpent([spend(id, { epoch: 2, spent: 5 })]);
    expect((await recordOf(id)).floor).toBe(5);
  });

  it('moves the record to the refill window a spend was counted in, granted the refill amount', async () => {
    const id = await keyWith(monthly);
    await credits.saveSpent([spend(id, { spent: 90 })]);
    // The refill of April 15 came and 12 were spent since: a restart must not give those back.
    await credits.saveSpent([spend(id, { window: APRIL_15, spent: 12 })]);
    expect(await recordOf(id)).toMatchObject({ epoch: 1, window: APRIL_15, granted: 100, floor: 12 });
    // A late save of March changes nothing now.
    await credits.saveSpent([spend(id, { spent: 95 })]);
    expect(await recordOf(id)).toMatchObject({ window: APRIL_15, floor: 12 });

    // Without a refill there is no later window to move to; a balance removed since is left alone.
    const fixed = await keyWith(balanceSet(0, 10, null, null, NOW));
    await credits.saveSpent([spend(fixed, { window: APRIL_15, spent: 3 })]);
    expect(await recordOf(fixed)).toMatchObject({ window: 0, floor: 0 });
    const removed = await keyWith(monthly);
    await credits.set('key', removed, null, 1, new Date(NOW));
    await credits.saveSpent([spend(removed, { spent: 3 }), spend(removed, { window: APRIL_15, spent: 4 })]);
    expect((await keys.get(removed))!.balance).toBeNull();
  });

  it("saves a consumer's as a key's", async () => {
    const consumerId = 'con_' + randomBytes(16).toString('base64url');
    await consumers.insert({
      id: consumerId,
      name: 'c',
      externalId: null,
      metadata: '{}',
      rateLimitId: null,
      createdAt: new Date(NOW),
    });
    await credits.set('consumer', consumerId, monthly, monthly.epoch, new Date(NOW));
    await credits.saveSpent([{ scope: 'consumer', id: consumerId, epoch: 1, window: MARCH_15, spent: 7 }]);
    expect((await consumers.get(consumerId))!.balance!.floor).toBe(7);
  });

  it('keeps what a failed save held and saves it, merged with what came since, once the database takes writes', async () => {
    const id = await keyWith(monthly);
    const seen: Spend[][] = [
      [spend(id, { spent: 10 })],
      [spend(id, { spent: 8 })],
      [spend(id, { spent: 15 })],
    ];
    const saver = new SpentCredits(() => seen.shift() ?? [], credits, createLogger('silent'), 60_000);
    const allow = await refuseWrites(storage.handle.db, 'tg_refuse_credit_saves', 'api_keys', 'update');
    await saver.save();
    expect((await recordOf(id)).floor).toBe(0);
    await allow();
    // The failed 10 and a lower 8 seen since: the most of them goes.
    await saver.save();
    expect((await recordOf(id)).floor).toBe(10);
    // Stopping saves what is left.
    saver.start();
    await saver.stop();
    expect((await recordOf(id)).floor).toBe(15);
  });

  it('saves at stop what was spent after a save still going began', async () => {
    const id = await keyWith(monthly);
    // What the limiter saw at each save: 10 as the interval's save began, 15 by the time of the stop.
    const seen: Spend[][] = [[spend(id, { spent: 10 })], [spend(id, { spent: 15 })]];
    let open!: () => void;
    const slow = new Promise<void>((resolve) => (open = resolve));
    const saver = new SpentCredits(
      () => seen.shift() ?? [],
      { saveSpent: async (spends) => slow.then(() => credits.saveSpent(spends)) },
      createLogger('silent'),
      60_000,
    );
    const going = saver.save();
    const stopping = saver.stop();
    open();
    await Promise.all([going, stopping]);
    expect((await recordOf(id)).floor).toBe(15);
  });

  it('saves on its own every interval', async () => {
    const id = await keyWith(monthly);
    let spent = 0;
    const saver = new SpentCredits(
      () => [spend(id, { spent: (spent += 3) })],
      credits,
      createLogger('silent'),
      100,
    );
    saver.start();
    const saved = await waitFor(
      async () => (await recordOf(id)).floor,
      (floor) => floor >= 9,
      { timeoutMs: 3_000 },
    );
    await saver.stop();
    expect(saved.value).toBeGreaterThanOrEqual(9);
  });
});
