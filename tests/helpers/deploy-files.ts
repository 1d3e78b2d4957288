// Shared readers for the deployment tests (tests/unit/deploy-*.test.ts): the project's deploy files,
// the variables src/config.ts reads, and a strict unknown-field check for Kubernetes objects.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { parseAllDocuments } from 'yaml';

export const ROOT = resolve(import.meta.dirname, '../..');

export function readText(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** Every YAML document of a file, with `<<:` merge keys resolved (docker-compose.yml uses them). */
export function readYamlDocuments(path: string): unknown[] {
  return parseAllDocuments(readText(path), { merge: true }).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS();
  });
}

export function readYaml<T = Record<string, unknown>>(path: string): T {
  const docs = readYamlDocuments(path);
  if (docs.length !== 1) throw new Error(`${path}: expected one YAML document, found ${docs.length}`);
  return docs[0] as T;
}

/**
 * The environment variables src/config.ts reads, found in its source: `env.NAME`, `env['NAME']` and
 * helper calls such as `integer(env, 'NAME', ...)`.
 */
export function configVariables(): Set<string> {
  const source = readText('src/config.ts');
  const names = new Set<string>();
  for (const re of [
    /\benv\.([A-Z][A-Z0-9_]*)/g,
    /\benv\[['"]([A-Z][A-Z0-9_]*)['"]\]/g,
    /\(env, ['"]([A-Z][A-Z0-9_]*)['"]/g,
  ]) {
    for (const m of source.matchAll(re)) names.add(m[1]!);
  }
  return names;
}

/**
 * The schema of each kind k8s/ uses, by `apiVersion/kind`: kubernetes-models, and for the Prometheus
 * Operator's kinds @kubernetes-models/prometheus-operator (generated from the Operator's CRDs).
 */
export const MODELS: Readonly<Record<string, new (data: never) => { validate(): void }>> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** The objects `kubectl kustomize` renders for a folder of k8s/ (an overlay, or the base). */
export function renderKustomization(
  folder: string,
): { apiVersion: string; kind: string; metadata?: { name?: string } }[] {
  // stderr kept from the test output: newer kubectl warns of the fields k8s/ keeps for kubectl 1.20.
  const output = execFileSync('kubectl', ['kustomize', join(ROOT, 'k8s', folder)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseAllDocuments(output).map((doc) => {
    if (doc.errors.length > 0)
      throw new Error(`k8s/${folder}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS();
  });
}

/** Runs a command and returns its exit code and combined output (never throws on a non-zero exit). */
export function run(cmd: string, args: readonly string[], cwd = ROOT): { code: number; output: string } {
  try {
    const output = execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { code: 0, output };
  } catch (err) {
    const e = err as { status?: number | null; stdout?: string; stderr?: string; message: string };
    return { code: e.status ?? -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
  }
}

// --- strict field check --------------------------------------------------------------------------
// The Kubernetes OpenAPI schemas allow unknown fields (the API server drops them with a warning), so a
// typo such as `readinesProbe` passes schema validation and silently removes the probe. The type
// declarations of kubernetes-models list every field of every object; walking them rejects such typos,
// like `kubeconform -strict`.

interface Shape {
  readonly fields: ReadonlyMap<string, readonly string[]>; // field -> interface files its value uses
}

const shapes = new Map<string, Shape | null>();

function resolveDeclaration(from: string, specifier: string): string {
  if (specifier.startsWith('.')) return resolve(dirname(from), specifier.replace(/\.js$/, '.d.ts'));
  // Package subpath: look next to kubernetes-models first (a nested copy wins), then at the top.
  const nested = join(ROOT, 'node_modules/kubernetes-models/node_modules', `${specifier}.d.ts`);
  return existsSync(nested) ? nested : join(ROOT, 'node_modules', `${specifier}.d.ts`);
}

function shapeOf(file: string): Shape | null {
  const cached = shapes.get(file);
  if (cached !== undefined) return cached;
  const source = readFileSync(file, 'utf8');
  const body = /export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)\n\}/.exec(source)?.[1];
  let shape: Shape | null = null;
  if (body !== undefined) {
    const imports = new Map<string, string>();
    for (const m of source.matchAll(/import \{ (\w+) \} from "([^"]+)";/g)) imports.set(m[1]!, m[2]!);
    const fields = new Map<string, string[]>();
    for (const m of body.matchAll(/^ {4}"([^"]+)"\??: (.*)$/gm)) {
      const refs = [...m[2]!.matchAll(/\b(I\w+)\b/g)]
        .map((r) => imports.get(r[1]!))
        .filter((spec): spec is string => spec !== undefined)
        .map((spec) => resolveDeclaration(file, spec));
      fields.set(m[1]!, refs);
    }
    shape = { fields };
  }
  shapes.set(file, shape);
  return shape;
}

function walk(value: unknown, file: string, path: string, problems: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => walk(item, file, `${path}[${i}]`, problems));
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const shape = shapeOf(file);
  if (!shape) return; // an alias such as IntOrString or Quantity: no fields to check
  for (const [key, child] of Object.entries(value)) {
    const refs = shape.fields.get(key);
    if (!refs) {
      problems.push(`${path}.${key}: unknown field`);
      continue;
    }
    for (const ref of refs) walk(child, ref, `${path}.${key}`, problems);
  }
}

/** Fields of `object` (a manifest of `apiVersion`/`kind`) that the Kubernetes API does not define. */
export function unknownFields(object: { apiVersion: string; kind: string }): string[] {
  const file = join(ROOT, 'node_modules/kubernetes-models', object.apiVersion, `${object.kind}.d.ts`);
  if (!existsSync(file)) return [`${object.apiVersion} ${object.kind}: no such kind in kubernetes-models`];
  const problems: string[] = [];
  walk(object, file, object.kind, problems);
  return problems;
}
