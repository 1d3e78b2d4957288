import request from 'supertest';
import { ERRORS } from '../../src/errors.js';
import { Metrics } from '../../src/ops/metrics.js';
import { createOpsServer } from '../../src/ops/ops-server.js';

/** The ops listener answers its errors with the catalogue's envelope, like every other listener. */
describe('ops listener errors', () => {
  const server = createOpsServer({
    metrics: new Metrics(),
    scrapeMetrics: () => Promise.reject(new Error('registry broke')),
    readinessChecks: {},
    isDraining: () => false,
    openApiDocument: () => ({}),
  });

  it('404 for an unknown path', async () => {
    const res = await request(server).get('/nope');
    expect({ status: res.status, body: res.body }).toEqual({
      status: 404,
      body: { error: ERRORS.not_found.message, code: 'not_found' },
    });
  });

  it('405 with Allow for another method', async () => {
    const res = await request(server).post('/metrics');
    expect({ status: res.status, allow: res.headers.allow, body: res.body }).toEqual({
      status: 405,
      allow: 'GET, HEAD',
      body: { error: ERRORS.method_not_allowed.message, code: 'method_not_allowed' },
    });
  });

  it('500 internal_error when the scrape fails', async () => {
    const res = await request(server).get('/metrics');
    expect({ status: res.status, body: res.body }).toEqual({
      status: 500,
      body: { error: ERRORS.internal_error.message, code: 'internal_error' },
    });
  });
});
