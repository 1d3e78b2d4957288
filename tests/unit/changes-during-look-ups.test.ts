import { describe, expect, it } from '@jest/globals';
import { ChangesDuringLookUps } from '../../src/keys/changes-during-look-ups.js';
import type { KeyChange } from '../../src/keys/key-events.js';

/** A change of key `keyId` announced by message (it drops), or read back from the record (it rechecks). */
const message = (keyId: string): KeyChange => ({ kind: 'key', keyId });
const readBack = (keyId: string): KeyChange => ({ kind: 'key', keyId, recheck: true });
/** What a look-up of key `id` read: a change concerns it when it is of that key, or of every key. */
const isOf = (id: string) => (change: KeyChange) =>
  change.kind === 'all' || (change.kind === 'key' && change.keyId === id);

describe('the key changes announced while look-ups are under way', () => {
  it('drops what a look-up read on a message of its key, rechecks it on a read-back, leaves it on another key', () => {
    const changes = new ChangesDuringLookUps();
    const [a, b, c, d] = [changes.begin(), changes.begin(), changes.begin(), changes.begin()];
    changes.changed(readBack('k1'));
    changes.changed(message('k2'));
    changes.changed({ kind: 'all' });
    expect(changes.raced(a, isOf('k1'))).toBe('rechecked');
    expect(changes.raced(b, isOf('k2'))).toBe('dropped');
    expect(changes.raced(c, (change) => change.kind === 'key' && change.keyId === 'k3')).toBeUndefined();
    // A subscriber's reconnection: every key is checked again.
    expect(changes.raced(d, isOf('k3'))).toBe('rechecked');
  });

  it('races no look-up with a change announced before it began, kept or not', () => {
    const changes = new ChangesDuringLookUps();
    changes.changed(message('k1'));
    const early = changes.begin();
    changes.changed(message('k1'));
    const late = changes.begin();
    expect([changes.since(early), changes.since(late)]).toEqual([true, false]);
    expect(changes.raced(late, isOf('k1'))).toBeUndefined();
    expect(changes.raced(early, isOf('k1'))).toBe('dropped');
    expect(changes.raced(changes.begin(), isOf('k1'))).toBeUndefined();
  });

  it('keeps a change until the last look-up under way is over, however the others end', () => {
    const changes = new ChangesDuringLookUps();
    changes.begin();
    const found = changes.begin();
    changes.changed(message('k1'));
    // The first found nothing, or failed.
    changes.over();
    expect(changes.raced(found, isOf('k1'))).toBe('dropped');
  });

  it('past its bound lets the oldest go, and a look-up that began before them takes itself as dropped', () => {
    const changes = new ChangesDuringLookUps(2);
    const before = changes.begin();
    changes.changed(message('k1'));
    changes.changed(message('k2'));
    const between = changes.begin();
    changes.changed(message('k3'));
    const [after, alsoAfter] = [changes.begin(), changes.begin()];
    changes.changed(readBack('k4'));
    expect(changes.raced(before, isOf('k9'))).toBe('dropped');
    expect(changes.raced(between, isOf('k9'))).toBe('dropped');
    expect(changes.raced(after, isOf('k9'))).toBeUndefined();
    expect(changes.raced(alsoAfter, isOf('k4'))).toBe('rechecked');
  });
});
