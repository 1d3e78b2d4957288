import { createServer, type Server } from 'node:http';
import { ERRORS, errorBody, type ErrorCode } from '../errors.js';
import type { Metrics } from './metrics.js';

export interface OpsDeps {
  readonly metrics: Metrics;
  /** The exposition a scrape gets: this process's registry, or with WORKERS>1 the sum over all workers. */
  readonly scrapeMetrics: () => Promise<string>;
  /** Each dependency check rejects or times out when the dependency does not answer. */
  readonly readinessChecks: Readonly<Record<string, () => Promise<unknown>>>;
  readonly isDraining: () => boolean;
  readonly openApiDocument: () => unknown;
}

const CHECK_TIMEOUT_MS = 1_000;

function withTimeout(check: () => Promise<unknown>): Promise<unknown> {
  return Promise.race([
    check(),
    new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS).unref()),
  ]);
}

/** The ops listener: health, readiness, Prometheus metrics and the OpenAPI document. */
export function createOpsServer(deps: OpsDeps): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
      });
      res.end(text);
    };
    const fail = (code: ErrorCode) => json(ERRORS[code].status, errorBody(code));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return fail('method_not_allowed');
    }
    switch (path) {
      case '/healthz':
        return json(200, { status: 'ok' });
      case '/readyz': {
        if (deps.isDraining()) return json(503, { status: 'draining' });
        const names = Object.keys(deps.readinessChecks);
        void Promise.allSettled(names.map((n) => withTimeout(deps.readinessChecks[n]!))).then((results) => {
          const checks = Object.fromEntries(
            names.map((n, i) => [n, results[i]!.status === 'fulfilled' ? 'ok' : 'unavailable']),
          );
          const ready = results.every((r) => r.status === 'fulfilled');
          json(ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', checks });
        });
        return;
      }
      case '/metrics':
        void deps.scrapeMetrics().then(
          (text) => {
            res.writeHead(200, { 'content-type': deps.metrics.registry.contentType });
            res.end(text);
          },
          () => fail('internal_error'),
        );
        return;
      case '/openapi.json':
        return json(200, deps.openApiDocument());
      default:
        return fail('not_found');
    }
  });
}
