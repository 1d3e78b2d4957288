/**
 * The API's refusals in an administrator's words: its codes and validation details name fields and
 * query parameters (`limits.1.name repeats…`, `force=true`); the console names what is on the screen
 * and says what to do.
 */
import type { ApiError } from './api';
import { countOf, formatNumber, formatTime, isoSeconds } from './format';
import { VISITOR_LABELS } from './plans';

/** Whom a limit counts for, as the plan form's “Counted for” names it. */
const countedFor = (per: string): string =>
  per in VISITOR_LABELS ? `each ${VISITOR_LABELS[per as keyof typeof VISITOR_LABELS]}` : 'the whole key';

/** The fields the management API validates, as the console's forms label them. */
const FIELDS: Readonly<Record<string, string>> = {
  name: 'Name',
  externalId: 'External ID',
  metadata: 'Metadata',
  enabled: 'Enabled',
  expiresAt: 'Expiry',
  rateLimitId: 'Plan id',
  consumerApiKeyId: 'Key',
  consumerId: 'Consumer id',
  description: 'Description',
  limits: 'Limits',
  limit: 'Requests',
  period: 'Per',
  algorithm: 'Window',
  gracePeriodSeconds: 'Grace period',
  from: 'From',
  to: 'To',
  granularity: 'Granularity',
  groupBy: 'Grouping',
  cursor: 'Page',
  action: 'Action',
  targetId: 'Target id',
  actorId: 'Actor',
  scopes: 'Scopes',
  routeId: 'Route id',
  upstreamUrl: 'Backend URL',
  match: 'Match',
  timeoutMs: 'Timeout',
  url: 'URL',
  events: 'Events',
  credential: 'Credential',
  eventName: 'Event name',
  customerField: 'Customer field',
  secret: 'Secret',
  sort: 'Order',
  costs: 'Costs',
  cost: 'Units per request',
  routeIds: 'Routes',
  methods: 'Methods',
  pathPrefix: 'Path prefix',
  credits: 'Credits',
  add: 'Amount',
  set: 'Amount',
  '(body)': 'The request',
};

/** The numbered rows of a plan's form: `limits.1` is "Limit 2", `costs.0` "Cost 1". */
const ROWS: Readonly<Record<string, string>> = { limits: 'Limit', costs: 'Cost' };

/** Fields inside an object, as the route form labels them: `match.pathPrefix` is "Path prefix". */
const NESTED: Readonly<Record<string, string>> = {
  'match.host': 'Host',
  'match.pathPrefix': 'Path prefix',
  'match.methods': 'Methods',
};

/**
 * `limits.1.name` → `Limit 2, name`; `costs.0.match.routeIds` → `Cost 1, routes`; a list's item
 * (`limits.1.match.routeIds.0`) is named by its list, `Limit 2, routes`; `costs.0.match` →
 * `Cost 1, match`; `match.pathPrefix` → `Path prefix`; `externalId` → `External ID`.
 */
export function fieldLabel(field: string): string {
  const [head = '', index, ...rest] = field.split('.');
  const row = ROWS[head];
  if (row !== undefined && index !== undefined && /^\d+$/.test(index)) {
    const named = `${row} ${Number(index) + 1}`;
    const last = rest.filter((part) => !/^\d+$/.test(part)).at(-1);
    return last === undefined ? named : `${named}, ${(FIELDS[last] ?? last).toLowerCase()}`;
  }
  return NESTED[field] ?? FIELDS[head] ?? field;
}

/** What a field's pattern asks for, in words, where a list of allowed characters would not say it. */
const PATTERNS: Readonly<Record<string, string>> = {
  upstreamUrl:
    'must be an http:// or https:// address, with no query or fragment, such as http://search.internal:8080',
  pathPrefix: 'must start with a slash and name whole path segments, with no trailing slash: / or /v1/search',
  host: 'must be a host name, such as api.example.com, or *.example.com for every host under it',
};

const TYPES: Readonly<Record<string, string>> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'a list',
  null: 'empty',
};

/** `^[A-Za-z0-9._:-]*$` → `letters, digits and . _ : -`; undefined for any other kind of pattern. */
function allowedCharacters(pattern: string): string | undefined {
  const set = /^\^\[([^\]^]+)\][*+]?(\{[\d,]+\})?\$$/.exec(pattern)?.[1];
  if (set === undefined) return undefined;
  const parts: string[] = [];
  const rest = set
    .replace('A-Za-z', () => (parts.push('letters'), ''))
    .replace('0-9', () => (parts.push('digits'), ''))
    .replaceAll('\\', '');
  return [parts.join(', '), [...rest].join(' ')].filter((p) => p !== '').join(' and ');
}

/** What is wrong with one field, in words (the API's own when no plainer ones are known). */
function plainProblem(field: string, message: string): string {
  const rules: readonly [RegExp, (...groups: string[]) => string][] = [
    [
      /^repeats the name "(.*)"$/,
      (name) => `“${name}” is the name of another limit too: give each limit its own`,
    ],
    [
      /^repeats the period, algorithm and per of another limit without a match \((\w+), (\w+), (\w+)\)$/,
      (period, algorithm, per) =>
        `counts the same requests as another limit (${period === 'none' ? '' : `per ${period}, `}${algorithm}, ${countedFor(per)}): change its period, window or “Counted for”, or make one count only some requests`,
    ],
    [
      /^would take the balance beyond (\d+) units$/,
      (units) =>
        `would take the balance beyond ${formatNumber(Number(units))} credits, the most it can hold: add less, or set it`,
    ],
    [/^must NOT have fewer than 1 characters$/, () => 'must not be empty'],
    [/^must NOT have more than (\d+) characters$/, (n) => `must be at most ${n} characters long`],
    [/^must NOT have fewer than (\d+) characters$/, (n) => `must be at least ${n} characters long`],
    [/^must NOT have more than (\d+) items$/, (n) => `can hold at most ${n}`],
    [/^must NOT have fewer than (\d+) items$/, (n) => `needs at least ${n}`],
    [
      /^must NOT have fewer than 1 properties$/,
      () => 'needs at least one condition: routes, methods or a path prefix',
    ],
    [
      /^must match pattern "(.*)"$/,
      (pattern) => {
        const asked = PATTERNS[field.split('.').at(-1) ?? ''];
        if (asked !== undefined) return asked;
        const allowed = allowedCharacters(pattern);
        return allowed ? `may hold only ${allowed}` : 'holds a character it may not';
      },
    ],
    [/^names no route \("(.*)"\)$/, (id) => `no route has the id “${id}”: choose one of the routes offered`],
    [/^must be >= (\S+)$/, (n) => `must be at least ${n}`],
    [/^must be <= (\S+)$/, (n) => `must be at most ${n}`],
    [/^must be > (\S+)$/, (n) => `must be more than ${n}`],
    [/^must be < (\S+)$/, (n) => `must be less than ${n}`],
    [/^must be (\w+)$/, (type) => `must be ${TYPES[type] ?? type}`],
    [/^must be equal to one of the allowed values$/, () => 'must be one of the values offered'],
    [/^must match format "date-time"$/, () => 'must be a date and time'],
  ];
  for (const [pattern, say] of rules) {
    const match = pattern.exec(message);
    if (match) return say(...match.slice(1));
  }
  return message;
}

/** One offending field, as a line of the error: `Limit 2, name: “same” is the name of another limit too…`. */
export function describeDetail(detail: { field: string; message: string }): string {
  return `${fieldLabel(detail.field)}: ${plainProblem(detail.field, detail.message)}.`;
}

/** The error's lead sentence: what went wrong and what to do, said once. */
export function plainMessage(error: ApiError, now = Date.now()): string {
  switch (error.code) {
    case 'validation_failed':
      return error.details && error.details.length > 0 ? 'Some values need a change:' : error.message;
    case 'insufficient_scope':
      return (
        `The token you signed in with does not hold the scope ${error.scope ?? 'this needs'}. Sign in ` +
        'with the root token or an admin token that holds it, or ask an administrator to create one.'
      );
    case 'rate_limit_in_use':
      return error.keyCount === undefined
        ? 'Keys hold this plan now: deleting it unbinds them first.'
        : `${countOf(error.keyCount, 'key')} ${error.keyCount === 1 ? 'holds' : 'hold'} this plan now: ` +
            'deleting it unbinds its keys first.';
    case 'consumer_has_keys':
      return error.keyCount === undefined
        ? 'Keys belong to this consumer now: deleting it detaches them first.'
        : `${countOf(error.keyCount, 'key')} ${error.keyCount === 1 ? 'belongs' : 'belong'} to this consumer ` +
            'now: deleting it detaches them first.';
    case 'too_many_failed_attempts': {
      const seconds = error.retryAfterSeconds ?? 60;
      return (
        'Too many wrong tokens or key secrets were tried from this address. Try again in ' +
        `${countOf(seconds, 'second')}, from ${formatTime(isoSeconds(now + seconds * 1000))}.`
      );
    }
    case 'invalid_cursor':
      return 'This page of the list no longer exists: start again from the first page.';
    default:
      return error.message;
  }
}
