/**
 * The events of management changes (docs/guides/webhooks.md, Events), derived from what the audit log records of
 * them, so that a change, its audit entry and its event leave from the one place (`ctx.audited`) in
 * one transaction. A key's or consumer's change is its `key.*` or `consumer.*` event: `create`,
 * `delete` and `roll` are `created`, `deleted` and `rolled`; every other action on it (a PATCH, a plan
 * bound or removed, a consumer joined or left) is `updated`, but for a token minted from a key, which
 * changes nothing of it. Changes of other targets (plans, admin tokens, webhooks) have no event.
 *
 * `data` is the target as the audit log shows it (less every secret, hash and ciphertext), with its
 * id under the name the API gives it; an update adds `previous`, the target before.
 */
import { EVENT_TYPES, type EventType } from '../events/event-types.js';
import { ID_FIELDS as SUBJECT_ID_FIELDS } from '../plans/subject.js';
import type { NewEvent } from '../store/outbox.js';
import type { KeyLeak, KeyRow } from '../store/key-row.js';
import { keyAudit } from './audit-views.js';
import type { AuditedChange } from './context.js';
import { jsonText } from './json-as-written.js';

/** The targets with events (keys and consumers), and the name of their id in the API's answers. */
const ID_FIELDS: Readonly<Record<string, string>> = SUBJECT_ID_FIELDS;
const VERBS: Readonly<Record<string, string>> = {
  create: 'created',
  delete: 'deleted',
  roll: 'rolled',
  leak: 'leaked',
};
/** Recorded, never announced: the target is as it was. */
const CHANGING_NOTHING: ReadonlySet<string> = new Set(['key.mint_token']);

export function eventOfChange(change: AuditedChange, at: Date): NewEvent | undefined {
  const idField = ID_FIELDS[change.target.type];
  if (idField === undefined || CHANGING_NOTHING.has(change.action)) return undefined;
  const verb = change.action.slice(change.action.indexOf('.') + 1);
  const type = `${change.target.type}.${VERBS[verb] ?? 'updated'}`;
  if (!(EVENT_TYPES as readonly string[]).includes(type)) return undefined;
  if (change.action === 'key.leak') return { type: 'key.leaked', data: keyLeakedData(change), at };
  const subject = (change.after ?? change.before) as object;
  const previous = change.before !== null && change.after !== null ? { previous: change.before } : {};
  return {
    type: type as EventType,
    data: jsonText({ [idField]: change.target.id, ...subject, ...previous }),
    at,
  };
}

/** `key.leaked` says what was reported and done, not the whole key: `{consumerApiKeyId, consumerId, source, url, action}`. */
function keyLeakedData(change: AuditedChange): string {
  const { consumerId, leak } = change.after as { consumerId: string | null; leak: KeyLeak };
  return jsonText({
    consumerApiKeyId: change.target.id,
    consumerId,
    source: leak.source,
    url: leak.url,
    action: leak.action,
  });
}

/** `key.expiring`: the key as a `key.*` event shows it, and how many days before its expiry this is. */
export function keyExpiringData(key: KeyRow, daysBefore: number): string {
  return jsonText({ consumerApiKeyId: key.id, ...keyAudit(key), daysBefore });
}
