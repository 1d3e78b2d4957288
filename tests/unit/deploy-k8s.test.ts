// k8s/overlays/replicated as `kubectl kustomize` renders it (the base with several replicas): every
// manifest against the Kubernetes schemas (kubernetes-models), strictly (no unknown fields), then the
// cross-references a cluster would only reveal at run time: ports, selectors, probe targets, env names
// against src/config.ts, and the shutdown budget. tests/unit/deploy-k8s-overlays.test.ts covers the
// other overlays, the configuration Job and the Prometheus Operator objects.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { ISecret } from 'kubernetes-models/v1/Secret';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  ROOT,
  configVariables,
  readText,
  MODELS,
  readYaml,
  renderKustomization,
  unknownFields,
} from '../helpers/deploy-files.js';

type Manifest = { apiVersion: string; kind: string; metadata?: { name?: string } };

const kustomization = readYaml<{
  namespace: string;
  resources: string[];
  configMapGenerator: { files: string[] }[];
  images: { name: string; newName: string; newTag: string }[];
}>('k8s/base/kustomization.yaml');
const manifests: { file: string; object: Manifest }[] = renderKustomization('overlays/replicated').map(
  (object) => ({ file: `${object.kind}/${object.metadata?.name}`, object }),
);
function only<T>(kind: string, name?: string): T {
  const found = manifests.filter(
    (m) => m.object.kind === kind && (name === undefined || m.object.metadata?.name === name),
  );
  expect(found).toHaveLength(1);
  return found[0]!.object as T;
}

const deployment = only<IDeployment>('Deployment');
const configMap = only<IConfigMap>('ConfigMap', 'tollgate-config');
const secret = only<ISecret>('Secret', 'tollgate-secrets');
const datastores = only<ISecret>('Secret', 'tollgate-datastores');
const service = only<IService>('Service');
const hpa = only<IHorizontalPodAutoscaler>('HorizontalPodAutoscaler');
const pdb = only<IPodDisruptionBudget>('PodDisruptionBudget');
const networkPolicy = only<INetworkPolicy>('NetworkPolicy');
const podSpec = deployment.spec!.template.spec!;
const podLabels = deployment.spec!.template.metadata!.labels!;
const container = podSpec.containers.find((c) => c.name === 'tollgate') as IContainer;

/** A port reference (name or number) resolved against the container's ports. */
function containerPort(ref: string | number | undefined): number | undefined {
  const port = container.ports?.find((p) => p.name === ref || p.containerPort === ref);
  return port?.containerPort;
}

function matches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  return (
    selector !== undefined &&
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([k, v]) => labels[k] === v)
  );
}

/** Settings as the pod sees them: the ConfigMap plus valid stand-ins for the Secret's values. */
const VALID_SECRETS: Record<string, string> = {
  ROOT_TOKEN: 'a-root-token-of-enough-length',
  SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  DATABASE_URL: 'postgres://tollgate:pw@postgres.db.svc:5432/tollgate',
  REDIS_URL: 'redis://redis.cache.svc:6379',
};
const podEnv = { ...configMap.data, ...VALID_SECRETS };

describe('k8s manifests (overlays/replicated)', () => {
  test('the base kustomization lists every manifest of k8s/base and sets the image of the container', () => {
    const files = readdirSync(join(ROOT, 'k8s/base')).filter(
      (f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml',
    );
    const listed = [...kustomization.resources, ...kustomization.configMapGenerator.flatMap((g) => g.files)];
    expect(listed.sort()).toEqual(files.sort());
    expect(kustomization.images.map((i) => i.name)).toContain(container.image!.split(':')[0]);
  });

  test.each(manifests.map((m) => [`${m.file} ${m.object.kind}`, m.object] as const))(
    '%s is valid against the Kubernetes schema, with no unknown fields',
    (_name, object) => {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect(Model).toBeDefined();
      expect(() => new Model!(object as never).validate()).not.toThrow();
      expect(unknownFields(object)).toEqual([]);
    },
  );

  test('the checks reject a wrong type and a misspelt field (they can fail)', () => {
    const broken = structuredClone(deployment) as unknown as {
      spec: { template: { spec: { containers: Record<string, unknown>[] } } };
    };
    const c = broken.spec.template.spec.containers[0]!;
    c.ports = [{ name: 'http', containerPort: '8080' }];
    expect(() => new Deployment(broken as never).validate()).toThrow(/containerPort must be integer/);
    c.readinesProbe = c.readinessProbe;
    delete c.readinessProbe;
    expect(unknownFields(broken as unknown as Manifest)).toEqual([
      'Deployment.spec.template.spec.containers[0].readinesProbe: unknown field',
    ]);
  });

  test('the Deployment runs two or more replicas and selects its own pods', () => {
    expect(deployment.spec!.replicas).toBeGreaterThanOrEqual(2);
    expect(matches(deployment.spec!.selector.matchLabels, podLabels)).toBe(true);
  });

  test('probes hit the ops port: readiness /readyz, liveness and start-up /healthz', () => {
    const opsPort = Number(configMap.data!.OPS_PORT);
    expect(containerPort(container.readinessProbe?.httpGet?.port)).toBe(opsPort);
    expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(containerPort(container.livenessProbe?.httpGet?.port)).toBe(opsPort);
    expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(containerPort(container.startupProbe?.httpGet?.port)).toBe(opsPort);
    expect(containerPort('http')).toBe(Number(configMap.data!.PORT));
    const annotations = deployment.spec!.template.metadata!.annotations!;
    expect(Number(annotations['prometheus.io/port'])).toBe(opsPort);
  });

  test('the pod runs non-root on a read-only root filesystem, with /tmp and DATA_DIR writable', () => {
    expect(podSpec.securityContext?.runAsNonRoot).toBe(true);
    // The same uid as the image's USER, so file ownership in the image matches.
    const user = /^USER\s+(\d+)/m.exec(readText('Dockerfile'))?.[1];
    expect(podSpec.securityContext?.runAsUser).toBe(Number(user));
    expect(podSpec.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    expect(container.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    const mounts = new Map((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    for (const path of ['/tmp', configMap.data!.DATA_DIR!]) {
      const volume = podSpec.volumes?.find((v) => v.name === mounts.get(path));
      expect(volume?.emptyDir).toBeDefined();
    }
  });

  test('resources are requested (the HPA scales on CPU utilisation) and memory is capped', () => {
    expect(container.resources?.requests?.cpu).toBeDefined();
    expect(container.resources?.requests?.memory).toBeDefined();
    expect(container.resources?.limits?.memory).toBeDefined();
    expect(hpa.spec!.metrics?.some((m) => m.resource?.name === 'cpu')).toBe(true);
  });

  test('the grace period covers the preStop sleep, SHUTDOWN_TIMEOUT_MS and a final usage flush', () => {
    const config = loadConfig(podEnv);
    const command = container.lifecycle?.preStop?.exec?.command ?? [];
    expect(command[0]).toBe('sleep');
    const preStop = Number(command[1]);
    const grace = podSpec.terminationGracePeriodSeconds!;
    // Five seconds for the flush after the drain and the exit, before Kubernetes sends SIGKILL.
    expect(grace).toBeGreaterThanOrEqual(preStop + config.shutdownTimeoutMs / 1000 + 5);
  });

  test('the Service selects the pods and targets ports the container has, ops port named', () => {
    expect(matches(service.spec!.selector, podLabels)).toBe(true);
    for (const port of service.spec!.ports!) expect(containerPort(port.targetPort)).toBeDefined();
    expect(containerPort(service.spec!.ports!.find((p) => p.name === 'ops')?.targetPort)).toBe(
      Number(configMap.data!.OPS_PORT),
    );
  });

  test('the HPA and the PDB target the Deployment, and a disruption always leaves a replica', () => {
    expect(hpa.spec!.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deployment.metadata!.name,
    });
    expect(hpa.spec!.minReplicas).toBe(deployment.spec!.replicas);
    expect(hpa.spec!.maxReplicas).toBeGreaterThan(hpa.spec!.minReplicas!);
    expect(matches(pdb.spec!.selector!.matchLabels, podLabels)).toBe(true);
    expect(Number(pdb.spec!.maxUnavailable)).toBeLessThan(hpa.spec!.minReplicas!);
  });

  test('the NetworkPolicy opens the public port and no pod may reach the ops port without the monitoring overlay', () => {
    expect(matches(networkPolicy.spec!.podSelector?.matchLabels, podLabels)).toBe(true);
    const rules = networkPolicy.spec!.ingress ?? [];
    // A rule without ports opens every port: none may exist.
    expect(rules.every((r) => (r.ports ?? []).length > 0)).toBe(true);
    const opsPort = Number(configMap.data!.OPS_PORT);
    expect(rules.filter((r) => r.ports!.some((p) => containerPort(p.port) === opsPort))).toEqual([]);
    const httpPort = Number(configMap.data!.PORT);
    expect(rules.some((r) => r.ports!.some((p) => containerPort(p.port) === httpPort))).toBe(true);
  });

  test('every env name in the ConfigMap, Secret and Deployment is a variable src/config.ts reads', () => {
    const known = configVariables();
    // The parser must find the documented variables, or this test would pass on an empty set.
    for (const name of [
      'PORT',
      'OPS_PORT',
      'DATABASE_URL',
      'REDIS_URL',
      'SHUTDOWN_TIMEOUT_MS',
      'ROOT_TOKEN',
    ]) {
      expect(known).toContain(name);
    }
    const used = [
      ...Object.keys(configMap.data ?? {}),
      ...Object.keys(secret.stringData ?? {}),
      ...Object.keys(datastores.stringData ?? {}),
      ...(container.env ?? []).map((e) => e.name),
    ];
    expect(used.filter((name) => !known.has(name))).toEqual([]);
    const refs = (container.envFrom ?? []).map((e) => e.configMapRef?.name ?? e.secretRef?.name);
    expect(refs.sort()).toEqual(
      [configMap.metadata!.name, secret.metadata!.name, datastores.metadata!.name].sort(),
    );
  });

  test('the Secret templates hold the four secrets, each a placeholder that start-up refuses', () => {
    const secrets = { ...secret.stringData, ...datastores.stringData };
    expect(Object.keys(secrets).sort()).toEqual([
      'DATABASE_URL',
      'REDIS_URL',
      'ROOT_TOKEN',
      'SECRET_ENCRYPTION_KEY',
    ]);
    expect(() => loadConfig(podEnv)).not.toThrow();
    for (const [name, placeholder] of Object.entries(secrets)) {
      expect(placeholder).toMatch(/REPLACE/);
      let error: unknown;
      try {
        loadConfig({ ...podEnv, [name]: placeholder });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(name);
    }
  });

  test('the ConfigMap is a valid production configuration', () => {
    const config = loadConfig(podEnv);
    expect(config.production).toBe(true);
    expect(config.workers).toBe(1);
  });
});
