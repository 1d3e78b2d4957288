/**
 * The prose of the OpenAPI document (`info.description`): its conventions, and the decisions the service
 * spec leaves open, written down where API clients look.
 */
import { MAX_BODY_BYTES } from './json-body.js';
import { DEFAULT_PAGE_SIZE, MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MAX_PAGE_SIZE } from './schemas.js';
import { MAX_GRACE_PERIOD_SECONDS } from './resources/keys/schemas.js';

export const DESCRIPTION = `Tollgate authenticates consumer API keys, enforces per-key rate limit plans and forwards requests
to a backend. This document covers the **management API** (root token) and describes the proxied traffic.

## Conventions
- **Authentication:** \`Authorization: Bearer <ROOT_TOKEN>\` (every scope, compared in constant time) or
  \`Authorization: Bearer <admin token>\` (\`tga_…\`, its own scopes). Missing or wrong: 401 \`unauthorized\` with
  \`WWW-Authenticate: Bearer\` (\`error="invalid_token"\` when a wrong token was sent). A valid token without the scope
  an operation needs (each operation names it under \`security\` and \`x-required-scope\`): 403 \`insufficient_scope\`
  with \`WWW-Authenticate: Bearer error="insufficient_scope", scope="…"\`; \`GET /tollgate/whoami\` needs none: it
  names the caller's own scopes. Wrong credentials from one client address
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
- **Pagination:** the key, plan and consumer lists are ordered oldest first. \`limit\` 1-${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}); \`nextCursor\` is
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
  usage as failed requests. \`metadata\` is a JSON object of at most ${MAX_METADATA_BYTES} bytes and ${MAX_METADATA_DEPTH} levels of nesting, returned as given: its members keep the
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

## Consumers
- A consumer (\`con_…\`) is the account that holds keys; a key belongs to at most one (\`consumerId\`). A plan bound to a
  consumer is shared by all its keys, on top of each key's own plan (\`DEFAULT_RATE_LIMIT\` stands in only for a key's own
  plan, never for a consumer's). \`externalId\` is unique among consumers (409 \`consumer_exists\`); \`metadata\` is kept
  as a key's.
- An unknown \`consumerId\` on a key is 404 \`consumer_not_found\`; one that is not of the \`con_…\` form is 400
  \`validation_failed\`. Deleting a consumer that holds keys is 409 \`consumer_has_keys\` (with \`keyCount\`) unless
  \`force=true\`, which detaches them: they keep working, alone. Deleting a plan consumers hold is 409
  \`rate_limit_in_use\` (with \`keyCount\` and \`consumerCount\`) unless forced, which unbinds them too. Every key and
  consumer a forced delete changes gets an audit entry of its own (\`key.detach_consumer\`, \`consumer.remove_plan\`).
- Every consumer change reaches every replica within 1 s, for all its keys. Consumer reads need \`keys:read\`, writes
  \`keys:write\`.

## Credits
- A key or a consumer may hold a prepaid balance (\`credits\`): every request it applies to spends its cost from it
  (the first match of the key's plan's \`costs\`, else of its consumer's, else 1), decided and charged in the same
  atomic step as the limits. A key of a consumer with a balance spends the consumer's; a key with a balance of its
  own too spends both, and is refused unless both hold the cost. A balance never goes below 0 and never admits
  more than it held, on any number of replicas.
- \`credits\` on a create or a PATCH sets the balance afresh (\`remaining\`, what was spent before no longer counts)
  with its \`refill\` (\`{amount, interval: "day" | "month", dayOfMonth}\`, \`dayOfMonth\` 1-31, default 1, the
  month's last day when shorter) and \`lowAt\`; \`null\` removes it. A refill sets \`remaining\` to \`amount\` at
  00:00 UTC (it does not add up). \`POST /tollgate/credits\` tops a balance up (\`add\`) or sets it (\`set\`), keeping
  its refill. Every change is audited and in force for the next request on every replica.
- \`credits.remaining\` in every answer is what the balance holds now, counted for all replicas; while the limiter
  cannot be read (Redis unreachable, when no balance is spent), the last saved count, at most about a second behind.
- Durability: the database holds every balance; each replica saves what its requests spent about once a second and
  on shutdown. A replica killed with SIGKILL in embedded mode can give back at most what it spent in its last
  second; with Redis, a Redis that restarts empty neither loses nor doubles a balance (docs/decisions/0051).

## Billing exports
- \`/tollgate/billing-exports\` sends stored usage to Stripe meter events, OpenMeter, Lago or any CloudEvents receiver:
  every closed bucket of the export's \`interval\` once per subject, its value the bucket's units, under an
  idempotency id derived from (export, subject, bucket start, revision) that every retry keeps. Usage stored after
  its bucket was sent goes as the next revision, with the missing units only: the receiver's sum equals the usage
  stored. \`credential\` is write-only (\`hasCredential\` says whether one is set). \`POST …/runs\` runs an export now;
  \`GET …/runs\` is its run log, with the receiver's answer to each send.

## Webhooks (events)
- **Events:** \`key.created\`, \`key.updated\` (a PATCH, a plan bound or removed), \`key.deleted\`, \`key.rolled\`,
  \`key.expiring\` (7 days and 1 day before \`expiresAt\`, once each), \`consumer.created\`, \`consumer.updated\`,
  \`consumer.deleted\` (\`data\`: the key, \`consumerApiKeyId\`, or consumer, \`consumerId\`, as the audit log shows it, an
  update adding \`previous\`; \`key.expiring\` adds \`daysBefore\`); \`quota.threshold\`: a key's or consumer's limit of an hour
  or longer reaching 80 % and 100 % of its window, told by the request whose units reach ⌈0.8 × limit⌉ and the limit (the
  count as \`RateLimit\` shows it, which counts units other replicas leased ahead and have not used yet), once per limit,
  window and threshold across all replicas (\`data\`: the subject's id, \`scope\`, \`limit\` {name, period, limit,
  algorithm}, \`window\` {start, end}, \`threshold\`); a sliding limit's thresholds count toward the UTC window of its
  period in which the request's slot began; \`credits.low\` (a balance below its \`lowAt\`, else a tenth of its refill)
  and \`credits.exhausted\` (a request left it at 0, or it refused a request for want of credits), each once per balance
  period: a set, a refill and a top-up each start one (\`data\`: the subject's id, \`scope\`, \`remaining\`, \`lowAt\` for
  low, \`refill\`, \`resetTime\`); \`usage.exported\`: a billing receiver took one revision of one bucket (\`data\`:
  \`exportId\`, \`exportType\`, \`eventName\`, \`interval\`, \`subject\` and its id, \`customer\`, \`bucket\` {start, end},
  \`revision\`, \`value\`, \`idempotencyId\`). No event carries a secret, token, hash, ciphertext or credential.
- **Outbox:** an event is stored in the transaction of the change that causes it (a change that fails sends
  nothing) and delivered afterwards by one replica at a time; events survive restarts of any replica, Redis or the
  database. A webhook receives the events of its types that happen after it is created.
- **Delivery (Standard Webhooks):** \`POST\` of \`{type, timestamp, data}\` with \`webhook-id\` (the event id, the same on every
  attempt: dedupe by it), \`webhook-timestamp\` (the attempt's, seconds) and \`webhook-signature\` (\`v1,<base64 HMAC-SHA256 of
  id.timestamp.body>\`, keyed with the base64 after \`whsec_\` of the secret shown once at creation). At least once: a 2xx
  within 15 s is success; otherwise attempts follow about 5 s, 30 s, 2 min, 10 min, 1 h, 4 h, 12 h and 24 h after the
  first. Redirects are not followed. A webhook none of whose attempts succeeded for 3 days is disabled
  (\`disabledAt\`, \`disabledReason\`; the audit log records \`webhook.disable\` by the actor \`system\`); enabling it again
  sends what waited. The delivery log keeps 30 days.

## Proxied requests (not management routes)
Every method on every path that is not a management route is forwarded to a backend, bodies streamed both ways:
to the route of the route table (\`/tollgate/routes\`) with the longest path prefix of whole segments that matches,
then the most specific host (exact, then the longest wildcard, then a route without host), among those whose
\`methods\` take the request; the route's \`upstreamUrl\` + path (less \`pathPrefix\` with \`stripPrefix\`) + query, within
its \`timeoutMs\`. No route: \`UPSTREAM_URL\` + path + query, the catch-all; with \`UPSTREAM_URL=""\` there is none, and the
request is refused with 404 \`route_not_found\` once its key is checked (not forwarded, no quota spent, counted in the
key's usage as failed).
The path is first put in normal form, and routes, limits, costs, usage and the backend all see that form: a
percent-encoded letter, digit, \`-\`, \`.\`, \`_\` or \`~\` decoded, any other escape with upper-case hex
(\`/v1/%73earch\` is \`/v1/search\`; docs/guides/routes.md, "Paths").
- Credential: \`Authorization: Bearer <secret>\` or \`x-api-key: <secret>\`. Missing: 401 \`missing_api_key\`;
  unknown, deleted, malformed or a rolled secret past its grace: 401 \`invalid_api_key\`; an expired key: 401
  \`key_expired\`; a disabled key: 403 \`key_disabled\`.
- Keys in a browser (docs/guides/browser.md): a route's \`cors\` policy (\`CORS_ALLOWED_ORIGINS\` for the catch-all)
  makes Tollgate answer preflights itself (204, no key, never forwarded, charged to nobody) and lets a page of an
  allowed origin read every answer, Tollgate's own included, \`RateLimit\`, \`RateLimit-Policy\`, \`Retry-After\` and
  \`x-request-id\` exposed; the backend's own \`Access-Control-*\` headers are replaced. A key with
  \`allowedOrigins\` refuses a request whose \`Origin\` (else \`Referer\`'s origin) matches none: 403
  \`origin_not_allowed\`; with \`allowedAddresses\`, a client address outside them: 403 \`address_not_allowed\`.
  Neither is forwarded or charged; usage counts them as failed (\`originNotAllowed\`, \`addressNotAllowed\`).
- The customer id (\`CUSTOMER_ID_HEADER\`, default \`x-customer-id\`, or a token's \`sub\`) holds no control character
  (U+0000 to U+001F, U+007F): a header that holds one is refused with 400 \`invalid_customer_id\` once its key is
  checked (not forwarded, not charged, counted in the key's usage as failed, without the customer id), and a token
  whose \`sub\` holds one, or more than 200 Unicode code points, is no token (401 \`invalid_api_key\`).
- A plan holds one to four limits (\`limits\`), each fixed, sliding, a token bucket or a concurrency limit. Fixed
  windows are aligned to UTC (second, minute, hour, day from 00:00, week from Monday 00:00, month from the 1st
  00:00, year from 1 January 00:00); a sliding limit never admits more than \`limit\` in any span of one period; a
  token bucket admits at most \`burst + limit × T / period\` units over any interval of length T; a concurrency
  limit admits at most \`limit\` requests in flight. A request is admitted only when every limit has room and is
  then counted in all of them; only admitted requests consume quota.
- Over a limit: **429** with the \`RateLimitExceeded\` body (\`{error, limit, period, remaining: 0, resetTime, name}\`,
  the refusing limit whose window ends last) and the headers \`Retry-After\` (whole seconds until \`resetTime\`, at
  least 1), \`RateLimit-Policy\` (every limit, by name) and \`RateLimit\` (the limit with the fewest left)
  (draft-ietf-httpapi-ratelimit-headers). Nothing is forwarded. A token bucket's \`resetTime\` is when it will hold
  the refused request's cost.
- Over a concurrency limit: **429** with the \`ConcurrencyLimitExceeded\` body (\`{error, code:
  "concurrency_limit_exceeded", limit, name, scope, per}\`) and \`Retry-After: 1\`; usage counts it as failed (outcome
  \`concurrencyLimited\`). A place is held until the response ends, the client leaves or the backend times out, and
  while a WebSocket is open.
- A balance that holds less than the request's cost: **429** \`credits_exhausted\` with \`{error, code, remaining,
  cost, scope, resetTime}\` (\`scope\`: \`key\` when the key's own balance is short, else \`consumer\`; \`resetTime\`:
  the next refill, then \`Retry-After\` until it, or null and no \`Retry-After\`). Nothing is forwarded or charged;
  usage counts it as failed (outcome \`creditsExhausted\`).
- Within the limit the backend receives \`x-api-key: <secret>\` and \`x-consumer-api-key-id: <id>\`; the consumer's
  \`Authorization\` and hop-by-hop headers are removed. The client receives the backend's answer plus \`RateLimit\`
  and \`RateLimit-Policy\` when a limit applies.
- Backend unreachable: 502 \`bad_gateway\`; no answer within \`UPSTREAM_TIMEOUT_MS\`: 504 \`gateway_timeout\`;
  \`REDIS_FAILURE_MODE=closed\` while Redis is down: 503 \`limit_unavailable\`.`;
