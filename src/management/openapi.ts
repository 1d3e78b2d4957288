/**
 * The OpenAPI 3.1 document of the management API, derived from the operations (resources/index.ts):
 * the same schemas the validators compile, the same paths, methods and scopes the routes enforce, so
 * the document cannot describe a request the service would refuse or vice versa.
 * Its prose is in openapi-description.ts, when each refusal happens in openapi-refusals.ts.
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import { ERRORS, type ErrorCode } from '../errors.js';
import { DESCRIPTION } from './openapi-description.js';
import { reasonsOf } from './openapi-refusals.js';
import type { Operation } from './operation.js';
import { OPERATIONS } from './resources/index.js';
import { SCOPES } from './scopes.js';
import { ErrorResponse } from './schemas.js';
import { ConcurrencyLimitExceededResponse, RateLimitExceededResponse } from './resources/plans/schemas.js';

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

/** JSON Schema as the document carries it: TypeBox's symbol-keyed metadata has no place there. */
const plain = (schema: TSchema): JsonObject => JSON.parse(JSON.stringify(schema)) as JsonObject;
const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
/** A named schema by reference (collected into the components), any other inline. */
function schemaOf(schema: TSchema, named: Map<string, TSchema>): JsonObject {
  const title = (schema as { title?: string }).title;
  if (title === undefined) return plain(schema);
  named.set(title, schema);
  return ref(title);
}

const integerHeader = (description: string): JsonObject => ({
  description,
  schema: { type: 'integer', minimum: 1 },
});
const stringHeader = (description: string): JsonObject => ({ description, schema: { type: 'string' } });
/** The headers a refusal with this code carries. */
const CODE_HEADERS: Partial<Record<ErrorCode, [string, JsonObject]>> = {
  unauthorized: ['WWW-Authenticate', stringHeader('Bearer challenge (RFC 6750)')],
  insufficient_scope: [
    'WWW-Authenticate',
    stringHeader('Bearer challenge (RFC 6750) naming the scope that is missing'),
  ],
  too_many_failed_attempts: ['Retry-After', integerHeader('Seconds until the address may try again')],
  storage_unavailable: [
    'Retry-After',
    integerHeader(`Seconds to wait before retrying (${ERRORS.storage_unavailable.retryAfterSeconds})`),
  ],
  billing_export_busy: [
    'Retry-After',
    integerHeader(`Seconds to wait before retrying (${ERRORS.billing_export_busy.retryAfterSeconds})`),
  ],
  method_not_allowed: ['Allow', stringHeader('The methods this route accepts')],
};

/** The responses of an operation: its answer, then one per status its refusals share. */
function responsesOf(operation: Operation, named: Map<string, TSchema>): JsonObject {
  const { success } = operation;
  const responses: JsonObject = {
    [String(success.status)]: {
      description: success.description,
      ...(success.headers && {
        headers: Object.fromEntries(
          Object.entries(success.headers).map(([name, text]) => [name, stringHeader(text)]),
        ),
      }),
      content: {
        'application/json': { schema: schemaOf(success.schema, named) },
        ...(success.csv && { 'text/csv': { schema: { type: 'string' } } }),
      },
    },
  };
  const byStatus = new Map<string, ErrorCode[]>();
  for (const code of reasonsOf(operation).keys()) {
    const status = code === 'internal_error' ? 'default' : String(ERRORS[code].status);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const reasons = reasonsOf(operation);
  for (const [status, codes] of byStatus) {
    const headers = Object.fromEntries(
      codes.flatMap((code) => (CODE_HEADERS[code] ? [CODE_HEADERS[code]] : [])),
    );
    responses[status] = {
      description: codes.map((code) => reasons.get(code)).join('; '),
      ...(Object.keys(headers).length > 0 && { headers }),
      content: {
        'application/json': {
          schema: ref('Error'),
          examples: Object.fromEntries(
            codes.map((code) => [
              code,
              { summary: reasons.get(code), value: { error: ERRORS[code].message, code } },
            ]),
          ),
        },
      },
    };
  }
  return responses;
}

/** One parameter per property of a path or query schema. */
function parametersOf(schema: TObject | undefined, where: 'path' | 'query'): JsonObject[] {
  if (!schema) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) => {
    const { description, ...rest } = plain(property);
    return {
      name,
      in: where,
      ...(where === 'path' || required.has(name) ? { required: true } : {}),
      ...(description !== undefined && { description }),
      schema: rest,
    };
  });
}

/** `/consumer-api-key/:consumerApiKeyId` → `/consumer-api-key/{consumerApiKeyId}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z]+)/g, '{$1}');

function operationObject(operation: Operation, named: Map<string, TSchema>): JsonObject {
  const parameters = [
    ...parametersOf(operation.params?.schema, 'path'),
    ...parametersOf(operation.query?.schema, 'query'),
  ];
  return {
    operationId: operation.id,
    tags: [operation.tag],
    summary: operation.summary,
    ...(operation.description !== undefined && { description: operation.description }),
    ...(parameters.length > 0 && { parameters }),
    ...(operation.body && {
      requestBody: {
        required: !operation.body.optional,
        content: { 'application/json': { schema: schemaOf(operation.body.schema, named) } },
      },
    }),
    responses: responsesOf(operation, named),
    security: [{ rootToken: [] }, { adminToken: operation.scope === null ? [] : [operation.scope] }],
    ...(operation.scope !== null && { 'x-required-scope': operation.scope }),
  };
}

const TAGS = [
  { name: 'Consumer API keys', description: 'Keys consumers present to the proxy' },
  { name: 'Rate limit plans', description: 'Limits per window, bound to keys and consumers' },
  {
    name: 'Consumers',
    description: 'The accounts that hold keys: a plan bound to a consumer is shared by all its keys',
  },
  { name: 'Credits', description: 'Prepaid balances of keys and consumers: top-ups and sets' },
  { name: 'Routes', description: 'Which backend a proxied request goes to: by host, path prefix and method' },
  { name: 'Usage', description: 'Usage over time, for billing and dashboards' },
  { name: 'Admin tokens and audit', description: 'Scoped credentials and the record of every change' },
  {
    name: 'Billing exports',
    description:
      'Usage sent to Stripe, OpenMeter, Lago or any CloudEvents receiver, exactly once to the unit',
  },
  {
    name: 'Webhooks',
    description: "Tollgate's events, delivered signed (Standard Webhooks) to your endpoints",
  },
];

export function buildOpenApiDocument(
  options: OpenApiOptions = {},
  operations: readonly Operation[] = OPERATIONS,
): OpenApiDocument {
  const prefix = options.prefix ?? '';
  const named = new Map<string, TSchema>([
    ['Error', ErrorResponse],
    ['RateLimitExceeded', RateLimitExceededResponse],
    ['ConcurrencyLimitExceeded', ConcurrencyLimitExceededResponse],
  ]);
  const paths: Record<string, JsonObject> = {};
  for (const operation of operations) {
    const item = (paths[prefix + openApiPath(operation.path)] ??= {});
    item[operation.method] = operationObject(operation, named);
  }
  const schemas = Object.fromEntries([...named].map(([name, schema]) => [name, plain(schema)]));

  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate management API',
      version: options.version ?? '0.1.0',
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: servers(options.publicListener),
    tags: TAGS.filter((tag) => operations.some((operation) => operation.tag === tag.name)),
    security: [{ rootToken: [] }, { adminToken: [] }],
    paths,
    components: {
      securitySchemes: {
        rootToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'ROOT_TOKEN: every scope of the management API',
        },
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
        RateLimitExceeded: {
          description: 'Proxied request over its limit (not forwarded)',
          headers: {
            'Retry-After': {
              description: 'Whole seconds until resetTime, at least 1',
              schema: { type: 'integer', minimum: 1 },
            },
            RateLimit: {
              description:
                'draft-ietf-httpapi-ratelimit-headers: the limit with the fewest requests left, by name, e.g. `"day";r=0;t=3600`',
              schema: { type: 'string' },
            },
            'RateLimit-Policy': {
              description:
                'draft-ietf-httpapi-ratelimit-headers: every limit of the plan, by name, e.g. `"second";q=10;w=1, "day";q=10000;w=86400`',
              schema: { type: 'string' },
            },
          },
          content: { 'application/json': { schema: ref('RateLimitExceeded') } },
        },
      },
    },
  };
}
