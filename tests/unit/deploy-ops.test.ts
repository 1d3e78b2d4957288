// ops/: Prometheus alert rules and config checked and unit-tested by promtool (Debian package
// `prometheus`; .ci/run installs it, and these tests fail without it), and the Grafana dashboard's
// queries checked for syntax and for metric names the service really exports (src/ops/metrics.ts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Metrics } from '../../src/ops/metrics.js';
import { ROOT, readText, readYaml, run } from '../helpers/deploy-files.js';

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { expr: string }[];
}
interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const dashboard = JSON.parse(readText('ops/grafana/dashboards/tollgate.json')) as {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string }[] };
};
const rules = readYaml<{ groups: { name: string; rules: Rule[] }[] }>('ops/alerts.yml').groups.flatMap(
  (g) => g.rules,
);
const dashboardExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

/** Every series name the service exports, histograms expanded to their _bucket/_sum/_count series. */
async function exportedSeries(): Promise<{ all: Set<string>; own: Set<string> }> {
  const metrics = new Metrics();
  metrics.watchPool({ totalCount: 0, idleCount: 0, waitingCount: 0 });
  const all = new Set<string>();
  const own = new Set<string>();
  const defaults = /^tollgate_(process|nodejs)_/;
  for (const { name, type } of await metrics.registry.getMetricsAsJSON()) {
    const series = String(type) === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
    for (const s of series) all.add(s);
    if (!defaults.test(name)) own.add(name);
  }
  return { all, own };
}

const metricNames = (expr: string) => [...expr.matchAll(/\b(tollgate_[a-z0-9_]+)\b/g)].map((m) => m[1]!);

function promtool(...args: string[]) {
  return run('promtool', args, join(ROOT, 'ops'));
}

describe('promtool', () => {
  test('is installed (Debian package prometheus; .ci/run installs it)', () => {
    const version = run('promtool', ['--version']);
    expect({ code: version.code, tool: version.output.split('\n')[0]?.split(',')[0] }).toEqual({
      code: 0,
      tool: 'promtool',
    });
  });

  test('check rules: ops/alerts.yml', () => {
    const result = promtool('check', 'rules', 'alerts.yml');
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  test('test rules: each alert fires on its situation and not on a healthy one (ops/alerts.test.yml)', () => {
    const result = promtool('test', 'rules', 'alerts.test.yml');
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  test('check config: ops/prometheus.yml with the rule files it loads', () => {
    const result = promtool('check', 'config', 'prometheus.yml');
    expect(result.output).toContain('SUCCESS');
    expect(result.code).toBe(0);
  });

  test('every dashboard query is valid PromQL (checked as recording rules)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-dashboard-'));
    try {
      // Grafana's variables replaced by what they expand to at query time.
      const exprs = dashboardExprs.map((e) =>
        e.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*'),
      );
      const file = join(dir, 'dashboard-queries.yml');
      writeFileSync(
        file,
        stringify({
          groups: [
            { name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `dashboard:query_${i}`, expr })) },
          ],
        }),
      );
      const result = run('promtool', ['check', 'rules', file]);
      expect(result.output).toContain(`SUCCESS: ${exprs.length} rules found`);
      expect(result.code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('alert rules', () => {
  test('use only metrics the service exports (and up / kube-state-metrics)', async () => {
    const { all } = await exportedSeries();
    const unknown = rules.flatMap((r) => metricNames(r.expr)).filter((name) => !all.has(name));
    expect(unknown).toEqual([]);
  });

  test('cover degraded mode, 5xx made by Tollgate, usage flushing, Redis errors and readiness', () => {
    const names = rules.map((r) => r.alert);
    for (const alert of [
      'TollgateDown',
      'TollgateDegraded',
      'TollgateUpstreamErrors',
      'TollgateUsageFlushLag',
      'TollgateUsageStoreLag',
      'TollgateUsageFlushFailures',
      'TollgateRedisErrors',
      'TollgateReplicasNotReady',
    ]) {
      expect(names).toContain(alert);
    }
    expect(rules.find((r) => r.alert === 'TollgateUsageFlushLag')!.expr).toMatch(/> 30\b/);
  });

  test('each has a severity, a summary, a description and a unit test in ops/alerts.test.yml', () => {
    const tests = readText('ops/alerts.test.yml');
    for (const rule of rules) {
      expect([rule.alert, rule.labels.severity]).toEqual([
        rule.alert,
        expect.stringMatching(/^(critical|warning)$/),
      ]);
      expect(rule.annotations.summary).toBeTruthy();
      expect(rule.annotations.description).toBeTruthy();
    }
    // Not every rule can be unit-tested meaningfully, but the ones that page must be.
    for (const rule of rules.filter(
      (r) => r.labels.severity === 'critical' && r.alert !== 'TollgateLimiterUnavailable',
    )) {
      expect([rule.alert, tests.includes(`alertname: ${rule.alert}`)]).toEqual([rule.alert, true]);
    }
  });
});

describe('Grafana dashboard', () => {
  test('queries only metrics the service exports', async () => {
    const { all } = await exportedSeries();
    const unknown = dashboardExprs.flatMap(metricNames).filter((name) => !all.has(name));
    expect(unknown).toEqual([]);
  });

  test("shows every one of the service's own metrics", async () => {
    const { own } = await exportedSeries();
    const shown = new Set(
      dashboardExprs.flatMap(metricNames).map((n) => n.replace(/_(bucket|sum|count)$/, '')),
    );
    expect([...own].filter((name) => !shown.has(name))).toEqual([]);
  });

  test('has no per-key label in any query (cardinality)', () => {
    for (const expr of dashboardExprs) expect(expr).not.toMatch(/\b(key|key_id|keyId|api_key|customer)\b/);
  });

  test('panels have unique ids, use the datasource variable and do not overlap', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(
      expect.arrayContaining(['datasource', 'instance']),
    );
    const owner = new Map<string, string>();
    const problems: string[] = [];
    for (const panel of dashboard.panels) {
      if (panel.type !== 'row' && panel.datasource?.uid !== '${datasource}')
        problems.push(`${panel.title}: fixed datasource`);
      const { x, y, w, h } = panel.gridPos;
      if (x + w > 24) problems.push(`${panel.title}: wider than the grid`);
      for (let dx = 0; dx < w; dx++) {
        for (let dy = 0; dy < h; dy++) {
          const cell = `${x + dx},${y + dy}`;
          if (owner.has(cell)) problems.push(`${panel.title} overlaps ${owner.get(cell)}`);
          owner.set(cell, panel.title);
        }
      }
    }
    expect([...new Set(problems)]).toEqual([]);
  });

  test('is provisioned into the compose Grafana', () => {
    const provider = readYaml<{ providers: { options: { path: string } }[] }>(
      'ops/grafana/provisioning/dashboards/tollgate.yml',
    );
    const grafana = readYaml<{ services: { grafana: { volumes: string[] } } }>('docker-compose.yml').services
      .grafana;
    expect(grafana.volumes).toContain(`./ops/grafana/dashboards:${provider.providers[0]!.options.path}:ro`);
  });
});
