/**
 * The events of management changes (docs/guides/webhooks.md, Events), derived from what the audit log records of
 * them: which changes have an event, of which type, with which data.
 */
import { eventOfChange } from '../../src/management/change-events.js';
import type { AuditAction } from '../../src/store/audit-actions.js';
import { RawJson } from '../../src/management/json-as-written.js';

const at = new Date('2026-11-23T12:00:00.250Z');
const key = (name: string) => ({
  name,
  enabled: true,
  expiresAt: null,
  externalId: null,
  metadata: new RawJson('{"z":1,"a":2}'),
  rateLimitId: null,
});
const change = (action: AuditAction, type: string, before: unknown, after: unknown) => ({
  action,
  target: { type, id: `${type}_1` },
  before,
  after,
});
const eventOf = (action: AuditAction, type: string, before: unknown, after: unknown) => {
  const event = eventOfChange(change(action, type, before, after), at);
  return event && { type: event.type, data: JSON.parse(event.data) as unknown, text: event.data };
};

it('names each key change: created, rolled and deleted by their action, every other change updated', () => {
  expect(eventOf('key.create', 'key', null, key('a'))?.type).toBe('key.created');
  expect(eventOf('key.roll', 'key', key('a'), { ...key('a'), secretRolled: true })?.type).toBe('key.rolled');
  expect(eventOf('key.delete', 'key', key('a'), null)?.type).toBe('key.deleted');
  for (const action of ['key.update', 'key.apply_plan', 'key.remove_plan', 'key.detach_consumer'] as const)
    expect(eventOf(action, 'key', key('a'), key('b'))?.type).toBe('key.updated');
});

it('gives a token minted from a key no event: the key did not change', () => {
  const minted = { expiresAt: '2026-11-23T13:00:00Z', subject: null, origins: null, routes: null };
  expect(eventOf('key.mint_token', 'key', null, minted)).toBeUndefined();
});

it('names consumer changes the same way, by their action names', () => {
  const consumer = { name: 'acme', externalId: null, metadata: new RawJson('{}'), rateLimitId: null };
  expect(eventOf('consumer.create', 'consumer', null, consumer)).toMatchObject({
    type: 'consumer.created',
    data: { consumerId: 'consumer_1', name: 'acme' },
  });
  expect(eventOf('consumer.update', 'consumer', consumer, { ...consumer, name: 'acme inc' })).toMatchObject({
    type: 'consumer.updated',
    data: { name: 'acme inc', previous: { name: 'acme' } },
  });
  expect(eventOf('consumer.delete', 'consumer', consumer, null)?.type).toBe('consumer.deleted');
});

it('gives plans, admin tokens and webhooks no event', () => {
  expect(eventOf('plan.create', 'plan', null, { rateLimitId: 'p' })).toBeUndefined();
  expect(eventOf('admin_token.create', 'admin_token', null, { name: 't' })).toBeUndefined();
  expect(eventOf('webhook.update', 'webhook', { url: 'a' }, { url: 'b' })).toBeUndefined();
});

it('carries the target as the audit log shows it, its id under its API name, the previous image of an update, metadata as written', () => {
  const updated = eventOf('key.update', 'key', key('before'), key('after'))!;
  expect(updated.data).toEqual({
    consumerApiKeyId: 'key_1',
    ...JSON.parse(JSON.stringify({ ...key('after'), metadata: { z: 1, a: 2 } })),
    previous: { ...JSON.parse(JSON.stringify({ ...key('before'), metadata: { z: 1, a: 2 } })) },
  });
  expect(updated.text).toContain('"metadata":{"z":1,"a":2}');
  expect(eventOf('key.delete', 'key', key('gone'), null)!.data).toEqual(
    expect.not.objectContaining({ previous: expect.anything() }),
  );
  expect(eventOfChange(change('key.create', 'key', null, key('a')), at)!.at).toBe(at);
});
