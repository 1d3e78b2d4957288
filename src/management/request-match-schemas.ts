/**
 * The schemas a route and a request match share (docs/guides/plans.md, Limits and costs for some requests only): a route's id, a path prefix of
 * whole segments, methods, and the match a plan's limit or cost applies to. Shared by the plan,
 * route and key schemas (resources/plans, resources/routes, resources/keys).
 */
import { Type, type Static } from '@sinclair/typebox';
import { RESERVED_ROUTE_LABELS } from '../ops/metrics.js';
import { HTTP_METHODS, type HttpMethod } from '../plans/route.js';
import { NO_CONTROL_CHARACTER_PATTERN } from '../plans/clean-text.js';
import { MAX_BODY_MATCH_VALUES } from '../plans/usage-pricing.js';

const strict = { additionalProperties: false } as const;

export const RATE_LIMIT_ID_PATTERN = '^[A-Za-z0-9._:-]*$';

export const RouteId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RATE_LIMIT_ID_PATTERN,
  description: `Chosen by the caller: 1-128 characters of A-Z a-z 0-9 . _ : -, except ${RESERVED_ROUTE_LABELS.join(', ')} (the metrics name the catch-all, unrouted requests and the routes beyond the label bound so)`,
  examples: ['search'],
});

// Whole segments of RFC 3986 path characters, percent-encodings included; no empty segment, no trailing slash.
const SEGMENT = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+";
export const PathPrefix = Type.String({
  maxLength: 512,
  pattern: `^(?:/|(?:/${SEGMENT})+)$`,
  description:
    '`/`, or whole path segments without a trailing slash: `/v1` takes `/v1`, `/v1/` and `/v1/items`, never `/v10`. Compared with the request path in normal form (docs/guides/routes.md): a percent-encoded letter, digit, `-`, `.`, `_` or `~` decoded (`/v1/%73earch` is `/v1/search`, and is forwarded so), any other escape with upper-case hex; the prefix is normalised the same way. Case-sensitive unless `caseInsensitive`',
  examples: ['/v1/search'],
});

export const CaseInsensitive = Type.Boolean({
  description:
    'Compare `pathPrefix` without regard to case (A-Z as a-z), for a backend that routes so, as Express does by default: `/v1/search` then also takes `/V1/SEARCH`. Default false',
});

export const Methods = Type.Array(Type.Unsafe<HttpMethod>({ type: 'string', enum: [...HTTP_METHODS] }), {
  minItems: 1,
  uniqueItems: true,
  description:
    'The route takes only these methods (HEAD is not implied by GET); absent or null: every method',
  examples: [['GET', 'HEAD']],
});

/** A JSON pointer (RFC 6901) into a request's or response's JSON body. */
export const JsonPointerText = Type.String({
  maxLength: 256,
  pattern: '^(/([^~]|~[01])*)*$',
  description:
    'A JSON pointer (RFC 6901): `/model`, `/usage/total_tokens`; `~1` for `/` and `~0` for `~` in a name',
  examples: ['/model'],
});

const BodyMatchSchema = Type.Object(
  {
    pointer: JsonPointerText,
    values: Type.Array(Type.String({ maxLength: 256, pattern: NO_CONTROL_CHARACTER_PATTERN }), {
      minItems: 1,
      maxItems: MAX_BODY_MATCH_VALUES,
      uniqueItems: true,
      description: `1 to ${MAX_BODY_MATCH_VALUES} strings: the request matches when its JSON body holds one of them at \`pointer\``,
      examples: [['gpt-4o', 'gpt-4o-mini']],
    }),
  },
  {
    ...strict,
    title: 'BodyMatch',
    description:
      "The request's JSON body holds one of `values` at `pointer`, e.g. per-model limits; such requests' bodies are read before deciding, up to BODY_MATCH_MAX_BYTES (larger: 413 `body_too_large`), and forwarded unchanged",
  },
);

export const RequestMatchSchema = Type.Object(
  {
    routeIds: Type.Optional(
      Type.Array(RouteId, {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
        description: 'The request took one of these routes (the catch-all, UPSTREAM_URL, is none of them)',
      }),
    ),
    methods: Type.Optional({ ...Methods, description: 'The request has one of these methods' }),
    pathPrefix: Type.Optional({
      ...PathPrefix,
      description: "The request path is this prefix or under it, in whole segments, as a route's",
    }),
    caseInsensitive: Type.Optional(CaseInsensitive),
    body: Type.Optional(BodyMatchSchema),
  },
  {
    ...strict,
    minProperties: 1,
    title: 'RequestMatch',
    description: 'Which requests: every condition given must hold; at least one',
  },
);
export type RequestMatchInput = Static<typeof RequestMatchSchema>;
