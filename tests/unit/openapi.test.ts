import SwaggerParser from '@apidevtools/swagger-parser';
import { buildOpenApiDocument } from '../../src/management/openapi.js';
import { isManagementPath } from '../../src/server.js';
import { OpenApiChecker } from '../helpers/management-openapi.js';

const json = { 'content-type': 'application/json; charset=utf-8' };

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const api = await SwaggerParser.validate(structuredClone(buildOpenApiDocument()) as never);
    expect(api).toHaveProperty('openapi', '3.1.0');
  });

  it('is valid with a management prefix too, and every path carries the prefix', async () => {
    const document = buildOpenApiDocument({ prefix: '/admin' });
    await SwaggerParser.validate(structuredClone(document) as never);
    expect(Object.keys(document.paths).sort()).toEqual([
      '/admin/api-keys/apply-rate-limit',
      '/admin/api-keys/remove-rate-limit',
      '/admin/consumer-api-key',
      '/admin/consumer-api-key/create',
      '/admin/consumer-api-key/{consumerApiKeyId}',
      '/admin/consumer-api-key/{consumerApiKeyId}/failures',
      '/admin/consumer-api-key/{consumerApiKeyId}/roll',
      '/admin/consumer-api-key/{consumerApiKeyId}/usage',
      '/admin/rate-limit',
      '/admin/rate-limit/create',
      '/admin/rate-limit/{rateLimitId}',
      '/admin/tollgate/admin-tokens',
      '/admin/tollgate/admin-tokens/{tokenId}',
      '/admin/tollgate/audit-log',
      '/admin/tollgate/billing-exports',
      '/admin/tollgate/billing-exports/{billingExportId}',
      '/admin/tollgate/billing-exports/{billingExportId}/runs',
      '/admin/tollgate/consumers',
      '/admin/tollgate/consumers/{consumerId}',
      '/admin/tollgate/consumers/{consumerId}/failures',
      '/admin/tollgate/consumers/{consumerId}/usage',
      '/admin/tollgate/credits',
      '/admin/tollgate/failures',
      '/admin/tollgate/keys/leaked',
      '/admin/tollgate/keys/lookup',
      '/admin/tollgate/portal/sessions',
      '/admin/tollgate/portal/sessions/{sessionId}',
      '/admin/tollgate/portal/settings',
      '/admin/tollgate/portal/settings/api-reference/fetch',
      '/admin/tollgate/routes',
      '/admin/tollgate/routes/{routeId}',
      '/admin/tollgate/usage',
      '/admin/tollgate/verify',
      '/admin/tollgate/verify/settle',
      '/admin/tollgate/webhooks',
      '/admin/tollgate/webhooks/{webhookId}',
      '/admin/tollgate/webhooks/{webhookId}/deliveries',
      '/admin/tollgate/webhooks/{webhookId}/deliveries/{deliveryId}/retry',
      '/admin/tollgate/webhooks/{webhookId}/rotate-secret',
      '/admin/tollgate/whoami',
    ]);
  });

  it('documents every operation, each with the scope it needs', () => {
    const document = buildOpenApiDocument();
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      ['get', 'post', 'patch', 'put', 'delete']
        .filter((m) => m in item)
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual(
      [
        'DELETE /consumer-api-key/{consumerApiKeyId}',
        'DELETE /rate-limit/{rateLimitId}',
        'GET /consumer-api-key',
        'GET /consumer-api-key/{consumerApiKeyId}',
        'GET /consumer-api-key/{consumerApiKeyId}/failures',
        'GET /rate-limit',
        'GET /rate-limit/{rateLimitId}',
        'PATCH /consumer-api-key/{consumerApiKeyId}',
        'PATCH /rate-limit/{rateLimitId}',
        'PATCH /tollgate/billing-exports/{billingExportId}',
        'POST /api-keys/apply-rate-limit',
        'POST /api-keys/remove-rate-limit',
        'POST /consumer-api-key/create',
        'POST /consumer-api-key/{consumerApiKeyId}/roll',
        'POST /rate-limit/create',
        'DELETE /tollgate/admin-tokens/{tokenId}',
        'DELETE /tollgate/billing-exports/{billingExportId}',
        'GET /tollgate/admin-tokens',
        'GET /tollgate/audit-log',
        'GET /consumer-api-key/{consumerApiKeyId}/usage',
        'GET /tollgate/usage',
        'GET /tollgate/consumers/{consumerId}/usage',
        'GET /tollgate/failures',
        'POST /tollgate/admin-tokens',
        'POST /tollgate/consumers',
        'GET /tollgate/consumers',
        'GET /tollgate/consumers/{consumerId}',
        'GET /tollgate/consumers/{consumerId}/failures',
        'PATCH /tollgate/consumers/{consumerId}',
        'DELETE /tollgate/consumers/{consumerId}',
        'POST /tollgate/credits',
        'POST /tollgate/routes',
        'GET /tollgate/routes',
        'GET /tollgate/routes/{routeId}',
        'PATCH /tollgate/routes/{routeId}',
        'DELETE /tollgate/routes/{routeId}',
        'GET /tollgate/billing-exports',
        'GET /tollgate/billing-exports/{billingExportId}',
        'GET /tollgate/billing-exports/{billingExportId}/runs',
        'POST /tollgate/billing-exports',
        'POST /tollgate/billing-exports/{billingExportId}/runs',
        'GET /tollgate/webhooks',
        'POST /tollgate/webhooks',
        'GET /tollgate/webhooks/{webhookId}',
        'PATCH /tollgate/webhooks/{webhookId}',
        'DELETE /tollgate/webhooks/{webhookId}',
        'GET /tollgate/webhooks/{webhookId}/deliveries',
        'POST /tollgate/webhooks/{webhookId}/deliveries/{deliveryId}/retry',
        'POST /tollgate/webhooks/{webhookId}/rotate-secret',
        'POST /tollgate/keys/lookup',
        'POST /tollgate/keys/leaked',
        'GET /tollgate/whoami',
        'POST /tollgate/verify',
        'POST /tollgate/verify/settle',
        'GET /tollgate/portal/settings',
        'PATCH /tollgate/portal/settings',
        'POST /tollgate/portal/settings/api-reference/fetch',
        'POST /tollgate/portal/sessions',
        'GET /tollgate/portal/sessions',
        'DELETE /tollgate/portal/sessions/{sessionId}',
      ].sort(),
    );
    const scopes = Object.fromEntries(
      Object.entries(document.paths).flatMap(([path, item]) =>
        ['get', 'post', 'patch', 'delete']
          .filter((m) => m in item)
          .map((m) => {
            const op = item[m] as { security: unknown; 'x-required-scope'?: string };
            const scope = op['x-required-scope'];
            expect(op.security).toEqual([{ rootToken: [] }, { adminToken: scope ? [scope] : [] }]);
            return [`${m.toUpperCase()} ${path}`, scope ?? 'any valid token'];
          }),
      ),
    );
    expect(scopes).toMatchObject({
      'GET /consumer-api-key': 'keys:read',
      'PATCH /consumer-api-key/{consumerApiKeyId}': 'keys:write',
      'POST /api-keys/apply-rate-limit': 'keys:write',
      'GET /rate-limit': 'plans:read',
      'DELETE /rate-limit/{rateLimitId}': 'plans:write',
      'GET /tollgate/audit-log': 'audit:read',
      'POST /tollgate/admin-tokens': 'tokens:write',
      'GET /tollgate/consumers': 'keys:read',
      'GET /tollgate/consumers/{consumerId}': 'keys:read',
      'POST /tollgate/consumers': 'keys:write',
      'PATCH /tollgate/consumers/{consumerId}': 'keys:write',
      'DELETE /tollgate/consumers/{consumerId}': 'keys:write',
      'POST /tollgate/credits': 'keys:write',
      'GET /tollgate/routes': 'routes:read',
      'GET /tollgate/routes/{routeId}': 'routes:read',
      'POST /tollgate/routes': 'routes:write',
      'PATCH /tollgate/routes/{routeId}': 'routes:write',
      'DELETE /tollgate/routes/{routeId}': 'routes:write',
      'GET /tollgate/billing-exports/{billingExportId}/runs': 'billing:read',
      'POST /tollgate/billing-exports/{billingExportId}/runs': 'billing:write',
      'GET /tollgate/webhooks/{webhookId}/deliveries': 'webhooks:read',
      'POST /tollgate/webhooks/{webhookId}/deliveries/{deliveryId}/retry': 'webhooks:write',
      'POST /tollgate/webhooks/{webhookId}/rotate-secret': 'webhooks:write',
      'POST /tollgate/keys/lookup': 'keys:read',
      'POST /tollgate/keys/leaked': 'keys:write',
      'GET /tollgate/whoami': 'any valid token',
      'POST /tollgate/verify': 'keys:verify',
      'POST /tollgate/verify/settle': 'keys:verify',
      'GET /tollgate/portal/settings': 'portal:read',
      'PATCH /tollgate/portal/settings': 'portal:write',
      'POST /tollgate/portal/settings/api-reference/fetch': 'portal:write',
      'POST /tollgate/portal/sessions': 'portal:sessions',
      'GET /tollgate/portal/sessions': 'portal:sessions',
      'DELETE /tollgate/portal/sessions/{sessionId}': 'portal:sessions',
    });
  });

  it('names the public listener in servers, not the ops port it is served on', () => {
    expect(buildOpenApiDocument({ publicListener: { host: '0.0.0.0', port: 8080 } }).servers).toEqual([
      expect.objectContaining({
        url: 'http://{host}:{port}',
        variables: {
          host: expect.objectContaining({ default: 'localhost' }),
          port: expect.objectContaining({ default: '8080' }),
        },
      }),
    ]);
    expect(buildOpenApiDocument({ publicListener: { host: '10.1.2.3', port: 9000 } }).servers).toEqual([
      expect.objectContaining({
        variables: {
          host: expect.objectContaining({ default: '10.1.2.3' }),
          port: expect.objectContaining({ default: '9000' }),
        },
      }),
    ]);
  });

  it('documents only paths the server routes to the management API', () => {
    for (const prefix of ['', '/admin']) {
      for (const path of Object.keys(buildOpenApiDocument({ prefix }).paths)) {
        expect(isManagementPath(path.replace('{consumerApiKeyId}', 'key_abc'), prefix)).toBe(true);
      }
    }
  });

  it('writes down the decisions the spec leaves open', () => {
    const description = String(buildOpenApiDocument().info.description);
    for (const phrase of [
      'nextCursor',
      'invalid_cursor',
      'YYYY-MM-DD HH:MM:SS',
      'Retry-After',
      '429',
      'x-api-key',
      '65536 bytes',
      'webhook-id',
      'whsec_',
      'At least once',
    ]) {
      expect(description).toContain(phrase);
    }
    expect(buildOpenApiDocument().components).toHaveProperty('schemas.RateLimitExceeded');
  });
});

describe('OpenApiChecker', () => {
  let checker: OpenApiChecker;
  beforeAll(async () => {
    checker = await OpenApiChecker.create();
  });

  const created = {
    id: 'key_abc',
    name: 'n',
    secret: 'tg_x',
    createdAt: '2026-11-21 14:23:02',
    rateLimitId: null,
    enabled: true,
    expiresAt: null,
    externalId: null,
    lastUsedAt: null,
    consumerId: null,
    allowedRouteIds: null,
    allowedOrigins: null,
    allowedAddresses: null,
    metadata: {},
    credits: null,
  };

  it('accepts a body that matches the documented schema', () => {
    expect(
      checker.problems('post', '/consumer-api-key/create', { status: 201, body: created, headers: json }),
    ).toEqual([]);
  });

  it.each([
    ['an ISO createdAt where the create format is due', { ...created, createdAt: '2026-11-21T14:23:02Z' }],
    ['a missing field', { id: 'key_abc', name: 'n', createdAt: '2026-11-21 14:23:02' }],
    ['an extra field', { ...created, extra: 1 }],
  ])('rejects %s', (_label, body) => {
    expect(
      checker.problems('post', '/consumer-api-key/create', { status: 201, body, headers: json }),
    ).not.toEqual([]);
  });

  it('holds any other status to the error envelope (the default response) and rejects a non-JSON body', () => {
    expect(
      checker.problems('post', '/consumer-api-key/create', { status: 500, body: {}, headers: json }),
    ).not.toEqual([]);
    expect(
      checker.problems('get', '/consumer-api-key', {
        status: 200,
        body: { apiKeys: [] },
        headers: { 'content-type': 'text/html' },
      }),
    ).not.toEqual([]);
  });

  it('checks error bodies against the error envelope', () => {
    const good = { error: 'nope', code: 'key_not_found' };
    expect(
      checker.problems('get', '/consumer-api-key/{consumerApiKeyId}', {
        status: 404,
        body: good,
        headers: json,
      }),
    ).toEqual([]);
    expect(
      checker.problems('get', '/consumer-api-key/{consumerApiKeyId}', {
        status: 404,
        body: { error: 'x' },
        headers: json,
      }),
    ).not.toEqual([]);
  });
});

describe('OpenAPI document: usage series', () => {
  it('names exactly one of endpoint and customerId in each series', async () => {
    const checker = await OpenApiChecker.create();
    const answer = (series: object[]) => ({
      status: 200,
      headers: json,
      body: {
        consumerApiKeyId: 'key_a',
        granularity: 'day',
        from: '2026-01-01T00:00:00Z',
        to: '2026-01-02T00:00:00Z',
        buckets: [],
        latencyMs: { p50: null, p95: null, p99: null },
        series,
      },
    });
    const path = '/consumer-api-key/{consumerApiKeyId}/usage';
    expect(
      checker.problems(
        'get',
        path,
        answer([
          { endpoint: '/v1', buckets: [] },
          { endpoint: '/v2', buckets: [] },
        ]),
      ),
    ).toEqual([]);
    expect(checker.problems('get', path, answer([{ customerId: 'c1', buckets: [] }]))).toEqual([]);
    expect(checker.problems('get', path, answer([{ buckets: [] }]))).not.toEqual([]);
    expect(
      checker.problems('get', path, answer([{ endpoint: '/v1', customerId: 'c1', buckets: [] }])),
    ).not.toEqual([]);
  });
});
