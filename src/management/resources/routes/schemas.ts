/**
 * The schemas of the route table's calls (docs/guides/routes.md): the validators, the types and the
 * OpenAPI document's words for routes, as resources/keys and resources/plans have theirs.
 */
import { Type, type Static } from '@sinclair/typebox';
import { RESERVED_ROUTE_LABELS } from '../../../ops/metrics.js';
import { ORIGIN_PATTERN } from '../../../plans/origins.js';
import { hasDotSegment } from '../../../proxy/request-target.js';
import { CaseInsensitive, Methods, PathPrefix, RouteId } from '../../request-match-schemas.js';
import { IsoTimestamp, type ValidationDetail } from '../../schemas.js';
import { originProblems } from '../../validation.js';

const strict = { additionalProperties: false } as const;
export const MAX_TIMEOUT_MS = 3_600_000;

const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const Host = Type.String({
  maxLength: 253,
  pattern: `^(?:\\*\\.)?${LABEL}(?:\\.${LABEL})*$`,
  description:
    'A host name, exact (`api.example.com`) or with one leading wildcard label (`*.example.com`: every host under example.com, not example.com itself); compared without case and port, answered in lower case. Absent or null: every host',
  examples: ['api.example.com', '*.example.com'],
});

const UpstreamUrl = Type.String({
  maxLength: 2048,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^?#]+$',
  description:
    "The route's backend: http or https, no query, fragment or credentials. Its path is prefixed to every forwarded path, as UPSTREAM_URL's",
  examples: ['http://search.internal:8080'],
});

const StripPrefix = Type.Boolean({
  description:
    'Remove `pathPrefix` from the path forwarded: `/v1/items` reaches the backend as `/items` (`/v1` as `/`). Default false',
});
const TimeoutMs = Type.Integer({
  minimum: 1,
  maximum: MAX_TIMEOUT_MS,
  description: 'Backend answer deadline for this route, 1-3600000 ms, then 504 gateway_timeout',
});
const timeoutInput = Type.Union([TimeoutMs, Type.Null()], {
  description: `${TimeoutMs.description}; null: UPSTREAM_TIMEOUT_MS`,
});

const HeaderName = Type.String({ maxLength: 100, pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" });
const HeaderNames = (description: string) =>
  Type.Array(HeaderName, { maxItems: 50, uniqueItems: true, description });

const CorsFields = {
  allowedOrigins: Type.Array(Type.String({ maxLength: 300, pattern: `${ORIGIN_PATTERN}|^\\*$` }), {
    minItems: 1,
    maxItems: 100,
    uniqueItems: true,
    description:
      'The pages that may call the route: `*` (any), an exact origin (`https://app.example.com`, `http://localhost:5173`) or a wildcard subdomain (`https://*.example.com`: any host under example.com, not example.com itself; not over a public suffix such as `https://*.co.uk`, by the Public Suffix List), in lower case',
    examples: [['https://app.example.com', 'https://*.example.com']],
  }),
  allowedHeaders: HeaderNames(
    'Request headers a page may send besides those always allowed: `authorization`, `x-api-key`, `content-type` and CUSTOMER_ID_HEADER',
  ),
  exposedHeaders: HeaderNames(
    'Response headers a page may read besides those always exposed: `RateLimit`, `RateLimit-Policy`, `Retry-After` and `x-request-id`',
  ),
  allowCredentials: Type.Boolean({
    description:
      'Pages may send cookies (`Access-Control-Allow-Credentials: true`); with `*`, each page is answered its own origin. Default false',
  }),
  maxAgeSeconds: Type.Integer({
    minimum: 0,
    maximum: 86_400,
    description: 'How long a browser may keep a preflight answer, 0-86400 s. Default 600',
  }),
};
const CORS_DESCRIPTION =
  "The route's CORS policy (docs/guides/browser.md): Tollgate answers preflights itself (no key needed, never forwarded, charged to nobody), and every answer to an allowed origin, the backend's or Tollgate's own (401, 403, 404, 429, 502, 504), carries `Access-Control-Allow-Origin`; the backend's own `Access-Control-*` headers are replaced";
const CorsInput = Type.Object(
  {
    allowedOrigins: CorsFields.allowedOrigins,
    allowedHeaders: Type.Optional(CorsFields.allowedHeaders),
    exposedHeaders: Type.Optional(CorsFields.exposedHeaders),
    allowCredentials: Type.Optional(CorsFields.allowCredentials),
    maxAgeSeconds: Type.Optional(CorsFields.maxAgeSeconds),
  },
  { ...strict, title: 'CorsPolicyInput' },
);
const corsInput = Type.Union([CorsInput, Type.Null()], {
  description: `${CORS_DESCRIPTION}. null or absent: none (a preflight is forwarded like any request)`,
});

const RouteMatchInput = Type.Object(
  {
    host: Type.Optional(Type.Union([Host, Type.Null()])),
    pathPrefix: PathPrefix,
    methods: Type.Optional(Type.Union([Methods, Type.Null()])),
    caseInsensitive: Type.Optional(CaseInsensitive),
  },
  { ...strict, title: 'RouteMatchInput' },
);

export const CreateRouteRequest = Type.Object(
  {
    routeId: RouteId,
    match: RouteMatchInput,
    upstreamUrl: UpstreamUrl,
    stripPrefix: Type.Optional(StripPrefix),
    timeoutMs: Type.Optional(timeoutInput),
    cors: Type.Optional(corsInput),
  },
  { ...strict, title: 'CreateRouteRequest' },
);

export const UpdateRouteRequest = Type.Object(
  {
    match: Type.Optional(
      Type.Object(
        {
          host: RouteMatchInput.properties.host,
          pathPrefix: Type.Optional(PathPrefix),
          methods: RouteMatchInput.properties.methods,
          caseInsensitive: RouteMatchInput.properties.caseInsensitive,
        },
        {
          ...strict,
          minProperties: 1,
          title: 'RouteMatchUpdate',
          description:
            'The fields given replace theirs; null clears `host` and `methods` (every host, every method)',
        },
      ),
    ),
    upstreamUrl: Type.Optional(UpstreamUrl),
    stripPrefix: Type.Optional(StripPrefix),
    timeoutMs: Type.Optional(timeoutInput),
    cors: Type.Optional(corsInput),
  },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdateRouteRequest',
    description: 'Any of the fields; requests already routed finish on the route as it was',
  },
);

export const RouteResponse = Type.Object(
  {
    routeId: RouteId,
    match: Type.Object(
      {
        host: Type.Union([Host, Type.Null()]),
        pathPrefix: PathPrefix,
        methods: Type.Union([Methods, Type.Null()]),
        caseInsensitive: CaseInsensitive,
      },
      { ...strict, title: 'RouteMatch', description: 'null host: every host; null methods: every method' },
    ),
    upstreamUrl: UpstreamUrl,
    stripPrefix: StripPrefix,
    timeoutMs: Type.Union([TimeoutMs, Type.Null()], { description: 'null: UPSTREAM_TIMEOUT_MS' }),
    cors: Type.Union([Type.Object(CorsFields, { ...strict, title: 'CorsPolicy' }), Type.Null()], {
      description: `${CORS_DESCRIPTION}; its defaults filled in. null: none`,
    }),
    createdAt: IsoTimestamp,
    lastUpdated: IsoTimestamp,
  },
  { ...strict, title: 'Route' },
);

export const ListRoutesResponse = Type.Object(
  { routes: Type.Array(RouteResponse, { description: 'Every route, oldest first' }) },
  { ...strict, title: 'ListRoutesResponse' },
);

export const DeleteRouteResponse = Type.Object(
  { routeId: RouteId, message: Type.String() },
  { ...strict, title: 'DeleteRouteResponse' },
);

export type CreateRouteRequest = Static<typeof CreateRouteRequest>;
export type UpdateRouteRequest = Static<typeof UpdateRouteRequest>;
export type RouteResponse = Static<typeof RouteResponse>;
export type DeleteRouteResponse = Static<typeof DeleteRouteResponse>;

/** What the patterns cannot say: a dot segment in the prefix, credentials in the URL, an origin over a public suffix. */
function routeFieldProblems(body: {
  match?: { pathPrefix?: string };
  upstreamUrl?: string;
  cors?: { allowedOrigins: string[] } | null;
}): ValidationDetail[] {
  const details = originProblems(body.cors?.allowedOrigins, 'cors.allowedOrigins');
  const prefix = body.match?.pathPrefix;
  if (prefix !== undefined && hasDotSegment(prefix))
    details.push({ field: 'match.pathPrefix', message: 'must not contain a . or .. segment' });
  if (body.upstreamUrl !== undefined) {
    const url = URL.parse(body.upstreamUrl);
    if (url === null || url.hostname === '')
      details.push({ field: 'upstreamUrl', message: 'must be a valid URL' });
    else if (url.username !== '' || url.password !== '')
      details.push({ field: 'upstreamUrl', message: 'must not carry credentials' });
  }
  return details;
}

export function createRouteProblems(body: CreateRouteRequest): ValidationDetail[] {
  const reserved = RESERVED_ROUTE_LABELS.includes(body.routeId)
    ? [
        {
          field: 'routeId',
          message: `must not be ${RESERVED_ROUTE_LABELS.join(', ')}: the metrics name other things so`,
        },
      ]
    : [];
  return [...reserved, ...routeFieldProblems(body)];
}

export const updateRouteProblems = (body: UpdateRouteRequest): ValidationDetail[] => routeFieldProblems(body);
