// docker-compose.yml against the Compose specification schema (the copy dclint ships), then the wiring
// that `docker compose up` would only reveal at run time: replica settings accepted by src/config.ts,
// hosts that are services, health conditions, nginx upstreams and Prometheus targets for every replica.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { loadConfig } from '../../src/config.js';
import { ROOT, configVariables, readText, readYaml, run } from '../helpers/deploy-files.js';

interface ComposeService {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
  volumes?: string[];
  stop_grace_period?: string;
  read_only?: boolean;
}

const compose = readYaml<{ services: Record<string, ComposeService> }>('docker-compose.yml');
const services = compose.services;
const replicas = Object.entries(services).filter(
  ([, s]) => s.build !== undefined || s.image?.startsWith('tollgate'),
);

// ajv-formats is CommonJS: its default export arrives as the module object under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  a: Ajv,
) => Ajv;

let validator: ReturnType<Ajv['compile']> | undefined;
function composeValidator() {
  if (validator) return validator;
  const path = join(
    createRequire(import.meta.url).resolve('dclint/package.json'),
    '../schemas/compose.schema.json',
  );
  // Its $schema names draft-07 by an https URL ajv does not know; draft-07 is ajv's default anyway.
  const { $schema: _ignored, ...schema } = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  validator = ajv.compile(schema);
  return validator;
}

/** Compose interpolation of the defaults: `${VAR:-default}` and `${VAR-default}`; a bare `${VAR}` is an error. */
function interpolate(value: string): string {
  return value.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, name: string, fallback: string | undefined) => {
    if (fallback === undefined) throw new Error(`\${${name}} has no default: the demo would need it set`);
    return fallback;
  });
}

function replicaEnv(service: ComposeService): Record<string, string> {
  const env = Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]),
  );
  // The image sets NODE_ENV=production (Dockerfile), which makes ROOT_TOKEN mandatory.
  return { NODE_ENV: 'production', ...env };
}

function seconds(duration: string): number {
  const m = /^(\d+)(ms|s|m)$/.exec(duration);
  if (!m) throw new Error(`unsupported duration ${duration}`);
  return Number(m[1]) / (m[2] === 'ms' ? 1000 : m[2] === 'm' ? 1 / 60 : 1);
}

describe('docker-compose.yml', () => {
  test('is valid against the Compose specification schema', () => {
    const validate = composeValidator();
    const valid = validate(compose);
    expect(valid ? [] : validate.errors).toEqual([]);
  });

  test('the schema check can fail: a misspelt key is reported', () => {
    const validate = composeValidator();
    const broken = structuredClone(compose) as unknown as {
      services: Record<string, Record<string, unknown>>;
    };
    broken.services.nginx!.healthcheck = { test: ['CMD', 'true'], intervall: '5s' };
    expect(validate(broken)).toBe(false);
    expect(validate.errors?.map((e) => e.params)).toContainEqual({ additionalProperty: 'intervall' });
  });

  test('runs two or more Tollgate replicas, each with settings src/config.ts accepts', () => {
    expect(replicas.length).toBeGreaterThanOrEqual(2);
    const known = configVariables();
    for (const [, service] of replicas) {
      expect(Object.keys(service.environment ?? {}).filter((k) => !known.has(k))).toEqual([]);
      const config = loadConfig(replicaEnv(service));
      // Shared state: a replica with its own embedded database or counters would break exact limits.
      expect(config.databaseUrl).toBeDefined();
      expect(config.redisUrl).toBeDefined();
    }
  });

  test('the replicas reach services of this file: backend, postgres, redis', () => {
    for (const [, service] of replicas) {
      const config = loadConfig(replicaEnv(service));
      for (const url of [config.upstreamUrl!, new URL(config.databaseUrl!), new URL(config.redisUrl!)]) {
        expect(Object.keys(services)).toContain(url.hostname);
      }
      // The password in DATABASE_URL is the one Postgres is started with.
      const postgres = services[new URL(config.databaseUrl!).hostname]!;
      expect(decodeURIComponent(new URL(config.databaseUrl!).password)).toBe(
        interpolate(postgres.environment!.POSTGRES_PASSWORD!),
      );
      expect(new URL(config.databaseUrl!).username).toBe(postgres.environment!.POSTGRES_USER);
    }
  });

  test('every service_healthy dependency has a healthcheck, and replicas wait for their stores', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(services[dependency]).toBeDefined();
        if (condition === 'service_healthy')
          expect([name, services[dependency]!.healthcheck]).toEqual([name, expect.anything()]);
      }
    }
    for (const [, service] of replicas) {
      expect(service.depends_on?.postgres?.condition).toBe('service_healthy');
      expect(service.depends_on?.redis?.condition).toBe('service_healthy');
      const check = service.healthcheck!.test.join(' ');
      expect(check).toContain(`:${loadConfig(replicaEnv(service)).opsPort}/healthz`);
    }
  });

  test('stop_grace_period lets a replica drain (SHUTDOWN_TIMEOUT_MS) and flush before SIGKILL', () => {
    for (const [, service] of replicas) {
      const config = loadConfig(replicaEnv(service));
      expect(seconds(service.stop_grace_period!)).toBeGreaterThan(config.shutdownTimeoutMs / 1000);
    }
  });

  test('only nginx, Prometheus and Grafana are published, on loopback; the replicas ops ports stay internal', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? [])
        expect([name, port]).toEqual([name, expect.stringMatching(/^127\.0\.0\.1:/)]);
    }
    for (const [, service] of replicas) expect(service.ports).toBeUndefined();
  });

  test('every bind-mounted file exists', () => {
    const sources = Object.values(services).flatMap((s) => (s.volumes ?? []).map((v) => v.split(':')[0]!));
    for (const source of sources.filter((s) => s.startsWith('./')))
      expect([source, existsSync(join(ROOT, source))]).toEqual([source, true]);
  });
});

describe('ops/nginx.conf', () => {
  const conf = readText('ops/nginx.conf');

  test('balances over exactly the replicas, on their public port', () => {
    const servers = [...conf.matchAll(/^\s*server\s+([\w.-]+:\d+)/gm)].map((m) => m[1]).sort();
    const expected = replicas.map(([name, s]) => `${name}:${loadConfig(replicaEnv(s)).port}`).sort();
    expect(servers).toEqual(expected);
    expect(services.nginx!.volumes).toContain('./ops/nginx.conf:/etc/nginx/nginx.conf:ro');
  });

  test('passes `nginx -t` (replica names replaced by a local address; CI installs nginx)', () => {
    const which = run('sh', ['-c', 'command -v nginx']);
    expect({ nginx: which.code === 0 ? 'found' : 'missing: apt-get install nginx' }).toEqual({
      nginx: 'found',
    });
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-nginx-'));
    try {
      const local = conf
        .replace(/\b(tollgate-\d+):/g, '127.0.0.1:')
        .replace(/^pid .*$/m, `pid ${dir}/nginx.pid;`)
        // Jest's child stdio is a socket, which /dev/stdout cannot be opened on; a file stands in.
        .replace(/\/dev\/stdout/g, join(dir, 'access.log'));
      writeFileSync(join(dir, 'nginx.conf'), local);
      const result = run('nginx', ['-t', '-q', '-e', 'stderr', '-p', dir, '-c', join(dir, 'nginx.conf')]);
      expect(result).toEqual({ code: 0, output: '' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ops/prometheus.yml', () => {
  const prometheus = readYaml<{
    rule_files: string[];
    scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
  }>('ops/prometheus.yml');

  test('scrapes every replica on its ops port', () => {
    const job = prometheus.scrape_configs.find((j) => j.job_name === 'tollgate')!;
    expect(job.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = job.static_configs.flatMap((c) => c.targets).sort();
    const expected = replicas.map(([name, s]) => `${name}:${loadConfig(replicaEnv(s)).opsPort}`).sort();
    expect(targets).toEqual(expected);
  });

  test('the rule files it loads are mounted beside it in the container', () => {
    const volumes = services.prometheus!.volumes!;
    expect(volumes).toContain('./ops/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    for (const file of prometheus.rule_files)
      expect(volumes).toContain(`./ops/${file}:/etc/prometheus/${file}:ro`);
  });

  test('Grafana reads this Prometheus', () => {
    const datasources = readYaml<{ datasources: { url: string }[] }>(
      'ops/grafana/provisioning/datasources/prometheus.yml',
    );
    const url = new URL(datasources.datasources[0]!.url);
    expect(services[url.hostname]).toBe(services.prometheus);
  });
});
