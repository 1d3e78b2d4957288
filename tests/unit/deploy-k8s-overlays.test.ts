// Every overlay of k8s/ as `kubectl kustomize` renders it, validated against the Kubernetes schemas
// (kubernetes-models, strictly) and the Prometheus Operator's (@kubernetes-models/prometheus-operator,
// generated from its CRDs); then what each overlay promises: embedded never runs two pods on its
// volume, replicated takes its datastores from a Secret, monitoring alerts as ops/alerts.yml does, and
// the Job applies the ConfigMap's tollgate.yaml with the image's command.
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IService } from 'kubernetes-models/v1/Service';
import { parseConfig } from '../../packages/client/src/config/load-config.js';
import { validateConfig } from '../../packages/client/src/config/validate-config.js';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  MODELS,
  readText,
  readYaml,
  renderKustomization,
  run,
  unknownFields,
} from '../helpers/deploy-files.js';

type Manifest = { apiVersion: string; kind: string; metadata?: { name?: string } };

/** The Operator's CRDs allow fields they do not name; kubernetes-models' declarations do not. */
const CORE = (object: Manifest) => !object.apiVersion.startsWith('monitoring.coreos.com/');

const OVERLAYS = ['embedded', 'replicated', 'monitoring'] as const;
const rendered = Object.fromEntries(
  OVERLAYS.map((overlay) => [overlay, renderKustomization(`overlays/${overlay}`) as Manifest[]]),
) as Record<(typeof OVERLAYS)[number], Manifest[]>;

function find<T>(objects: readonly Manifest[], kind: string, name?: string): T[] {
  return objects.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name)) as T[];
}

describe.each(OVERLAYS)('k8s/overlays/%s', (overlay) => {
  const objects = rendered[overlay];

  test('renders objects that are valid against their schemas, with no unknown fields', () => {
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect({ kind: object.kind, model: Model !== undefined }).toEqual({ kind: object.kind, model: true });
      expect(() => new Model!(object as never).validate()).not.toThrow();
      if (CORE(object)) expect(unknownFields(object)).toEqual([]);
    }
  });

  test('a Job applies the ConfigMap it mounts with the image`s tollgate command, against the Service', () => {
    const [job] = find<IJob>(objects, 'Job');
    const pod = job!.spec!.template.spec!;
    const container = pod.containers[0]!;
    const [deployment] = find<IDeployment>(objects, 'Deployment', 'tollgate');
    expect(container.image).toBe(deployment!.spec!.template.spec!.containers[0]!.image);
    expect(container.command).toEqual([
      'node',
      'packages/client/dist/bin/tollgate.js',
      'apply',
      '-f',
      '/etc/tollgate/tollgate.yaml',
    ]);
    const mount = container.volumeMounts!.find((m) => m.mountPath === '/etc/tollgate')!;
    const configMapName = pod.volumes!.find((v) => v.name === mount.name)!.configMap!.name;
    const [configMap] = find<IConfigMap>(objects, 'ConfigMap', configMapName);
    const file = configMap!.data!['tollgate.yaml']!;
    const loaded = parseConfig('tollgate.yaml', file);
    expect(validateConfig(loaded.data, loaded.lineOf)).toEqual([]);

    const [service] = find<IService>(objects, 'Service', 'tollgate');
    const url = new URL(container.env!.find((e) => e.name === 'TOLLGATE_URL')!.value!);
    expect(url.hostname).toBe(`${service!.metadata!.name}.${service!.metadata!.namespace}.svc`);
    expect(service!.spec!.ports!.find((p) => p.name === 'http')!.port).toBe(Number(url.port || 80));
    const token = container.env!.find((e) => e.name === 'TOLLGATE_TOKEN')!.valueFrom!.secretKeyRef!;
    const [secret] = find<ISecret>(objects, 'Secret', token.name);
    expect(Object.keys(secret!.stringData!)).toContain(token.key);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
  });
});

test('the configuration guide`s overlay renders without the template Secrets start-up refuses', () => {
  // The overlay's files as the guide writes them (`# overlays/prod/<file>` heads each), beside k8s/.
  const guide = readText('docs/guides/configuration-as-code.md');
  const files = [...guide.matchAll(/```yaml\n# overlays\/prod\/([\w.-]+)\n([\s\S]*?)```/g)];
  expect(files.map(([, name]) => name)).toEqual(['kustomization.yaml', 'without-template-secrets.yaml']);
  const folder = mkdtempSync(join(tmpdir(), 'tollgate-guide-overlay-'));
  try {
    symlinkSync(resolve('k8s'), join(folder, 'k8s'));
    mkdirSync(join(folder, 'overlays/prod'), { recursive: true });
    for (const [, name, text] of files) writeFileSync(join(folder, 'overlays/prod', name!), text!);
    writeFileSync(
      join(folder, 'overlays/prod/tollgate.yaml'),
      'plans:\n  - { rateLimitId: prod, limit: 5, period: day }\n',
    );
    const rendered = run('kubectl', ['kustomize', join(folder, 'overlays/prod')]);
    expect(rendered.code).toBe(0);
    const objects = parseAllDocuments(rendered.output).map((doc) => doc.toJS() as Manifest);
    expect(find<ISecret>(objects, 'Secret')).toEqual([]);
    // The pods still take their settings from the Secrets the guide creates.
    const [deployment] = find<IDeployment>(objects, 'Deployment', 'tollgate');
    const fromSecrets = deployment!.spec!.template.spec!.containers[0]!.envFrom!.flatMap((e) =>
      e.secretRef ? [e.secretRef.name] : [],
    );
    expect(fromSecrets.sort()).toEqual(['tollgate-datastores', 'tollgate-secrets']);
    const configMaps = find<IConfigMap>(objects, 'ConfigMap').filter((c) =>
      c.metadata!.name!.startsWith('tollgate-config-as-code'),
    );
    expect(configMaps.map((c) => c.data!['tollgate.yaml'])).toEqual([
      'plans:\n  - { rateLimitId: prod, limit: 5, period: day }\n',
    ]);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('the Prometheus Operator checks can fail: a wrong `for` and a wrong type are refused', () => {
  const [rule] = find<{ spec: { groups: { rules: Record<string, unknown>[] }[] } }>(
    rendered.monitoring,
    'PrometheusRule',
  );
  const broken = structuredClone(rule!);
  broken.spec.groups[0]!.rules[0]!.for = '2 minutes';
  expect(() => new PrometheusRule(broken as never).validate()).toThrow(/for must match pattern/);
  const [monitor] = find<{ spec: { endpoints: Record<string, unknown>[] } }>(
    rendered.monitoring,
    'ServiceMonitor',
  );
  const wrong = structuredClone(monitor!);
  wrong.spec.endpoints[0]!.port = 9090;
  expect(() => new ServiceMonitor(wrong as never).validate()).toThrow(/port must be string/);
});

test('embedded: one pod, replaced (never two) on a persistent volume that holds DATA_DIR', () => {
  const objects = rendered.embedded;
  const [deployment] = find<IDeployment>(objects, 'Deployment', 'tollgate');
  expect(deployment!.spec!.replicas).toBe(1);
  expect(deployment!.spec!.strategy).toEqual({ type: 'Recreate' });
  expect(find(objects, 'HorizontalPodAutoscaler')).toEqual([]);
  const pod = deployment!.spec!.template.spec!;
  const [configMap] = find<IConfigMap>(objects, 'ConfigMap', 'tollgate-config');
  const mount = pod.containers[0]!.volumeMounts!.find((m) => m.mountPath === configMap!.data!.DATA_DIR)!;
  const volume = pod.volumes!.find((v) => v.name === mount.name)!;
  expect(volume.emptyDir).toBeUndefined();
  const [claim] = find<Manifest>(objects, 'PersistentVolumeClaim', volume.persistentVolumeClaim!.claimName);
  expect(claim).toBeDefined();
  // No datastore: embedded mode is DATABASE_URL and REDIS_URL unset.
  const secrets = find<ISecret>(objects, 'Secret').flatMap((s) => Object.keys(s.stringData ?? {}));
  expect(secrets).not.toContain('DATABASE_URL');
  expect(secrets).not.toContain('REDIS_URL');
});

test('replicated: several pods spread over nodes, the datastores from a Secret', () => {
  const objects = rendered.replicated;
  const [deployment] = find<IDeployment>(objects, 'Deployment', 'tollgate');
  expect(deployment!.spec!.replicas).toBeGreaterThanOrEqual(2);
  const pod = deployment!.spec!.template.spec!;
  expect(pod.topologySpreadConstraints!.map((t) => t.topologyKey)).toContain('kubernetes.io/hostname');
  const fromSecrets = pod.containers[0]!.envFrom!.flatMap((e) => (e.secretRef ? [e.secretRef.name] : []));
  const keys = find<ISecret>(objects, 'Secret')
    .filter((s) => fromSecrets.includes(s.metadata!.name))
    .flatMap((s) => Object.keys(s.stringData ?? {}));
  expect(keys).toEqual(expect.arrayContaining(['DATABASE_URL', 'REDIS_URL']));
  expect(find(objects, 'HorizontalPodAutoscaler')).toHaveLength(1);
  expect(find(objects, 'PodDisruptionBudget')).toHaveLength(1);
});

test('monitoring: the PrometheusRule holds the groups of ops/alerts.yml, the ServiceMonitor scrapes the ops port', () => {
  const objects = rendered.monitoring;
  const [rule] = find<{ spec: { groups: unknown[] } }>(objects, 'PrometheusRule');
  expect(rule!.spec.groups).toEqual(readYaml<{ groups: unknown[] }>('ops/alerts.yml').groups);
  const [monitor] = find<{
    spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
  }>(objects, 'ServiceMonitor');
  const [service] = find<IService>(objects, 'Service', 'tollgate');
  expect(
    Object.entries(monitor!.spec.selector.matchLabels).every(([k, v]) => service!.metadata!.labels![k] === v),
  ).toBe(true);
  expect(monitor!.spec.endpoints).toEqual([expect.objectContaining({ port: 'ops', path: '/metrics' })]);
  expect(service!.spec!.ports!.map((p) => p.name)).toContain('ops');
});

test('monitoring: the ops port admits Prometheus pods only from namespaces carrying the label the overlay sets', () => {
  type AddedRule = { value: { from: { namespaceSelector: { matchLabels: Record<string, string> } }[] } };
  const [patch] = readYaml<AddedRule[]>('k8s/overlays/monitoring/ops-port-from-monitoring.yaml');
  const label = patch!.value.from[0]!.namespaceSelector.matchLabels;
  expect(Object.keys(label)).toHaveLength(1);
  const [[name, value]] = Object.entries(label) as [[string, string]];
  const [deployment] = find<IDeployment>(rendered.monitoring, 'Deployment', 'tollgate');
  const opsPort = deployment!.spec!.template.spec!.containers[0]!.ports!.find((p) => p.name === 'ops')!;
  const opsRules = (policy: INetworkPolicy) =>
    (policy.spec!.ingress ?? []).filter((rule) =>
      (rule.ports ?? []).some((p) => p.port === opsPort.name || p.port === opsPort.containerPort),
    );
  const [monitored] = find<INetworkPolicy>(rendered.monitoring, 'NetworkPolicy');
  const rules = opsRules(monitored!);
  expect(rules).toHaveLength(1);
  expect(rules[0]!.from).toEqual([
    {
      namespaceSelector: { matchLabels: label },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    },
  ]);
  // Set by the overlay, not the base: without it the ops port admits no pod.
  for (const overlay of ['embedded', 'replicated'] as const) {
    const [policy] = find<INetworkPolicy>(rendered[overlay], 'NetworkPolicy');
    expect(opsRules(policy!)).toEqual([]);
  }
  // The guide tells the operator how to give a namespace that label.
  expect(readText('docs/deploy.md')).toContain(`kubectl label namespace monitoring ${name}=${value}`);
});
