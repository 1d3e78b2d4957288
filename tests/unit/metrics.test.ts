import { spawnSync } from 'node:child_process';
import { MAX_ROUTE_LABELS, Metrics } from '../../src/ops/metrics.js';

/** The exposition lines of one metric family, as a scrape returns them. */
async function scrape(metrics: Metrics, family: string): Promise<string[]> {
  return (await metrics.registry.metrics()).split('\n').filter((line) => line.startsWith(family));
}

describe('request-path metrics', () => {
  it('count by label value, and keep their totals from one scrape to the next', async () => {
    const metrics = new Metrics();
    for (let i = 0; i < 3; i++) metrics.proxyRequests.inc({ outcome: 'forwarded' });
    metrics.proxyRequests.inc({ outcome: 'limited' });
    expect(await scrape(metrics, 'tollgate_proxy_requests_total{')).toEqual([
      'tollgate_proxy_requests_total{outcome="forwarded"} 3',
      'tollgate_proxy_requests_total{outcome="limited"} 1',
    ]);
    metrics.proxyRequests.inc({ outcome: 'forwarded' });
    metrics.keyCache.inc({ result: 'miss' });
    expect(await scrape(metrics, 'tollgate_proxy_requests_total{')).toEqual([
      'tollgate_proxy_requests_total{outcome="forwarded"} 4',
      'tollgate_proxy_requests_total{outcome="limited"} 1',
    ]);
    expect(await scrape(metrics, 'tollgate_key_cache_requests_total{')).toEqual([
      'tollgate_key_cache_requests_total{result="miss"} 1',
    ]);
  });

  it('count requests by route and status class, with a label value of its own for at most MAX_ROUTE_LABELS routes', async () => {
    const metrics = new Metrics();
    const labels = Array.from({ length: MAX_ROUTE_LABELS + 50 }, (_, i) =>
      metrics.routeRequests.labelOf(`route-${i}`),
    );
    expect(new Set(labels).size).toBe(MAX_ROUTE_LABELS + 1);
    expect(labels.at(-1)).toBe('other');
    // A route that had a value keeps it, however many came since.
    expect(metrics.routeRequests.labelOf('route-0')).toBe('route-0');
    for (const label of labels) metrics.routeRequests.inc(label, 200);
    metrics.routeRequests.inc('route-0', 504);
    metrics.routeRequests.inc('none', 404);
    metrics.routeRequests.inc('catch-all', 499);
    const lines = await scrape(metrics, 'tollgate_route_requests_total{');
    expect(lines).toHaveLength(MAX_ROUTE_LABELS + 1 + 3);
    expect(lines).toEqual(
      expect.arrayContaining([
        'tollgate_route_requests_total{route="route-0",status="2xx"} 1',
        'tollgate_route_requests_total{route="route-0",status="5xx"} 1',
        'tollgate_route_requests_total{route="other",status="2xx"} 50',
        'tollgate_route_requests_total{route="none",status="4xx"} 1',
        'tollgate_route_requests_total{route="catch-all",status="4xx"} 1',
      ]),
    );
  });

  it('histograms put a value on a bound into that bucket, count the ones above every bound in +Inf only', async () => {
    const metrics = new Metrics();
    for (const seconds of [0.0005, 0.0004, 0.003, 0.003, 45]) metrics.upstreamDuration.observe(seconds);
    const lines = await scrape(metrics, 'tollgate_upstream_duration_seconds');
    expect(lines).toContain('tollgate_upstream_duration_seconds_bucket{le="0.0005"} 2');
    expect(lines).toContain('tollgate_upstream_duration_seconds_bucket{le="0.0025"} 2');
    expect(lines).toContain('tollgate_upstream_duration_seconds_bucket{le="0.005"} 4');
    expect(lines).toContain('tollgate_upstream_duration_seconds_bucket{le="30"} 4');
    expect(lines).toContain('tollgate_upstream_duration_seconds_bucket{le="+Inf"} 5');
    expect(lines).toContain('tollgate_upstream_duration_seconds_count 5');
    expect(
      Number(lines.find((l) => l.startsWith('tollgate_upstream_duration_seconds_sum '))!.split(' ')[1]),
    ).toBeCloseTo(45.0069, 6);
    // Buckets are cumulative and never fall.
    const buckets = lines.filter((l) => l.includes('_bucket')).map((l) => Number(l.split(' ')[1]));
    expect(buckets).toEqual([...buckets].sort((a, b) => a - b));
  });

  it('expose what promtool accepts', async () => {
    const metrics = new Metrics();
    metrics.proxyRequests.inc({ outcome: 'forwarded' });
    metrics.proxyOverhead.observe(0.0002);
    const lint = spawnSync('promtool', ['check', 'metrics'], {
      input: await metrics.registry.metrics(),
      encoding: 'utf8',
    });
    expect({ status: lint.status, problems: lint.stdout + lint.stderr }).toEqual({ status: 0, problems: '' });
  });
});
