/**
 * The OpenAPI 3.1 document of the management API, built from the same TypeBox schemas as the
 * validators, so the document cannot describe a request the service would refuse or vice versa.
 * The decisions the service spec leaves open are written down here, where API clients look.
 */
import { ERRORS, type ErrorCode } from '../errors.js';
import { MAX_BODY_BYTES } from './json-body.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import { SCOPES } from './scopes.js';
import { DEFAULT_PAGE_SIZE, MAX_GRACE_PERIOD_SECONDS, MAX_METADATA_BYTES, MAX_PAGE_SIZE, NAMED_SCHEMAS } from './schemas.js';

type JsonObject = { [key: string]: unknown };

export interface OpenApiDocument extends JsonObject {
  openapi: '3.1.0';
  info: JsonObject;
  paths: Record<string, JsonObject>;
  components: JsonObject;
}

export interface OpenApiOptions {
  /** MANAGEMENT_PREFIX, so the paths match this deployment. */
  readonly prefix?: string;
  readonly version?: string;
  /** The public listener (PORT, HOST) the document's operations are called on, not the ops port. */
  readonly publicListener?: { readonly host: string; readonly port: number };
}

/** `servers`: the public listener; its host is a variable (behind a load balancer, clients use its name). */
function servers(listener: OpenApiOptions['publicListener'] = { host: '0.0.0.0', port: 8080 }): JsonObject[] {
  const anyAddress = listener.host === '0.0.0.0' || listener.host === '::';
  return [
    {
      url: 'http://{host}:{port}',
      description:
        'The public listener (PORT): management API and proxied traffic; `host` is the name clients use to reach Tollgate. This document is served on the ops port.',
      variables: {
        host: { default: anyAddress ? 'localhost' : listener.host },
        port: { default: String(listener.port) },
      },
    },
  ];
}

const DESCRIPTION = `Tollgate authenticates consumer API keys, enforces per-key rate limit plans and forwards requests
to a backend. This document covers the **management API** (root token) and describes the proxied traffic.

## Conventions
- **Authentication:** \`Authorization: Bearer <ROOT_TOKEN>\` (every scope, compared in constant time) or
  \`Authorization: Bearer <admin token>\` (\`tga_…\`, its own scopes). Missing or wrong: 401 \`unauthorized\` with
  \`WWW-Authenticate: Bearer\` (\`error="invalid_token"\` when a wrong token was sent). A valid token without the scope
  an operation needs (each operation names it under \`security\` and \`x-required-scope\`): 403 \`insufficient_scope\`
  with \`WWW-Authenticate: Bearer error="insufficient_scope", scope="…"\`. Wrong credentials from one client address
  are throttled: past 20 a minute every credential from that address gets 429 \`too_many_failed_attempts\` with
  \`Retry-After\` until the minute ends (counted across replicas where Redis is configured).
- **Audit log:** every call that changes state writes one entry in the same transaction as the change (\`GET
  /tollgate/audit-log\`); every response carries \`x-request-id\`, which the entry records.
- **Errors:** every error body is \`{"error": "<message>", "code": "<snake_case_code>"}\`;
  \`validation_failed\` adds \`details: [{field, message}]\`, one entry per offending field.
- **Request bodies:** \`Content-Type: application/json\` only (UTF-8; anything else, or compressed bodies: 415
  \`unsupported_media_type\`), at most ${MAX_BODY_BYTES} bytes (413 \`payload_too_large\`). Malformed or empty JSON: 400
  \`invalid_json\`. Unknown properties, missing fields or wrong types: 400 \`validation_failed\`. Keys such as
  \`__proto__\` are unknown properties like any other.
- **Routes and methods:** a known route with another method: 405 \`method_not_allowed\` with \`Allow\`. Only the
  paths below, exactly (case-sensitive, no trailing slash), are management routes: every other path is proxied.
- **Timestamps:** UTC, whole seconds, \`YYYY-MM-DDThh:mm:ssZ\` everywhere except the \`createdAt\` of the
  key-create response, which is \`YYYY-MM-DD HH:MM:SS\` (UTC), as the service spec shows it.
- **Pagination:** the key and plan lists are ordered oldest first. \`limit\` 1-${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}); \`nextCursor\` is
  present only when more keys remain and is passed back as \`cursor\`. Cursors are opaque; a cursor this service
  did not issue: 400 \`invalid_cursor\`. Unknown query parameters: 400 \`validation_failed\`.
- **Limits:** \`name\` 1-200 characters; plan \`description\` at most 1000 characters (default \`""\`);
  \`rateLimitId\` 1-128 characters of \`A-Z a-z 0-9 . _ : -\`; plan \`limit\` 1 to 2^53-1. U+0000 is refused in text.
- **Database unavailable:** 503 \`database_unavailable\`; retry later. A database that refuses writes (disk full,
  read-only): every change answers 503 \`storage_unavailable\` with \`Retry-After\`, while reads go on. Responses carry \`Cache-Control: no-store\`.

## Keys and plans
- Secrets are \`tg_\` followed by 43 base64url characters (256 random bits). They are stored as a SHA-256 hash
  (for lookup) and AES-256-GCM ciphertext (for the detail response), never in plain text.
- Binding a plan replaces the key's previous plan and updates its \`lastUpdated\`; if both the key and the plan
  are unknown, the answer is \`rate_limit_not_found\`. A new binding takes effect within 1 s on every replica;
  a deleted key is refused at once by the replica that deleted it and within 1 s by every replica.
- **Lifecycle:** a key can be disabled (\`enabled: false\`: 403 \`key_disabled\`) and can expire (\`expiresAt\`: 401
  \`key_expired\` from that instant on every replica). Neither is forwarded or consumes quota; both count in the key's
  usage as failed requests. \`metadata\` is a JSON object of at most ${MAX_METADATA_BYTES} bytes, returned as given: its members keep the
  order sent at every depth (integer-like names too), in every answer and in the audit log; insignificant whitespace
  is dropped, and numbers and escapes are written as JSON.stringify writes them.
- **Roll:** \`POST /consumer-api-key/{id}/roll\` gives the key a new secret that works at once on every replica; the
  previous one keeps working until \`previousSecretExpiresAt\` (\`gracePeriodSeconds\`, 0-${MAX_GRACE_PERIOD_SECONDS}) and is refused
  (401 \`invalid_api_key\`) from then on. Both secrets are one key: one count, one usage. Rolling again ends the earlier
  grace at once.
- **Changes reach every replica within 1 s:** enable, disable, roll, expiry changes, plan changes, bindings, deletions.
  A plan change keeps what the current windows have spent. \`lastUpdated\` moves with every change; usage and
  \`lastUsedAt\` (the last proxied request that presented the key, visible within 2 s) do not move it.
- \`usage.rateLimits\` comes from the key's plan, else from \`DEFAULT_RATE_LIMIT\`; it is \`null\` when neither applies
  (such keys are counted but not limited).

## Proxied requests (not management routes)
Every method on every path that is not a management route is forwarded to the backend (\`UPSTREAM_URL\` + path +
query), bodies streamed both ways.
- Credential: \`Authorization: Bearer <secret>\` or \`x-api-key: <secret>\`. Missing: 401 \`missing_api_key\`;
  unknown, deleted, malformed or a rolled secret past its grace: 401 \`invalid_api_key\`; an expired key: 401
  \`key_expired\`; a disabled key: 403 \`key_disabled\`.
- A plan holds one to four limits (\`limits\`), each fixed or sliding. Fixed windows are aligned to UTC (second,
  minute, hour, day from 00:00, week from Monday 00:00, month from the 1st 00:00, year from 1 January 00:00); a
  sliding limit never admits more than \`limit\` in any span of one period. A request is admitted only when every
  limit has room and is then counted in all of them; only admitted requests consume quota.
- Over a limit: **429** with the \`RateLimitExceeded\` body (\`{error, limit, period, remaining: 0, resetTime, name}\`,
  the refusing limit whose window ends last) and the headers \`Retry-After\` (whole seconds until \`resetTime\`, at
  least 1), \`RateLimit-Policy\` (every limit, by name) and \`RateLimit\` (the limit with the fewest left)
  (draft-ietf-httpapi-ratelimit-headers). Nothing is forwarded.
- Within the limit the backend receives \`x-api-key: <secret>\` and \`x-consumer-api-key-id: <id>\`; the consumer's
  \`Authorization\` and hop-by-hop headers are removed. The client receives the backend's answer plus \`RateLimit\`
  and \`RateLimit-Policy\` when a limit applies.
- Backend unreachable: 502 \`bad_gateway\`; no answer within \`UPSTREAM_TIMEOUT_MS\`: 504 \`gateway_timeout\`;
  \`REDIS_FAILURE_MODE=closed\` while Redis is down: 503 \`limit_unavailable\`.`;

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: JsonObject, extra: JsonObject = {}): JsonObject => ({
  content: { 'application/json': { schema, ...extra } },
});

/** A response documented by the error codes it may carry, each with an example body. */
function errorResponse(description: string, codes: readonly ErrorCode[], headers?: JsonObject): JsonObject {
  const examples = Object.fromEntries(
    codes.map((code) => [code, { value: { error: ERRORS[code].message, code } }]),
  );
  return { description, ...(headers && { headers }), ...json(ref('Error'), { examples }) };
}

const AUTH_HEADER = {
  'WWW-Authenticate': { description: 'Bearer challenge (RFC 6750)', schema: { type: 'string' } },
};

const COMMON_RESPONSES = {
  Unauthorized: errorResponse('Missing or wrong token', ['unauthorized'], AUTH_HEADER),
  Forbidden: errorResponse('The token lacks the scope this operation needs', ['insufficient_scope'], AUTH_HEADER),
  Throttled: errorResponse('Too many wrong credentials from this client address', ['too_many_failed_attempts'], {
    'Retry-After': { description: 'Seconds until the address may try again', schema: { type: 'integer', minimum: 1 } },
  }),
  MethodNotAllowed: errorResponse('Known route, other method', ['method_not_allowed'], {
    Allow: { description: 'The methods this route accepts', schema: { type: 'string' } },
  }),
  BadBody: errorResponse('Malformed JSON, or a body that does not match the schema', [
    'validation_failed',
    'invalid_json',
  ]),
  PayloadTooLarge: errorResponse(`Body larger than ${MAX_BODY_BYTES} bytes`, ['payload_too_large']),
  UnsupportedMediaType: errorResponse('Body is not application/json (or is compressed)', [
    'unsupported_media_type',
  ]),
  Unavailable: errorResponse('The database is unavailable; retry later', ['database_unavailable']),
  WriteUnavailable: errorResponse(
    'The database is unavailable, or refuses writes (disk full, read-only): retry later',
    ['database_unavailable', 'storage_unavailable'],
    { 'Retry-After': { description: `storage_unavailable: seconds to wait before retrying (${ERRORS.storage_unavailable.retryAfterSeconds})`, schema: { type: 'integer', minimum: 1 } } },
  ),
  Unexpected: errorResponse('Unexpected server error', ['internal_error']),
};

const responseRef = (name: keyof typeof COMMON_RESPONSES): JsonObject => ({
  $ref: `#/components/responses/${name}`,
});

/** The answers every route shares; routes that read a body add the body errors. */
function standardResponses(readsBody: boolean): JsonObject {
  return {
    ...(readsBody && {
      '400': responseRef('BadBody'),
      '413': responseRef('PayloadTooLarge'),
      '415': responseRef('UnsupportedMediaType'),
    }),
    '401': responseRef('Unauthorized'),
    '403': responseRef('Forbidden'),
    '405': responseRef('MethodNotAllowed'),
    '429': responseRef('Throttled'),
    '503': responseRef('Unavailable'),
    default: responseRef('Unexpected'),
  };
}

const keyIdParameter = {
  name: 'consumerApiKeyId',
  in: 'path',
  required: true,
  description: 'The key id (`id` of the create response)',
  schema: { type: 'string' },
};

const planIdParameter = {
  name: 'rateLimitId',
  in: 'path',
  required: true,
  description: 'The plan id',
  schema: { type: 'string' },
};

const limitParameter = {
  name: 'limit',
  in: 'query',
  description: `Page size, 1-${MAX_PAGE_SIZE}`,
  schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
};

const cursorParameter = {
  name: 'cursor',
  in: 'query',
  description: '`nextCursor` of the previous page',
  schema: { type: 'string' },
};

const KEY_FILTERS = [
  { name: 'rateLimitId', in: 'query', description: 'Only keys bound to this plan', schema: { type: 'string' } },
  { name: 'enabled', in: 'query', description: 'Only enabled (`true`) or disabled (`false`) keys', schema: { type: 'boolean' } },
  { name: 'externalId', in: 'query', description: 'Only keys with this `externalId`', schema: { type: 'string' } },
  { name: 'namePrefix', in: 'query', description: 'Only keys whose name starts with this text', schema: { type: 'string' } },
];

const BAD_PAGE_QUERY = errorResponse('Bad `limit` (validation_failed) or `cursor` (invalid_cursor), or an unknown parameter', [
  'validation_failed',
  'invalid_cursor',
]);

const KEY_NOT_FOUND = errorResponse('No key has that id', ['key_not_found']);

const USAGE_PARAMETERS = [
  {
    name: 'from',
    in: 'query',
    description: 'Start of the range, YYYY-MM-DDThh:mm:ssZ (default: 24 h before `to`); a fraction of a second (as toISOString() writes it) is cut off',
    schema: { type: 'string' },
  },
  { name: 'to', in: 'query', description: 'End of the range, exclusive, like `from` (default: now)', schema: { type: 'string' } },
  {
    name: 'granularity',
    in: 'query',
    description: 'minute, hour, day or month (default: minute up to 3 h, hour up to 4 days, day beyond)',
    schema: { type: 'string', enum: ['minute', 'hour', 'day', 'month'] },
  },
];

const USAGE_RANGE_ERRORS = errorResponse(
  'A bad parameter (validation_failed), a range reaching beyond retention at that granularity, or more than 1,500 buckets (with `groupBy`: more than 320,000 series buckets, series × buckets)',
  ['validation_failed', 'range_beyond_retention', 'range_too_large'],
);
const PLAN_NOT_FOUND = errorResponse('No plan has that id', ['rate_limit_not_found']);

/** `/consumer-api-key/:consumerApiKeyId` → `/consumer-api-key/{consumerApiKeyId}`. */
const openApiPath = (prefix: string, path: string): string => prefix + path.replace(/:([A-Za-z]+)/g, '{$1}');

export function buildOpenApiDocument(options: OpenApiOptions = {}): OpenApiDocument {
  const prefix = options.prefix ?? '';
  const schemas = Object.fromEntries(
    // JSON round trip: TypeBox's symbol-keyed metadata has no place in the document.
    Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [
      name,
      JSON.parse(JSON.stringify(schema)) as JsonObject,
    ]),
  );
  const paths: Record<string, JsonObject> = {
    [openApiPath(prefix, PATHS.createKey)]: {
      post: {
        operationId: 'createConsumerApiKey',
        tags: ['Consumer API keys'],
        summary: 'Create a consumer API key',
        description:
          'Generates the secret. `createdAt` is `YYYY-MM-DD HH:MM:SS` (UTC) in this response only.',
        requestBody: { required: true, ...json(ref('CreateKeyRequest')) },
        responses: {
          '201': {
            description: 'Created',
            headers: { Location: { description: 'Path of the key detail', schema: { type: 'string' } } },
            ...json(ref('CreateKeyResponse')),
          },
          '404': errorResponse('`rateLimitId` names no plan', ['rate_limit_not_found']),
          ...standardResponses(true),
        },
      },
    },
    [openApiPath(prefix, PATHS.keys)]: {
      get: {
        operationId: 'listConsumerApiKeys',
        tags: ['Consumer API keys'],
        summary: 'List consumer API keys, oldest first',
        parameters: [
          limitParameter,
          cursorParameter,
          ...KEY_FILTERS,
        ],
        responses: {
          '200': { description: 'One page of keys', ...json(ref('ListKeysResponse')) },
          '400': BAD_PAGE_QUERY,
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.key)]: {
      parameters: [keyIdParameter],
      get: {
        operationId: 'getConsumerApiKey',
        tags: ['Consumer API keys'],
        summary: 'Show a key with its secret and usage',
        description:
          'Usage shows a proxied request within 2 s, whichever replica served it. `usage.rateLimits` is read without consuming quota.',
        responses: {
          '200': { description: 'The key', ...json(ref('KeyDetailResponse')) },
          '404': KEY_NOT_FOUND,
          ...standardResponses(false),
          '503': errorResponse('The database or the rate limiter is unavailable; retry later', [
            'database_unavailable',
            'limit_unavailable',
          ]),
        },
      },
      patch: {
        operationId: 'updateConsumerApiKey',
        tags: ['Consumer API keys'],
        summary: 'Change a key: name, owner, metadata, enabled, expiry',
        description:
          'Any of the fields; `null` clears `externalId` and `expiresAt`. Takes effect on every replica within 1 s and moves `lastUpdated`; a body that sets only what the key already has changes nothing (no audit entry, `lastUpdated` stays).',
        requestBody: { required: true, ...json(ref('UpdateKeyRequest')) },
        responses: {
          '200': { description: 'The key as it now is (the detail without `usage`)', ...json(ref('KeyResponse')) },
          '404': KEY_NOT_FOUND,
          ...standardResponses(true),
        },
      },
      delete: {
        operationId: 'deleteConsumerApiKey',
        tags: ['Consumer API keys'],
        summary: 'Delete a key (and its usage)',
        responses: {
          '200': { description: 'Deleted', ...json(ref('DeleteKeyResponse')) },
          '404': KEY_NOT_FOUND,
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.rollKey)]: {
      parameters: [keyIdParameter],
      post: {
        operationId: 'rollConsumerApiKey',
        tags: ['Consumer API keys'],
        summary: 'Give a key a new secret, the previous one working for a grace period',
        description:
          'The body may be left out (grace 0). The new secret works at once on every replica; the previous one until `previousSecretExpiresAt`, then 401 `invalid_api_key`, on every replica from that very instant: the first whole second at least `gracePeriodSeconds` after the roll. With grace 0 it is refused at once wherever the roll is known, and `previousSecretExpiresAt` is the instant by which every replica has heard of it (the first whole second at least 0.5 s away), never one before the real end. Rolling again ends an earlier grace at once.',
        requestBody: { required: false, ...json(ref('RollKeyRequest')) },
        responses: {
          '200': { description: 'Rolled', ...json(ref('RollKeyResponse')) },
          '404': KEY_NOT_FOUND,
          ...standardResponses(true),
        },
      },
    },
    [openApiPath(prefix, PATHS.createPlan)]: {
      post: {
        operationId: 'createRateLimitPlan',
        tags: ['Rate limit plans'],
        summary: 'Create a rate limit plan under a caller-chosen id',
        description:
          'One limit as `limit` and `period` (the seed\'s body), or one to four as `limits`. Every plan response carries both shapes: `limit` and `period` are the first of `limits`.',
        requestBody: { required: true, ...json(ref('CreatePlanRequest')) },
        responses: {
          '201': {
            description: 'Created: the plan, its limits with their defaults filled in',
            ...json(ref('PlanResponse')),
          },
          '409': errorResponse('A plan with that rateLimitId exists; plans are not overwritten', [
            'rate_limit_exists',
          ]),
          ...standardResponses(true),
        },
      },
    },
    [openApiPath(prefix, PATHS.plans)]: {
      get: {
        operationId: 'listRateLimitPlans',
        tags: ['Rate limit plans'],
        summary: 'List plans, oldest first, with the number of keys bound to each',
        parameters: [limitParameter, cursorParameter],
        responses: {
          '200': { description: 'One page of plans', ...json(ref('ListPlansResponse')) },
          '400': BAD_PAGE_QUERY,
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.plan)]: {
      parameters: [planIdParameter],
      get: {
        operationId: 'getRateLimitPlan',
        tags: ['Rate limit plans'],
        summary: 'Show a plan with the number of keys bound to it',
        responses: {
          '200': { description: 'The plan', ...json(ref('PlanResponse')) },
          '404': PLAN_NOT_FOUND,
          ...standardResponses(false),
        },
      },
      patch: {
        operationId: 'updateRateLimitPlan',
        tags: ['Rate limit plans'],
        summary: "Change a plan's description or limits",
        description:
          'Takes effect on every replica within 1 s. `limits` replaces every limit; `limit` and `period` change a plan of one limit (a plan of several answers 400 `validation_failed`). The current windows keep what they have spent: lowering a limit below what its window has admitted refuses the rest of that window.',
        requestBody: { required: true, ...json(ref('UpdatePlanRequest')) },
        responses: {
          '200': { description: 'The plan as it now is', ...json(ref('PlanResponse')) },
          '404': PLAN_NOT_FOUND,
          ...standardResponses(true),
        },
      },
      delete: {
        operationId: 'deleteRateLimitPlan',
        tags: ['Rate limit plans'],
        summary: 'Delete a plan; with force=true, unbind its keys first',
        parameters: [
          {
            name: 'force',
            in: 'query',
            description: '`true`: unbind the keys bound to the plan (moving their `lastUpdated`; each gets an audit entry `key.remove_plan` of its own, with the request id of the delete), then delete it',
            schema: { type: 'boolean', default: false },
          },
        ],
        responses: {
          '200': { description: 'Deleted', ...json(ref('DeletePlanResponse')) },
          '400': errorResponse('`force` is not `true` or `false`, or an unknown parameter', ['validation_failed']),
          '404': PLAN_NOT_FOUND,
          '409': errorResponse('Keys are bound to the plan and `force` is not `true`; the body adds `keyCount`', ['rate_limit_in_use']),
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.applyPlan)]: {
      post: {
        operationId: 'applyRateLimitPlan',
        tags: ['Rate limit plans'],
        summary: "Bind a plan to a key, replacing the key's previous plan",
        requestBody: { required: true, ...json(ref('ApplyPlanRequest')) },
        responses: {
          '200': { description: "Bound; the key's `lastUpdated` is now (unless the key already had this plan: then nothing changes, and nothing is recorded)", ...json(ref('ApplyPlanResponse')) },
          '404': errorResponse('Unknown plan (checked first) or unknown key', [
            'rate_limit_not_found',
            'key_not_found',
          ]),
          ...standardResponses(true),
        },
      },
    },
    [openApiPath(prefix, PATHS.removePlan)]: {
      post: {
        operationId: 'removeRateLimitPlan',
        tags: ['Rate limit plans'],
        summary: "Unbind a key's plan",
        description: 'Also 200 when the key had no plan. Takes effect on every replica within 1 s.',
        requestBody: { required: true, ...json(ref('RemovePlanRequest')) },
        responses: {
          '200': { description: 'The key has no plan now', ...json(ref('RemovePlanResponse')) },
          '404': KEY_NOT_FOUND,
          ...standardResponses(true),
        },
      },
    },
    [openApiPath(prefix, PATHS.keyUsage)]: {
      parameters: [keyIdParameter],
      get: {
        operationId: 'getConsumerApiKeyUsage',
        tags: ['Usage'],
        summary: "A key's usage over time",
        description:
          'Zero-filled buckets aligned to UTC, oldest first; a request shows within 2 s. `groupBy` (day and month only) adds one series per endpoint or customer, filed under the day each request happened; each day and month holds at most 1,000 endpoints and 10,000 customers of a key, the rest under "(other)". `Accept: text/csv` answers the same as CSV (columns start, [endpoint|customerId,] requests, successful, failed, rateLimited, averageResponseTimeMs); an endpoint or customer id is always quoted, and one starting with = + - @, a tab or a carriage return is prefixed with \' so that a spreadsheet does not run it as a formula. Retention: minutes 48 h, hours 90 days, days 400 days, months 5 years (USAGE_RETENTION_*).',
        parameters: USAGE_PARAMETERS.concat([
          { name: 'groupBy', in: 'query', description: '`endpoint` or `customer` (day and month granularity only)', schema: { type: 'string', enum: ['endpoint', 'customer'] } },
        ]),
        responses: {
          '200': {
            description: 'The buckets',
            content: { 'application/json': { schema: ref('KeyUsageResponse') }, 'text/csv': { schema: { type: 'string' } } },
          },
          '400': USAGE_RANGE_ERRORS,
          '404': KEY_NOT_FOUND,
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.fleetUsage)]: {
      get: {
        operationId: 'getFleetUsage',
        tags: ['Usage'],
        summary: "Every key's usage over time, and the busiest keys",
        description: 'The buckets summed over all keys (from stored usage: about a second behind), and `topKeys`: at most 10 keys with the most requests in the range. `Accept: text/csv` answers the buckets as CSV.',
        parameters: USAGE_PARAMETERS,
        responses: {
          '200': {
            description: 'The buckets and the busiest keys',
            content: { 'application/json': { schema: ref('FleetUsageResponse') }, 'text/csv': { schema: { type: 'string' } } },
          },
          '400': USAGE_RANGE_ERRORS,
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.adminTokens)]: {
      post: {
        operationId: 'createAdminToken',
        tags: ['Admin tokens and audit'],
        summary: 'Create an admin token with some scopes',
        description:
          'The token (`secret`) is shown in this answer only and stored as a hash. A token hands out no more than it holds: only scopes it holds all of (403 `insufficient_scope` naming the first it lacks) and, when it expires itself, only tokens that expire no later than it does (403 `token_outlives_caller`; an absent or null `expiresAt` means never). `expiresAt` must be in the future (400 `validation_failed`).',
        requestBody: { required: true, ...json(ref('CreateAdminTokenRequest')) },
        responses: {
          '201': { description: 'Created', ...json(ref('CreateAdminTokenResponse')) },
          ...standardResponses(true),
          '403': errorResponse('The caller lacks `tokens:write` or a scope it would grant, or the token would outlive the caller', ['insufficient_scope', 'token_outlives_caller'], AUTH_HEADER),
        },
      },
      get: {
        operationId: 'listAdminTokens',
        tags: ['Admin tokens and audit'],
        summary: 'List admin tokens (never their secrets)',
        responses: {
          '200': { description: 'Every admin token, oldest first', ...json(ref('ListAdminTokensResponse')) },
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.adminToken)]: {
      parameters: [{ name: 'tokenId', in: 'path', required: true, description: 'The admin token id (`id`)', schema: { type: 'string' } }],
      delete: {
        operationId: 'deleteAdminToken',
        tags: ['Admin tokens and audit'],
        summary: 'Delete an admin token: refused at once on every replica',
        description: 'A token may delete only tokens whose scopes it holds all of: a narrower token cannot revoke a broader one.',
        responses: {
          '200': { description: 'Deleted', ...json(ref('DeleteAdminTokenResponse')) },
          '403': errorResponse('The caller lacks `tokens:write`, or a scope the token to delete holds', ['insufficient_scope'], AUTH_HEADER),
          '404': errorResponse('No admin token has that id', ['admin_token_not_found']),
          ...standardResponses(false),
        },
      },
    },
    [openApiPath(prefix, PATHS.auditLog)]: {
      get: {
        operationId: 'listAuditLog',
        tags: ['Admin tokens and audit'],
        summary: 'The audit log, newest first',
        description: 'Entries older than AUDIT_RETENTION_DAYS (default 365) are deleted.',
        parameters: [
          limitParameter,
          cursorParameter,
          { name: 'action', in: 'query', description: 'Only this action, e.g. `key.update`', schema: { type: 'string' } },
          { name: 'targetId', in: 'query', description: 'Only changes of this key, plan or admin token', schema: { type: 'string' } },
          { name: 'actorId', in: 'query', description: 'Only changes made with this admin token (its `id`), or `root`: with the root token', schema: { type: 'string' } },
          { name: 'from', in: 'query', description: 'Entries at or after this instant (YYYY-MM-DDThh:mm:ssZ)', schema: { type: 'string' } },
          { name: 'to', in: 'query', description: 'Entries before this instant (YYYY-MM-DDThh:mm:ssZ)', schema: { type: 'string' } },
        ],
        responses: {
          '200': { description: 'One page of entries', ...json(ref('AuditLogResponse')) },
          '400': BAD_PAGE_QUERY,
          ...standardResponses(false),
        },
      },
    },
  };

  // Each operation states the scope it needs, from the table the routes enforce.
  for (const [route, methods] of Object.entries(REQUIRED_SCOPES)) {
    const item = paths[openApiPath(prefix, PATHS[route as keyof typeof PATHS])]!;
    for (const [method, scope] of Object.entries(methods)) {
      const operation = item[method] as JsonObject;
      operation.security = [{ rootToken: [] }, { adminToken: [scope] }];
      operation['x-required-scope'] = scope;
      // Every change is a write, which a database out of space or read-only refuses.
      if (method !== 'get') (operation.responses as JsonObject)['503'] = responseRef('WriteUnavailable');
    }
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate management API',
      version: options.version ?? '0.1.0',
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: servers(options.publicListener),
    tags: [
      { name: 'Consumer API keys', description: 'Keys consumers present to the proxy' },
      { name: 'Rate limit plans', description: 'Limits per window, bound to keys' },
      { name: 'Usage', description: 'Usage over time, for billing and dashboards' },
      { name: 'Admin tokens and audit', description: 'Scoped credentials and the record of every change' },
    ],
    security: [{ rootToken: [] }, { adminToken: [] }],
    paths,
    components: {
      securitySchemes: {
        rootToken: { type: 'http', scheme: 'bearer', description: 'ROOT_TOKEN: every scope of the management API' },
        adminToken: {
          type: 'http',
          scheme: 'bearer',
          description: `An admin token (tga_…) with some of the scopes ${SCOPES.join(', ')}; each operation lists the one it needs`,
        },
        consumerKey: { type: 'http', scheme: 'bearer', description: 'A consumer secret: proxied requests' },
        consumerKeyHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'A consumer secret: proxied requests',
        },
      },
      schemas,
      responses: {
        ...COMMON_RESPONSES,
        RateLimitExceeded: {
          description: 'Proxied request over its limit (not forwarded)',
          headers: {
            'Retry-After': {
              description: 'Whole seconds until resetTime, at least 1',
              schema: { type: 'integer', minimum: 1 },
            },
            RateLimit: {
              description: 'draft-ietf-httpapi-ratelimit-headers: the limit with the fewest requests left, by name, e.g. `"day";r=0;t=3600`',
              schema: { type: 'string' },
            },
            'RateLimit-Policy': {
              description: 'draft-ietf-httpapi-ratelimit-headers: every limit of the plan, by name, e.g. `"second";q=10;w=1, "day";q=10000;w=86400`',
              schema: { type: 'string' },
            },
          },
          ...json(ref('RateLimitExceeded')),
        },
      },
    },
  };
}
