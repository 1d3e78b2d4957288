// Dockerfile and .dockerignore, checked without a Docker engine: the stages, what the runtime image
// contains and runs as, and that the production install (--omit=dev) has every package the code imports.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DockerfileParser, type Copy, type Instruction } from 'dockerfile-ast';
import { loadConfig } from '../../src/config.js';
import { ROOT, readText } from '../helpers/deploy-files.js';

interface Stage {
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

const dockerfile = DockerfileParser.parse(readText('Dockerfile'));
const args = new Map<string, string>();
for (const arg of dockerfile.getInitialARGs()) {
  const property = arg.getProperty();
  if (property) args.set(property.getName(), property.getValue() ?? '');
}
const stages: Stage[] = [];
for (const instruction of dockerfile.getInstructions()) {
  if (instruction.getKeyword() === 'FROM') {
    const [image = '', as, name] = instruction.getArguments().map((a) => a.getValue());
    const resolved = image.replace(/\$\{?(\w+)\}?/g, (_m, v: string) => args.get(v) ?? '');
    stages.push({ image: resolved, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
  } else {
    stages.at(-1)?.instructions.push(instruction);
  }
}
const runtime = stages.at(-1)!;
const of = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword);
// Arguments without flags (dockerfile-ast keeps flags such as --from apart).
const content = (i: Instruction) => i.getArgumentsContent() ?? '';
const fromStage = (i: Instruction) => (i as Copy).getFromFlag()?.getValue() ?? undefined;
/** The JSON array of an exec-form instruction; undefined for the shell form. */
function execForm(text: string): string[] | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

const pkg = JSON.parse(readText('package.json')) as {
  main: string;
  scripts: { start: string };
  engines: { node: string };
  dependencies: Record<string, string>;
  /** Installed by `npm ci --omit=dev` too (PGlite, for upgrade-data-dir). */
  optionalDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const defaults = loadConfig({});

describe('Dockerfile', () => {
  test('is multi-stage, every stage on the Node major of package.json engines, slim at run time', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const major = /(\d+)/.exec(pkg.engines.node)![1];
    for (const stage of stages)
      expect(stage.image).toMatch(new RegExp(`^node:${major}(\\.[\\d.]+)?-(bookworm-|trixie-)?slim$`));
  });

  test('the runtime stage takes node_modules from a stage that ran npm ci --omit=dev', () => {
    const copy = of(runtime, 'COPY').find((i) => /node_modules/.test(content(i)));
    const source = stages.find((s) => s.name === fromStage(copy!));
    expect(source).toBeDefined();
    const installs = of(source!, 'RUN')
      .map(content)
      .filter((c) => /\bnpm ci\b/.test(c));
    expect(installs.length).toBe(1);
    expect(installs[0]).toMatch(/--omit=dev/);
    // The runtime stage itself installs nothing that could pull in devDependencies.
    expect(
      of(runtime, 'RUN')
        .map(content)
        .filter((c) => /\bnpm (ci|i|install)\b/.test(c)),
    ).toEqual([]);
  });

  test('the runtime image has what start-up reads: package.json (ESM), sql/, dist/src and dist/console', () => {
    const copies = of(runtime, 'COPY').map((i) => `${fromStage(i) ?? 'context'}: ${content(i)}`);
    expect(copies).toContain('context: package.json ./');
    expect(copies).toContain('context: sql ./sql');
    const build = stages.find((s) => of(s, 'RUN').some((r) => /\btsc\b/.test(content(r))));
    expect(copies).toContain(`${build?.name}: /app/dist/src ./dist/src`);
    // The web console, built beside the server (main.ts serves dist/console).
    expect(copies).toContain(`${build?.name}: /app/dist/console ./dist/console`);
    expect(of(runtime, 'WORKDIR').map(content)).toEqual(['/app']);
  });

  test('runs as a non-root numeric user, in production mode, with DATA_DIR owned by that user', () => {
    const user = of(runtime, 'USER').map(content).at(-1);
    expect(user).toMatch(/^\d+(:\d+)?$/);
    expect(Number(user!.split(':')[0])).toBeGreaterThan(0);
    const env = of(runtime, 'ENV').map(content).join(' ');
    expect(env).toMatch(/NODE_ENV=production/);
    const dataDir = /DATA_DIR=(\S+)/.exec(env)?.[1];
    expect(dataDir).toBeDefined();
    expect(of(runtime, 'RUN').map(content).join('\n')).toContain(`chown ${user} ${dataDir}`);
  });

  test('CMD is the exec form of `npm start`’s command (node, its flags, package.json main), so SIGTERM reaches the server', () => {
    const cmds = of(runtime, 'CMD');
    expect(cmds).toHaveLength(1);
    // `npm start` execs node too, so a signal sent to npm reaches the server.
    const [exec, ...start] = pkg.scripts.start.split(/\s+/);
    expect(exec).toBe('exec');
    expect(start.at(-1)).toBe(pkg.main);
    expect(execForm(content(cmds[0]!))).toEqual(start);
    expect(of(runtime, 'ENTRYPOINT')).toEqual([]);
    expect(of(runtime, 'STOPSIGNAL').map(content)).toEqual(['SIGTERM']);
  });

  test('HEALTHCHECK probes /healthz on the ops port with node (no curl in slim images)', () => {
    const checks = of(runtime, 'HEALTHCHECK');
    expect(checks).toHaveLength(1);
    const command = execForm(content(checks[0]!).replace(/^CMD\s+/, ''));
    expect(command?.slice(0, 2)).toEqual(['node', '-e']);
    expect(command![2]).toContain('/healthz');
    expect(command![2]).toContain('process.env.OPS_PORT');
  });

  test('EXPOSE and ENV ports are the configuration defaults', () => {
    const env = of(runtime, 'ENV').map(content).join(' ');
    expect(env).toContain(`PORT=${defaults.port}`);
    expect(env).toContain(`OPS_PORT=${defaults.opsPort}`);
    expect(of(runtime, 'EXPOSE').map(content).join(' ').split(/\s+/).map(Number).sort()).toEqual(
      [defaults.port, defaults.opsPort].sort(),
    );
  });
});

describe('.dockerignore', () => {
  const lines = readText('.dockerignore')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));

  test('is an allow-list: data/ (generated secrets), .env, .git and node_modules never enter the context', () => {
    expect(lines[0]).toBe('*');
    const allowed = lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    for (const secret of ['data', '.env', '.git', 'node_modules', 'dist'])
      expect(allowed).not.toContain(secret);
  });

  test('allows every path the Dockerfile copies from the build context', () => {
    const allowed = new Set(lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, '')));
    const sources = stages
      .flatMap((s) => of(s, 'COPY'))
      .filter((i) => fromStage(i) === undefined)
      .flatMap((i) => content(i).split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.filter((s) => !allowed.has(s.replace(/\/$/, '')))).toEqual([]);
  });
});

describe('production dependencies', () => {
  /** The files the image ships: the tests beside them (`*.test.ts`) are left out of the build. */
  function sourceFiles(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? sourceFiles(join(dir, e.name))
        : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
          ? [join(dir, e.name)]
          : [],
    );
  }

  test('every package src/ imports at run time is a dependency or an optional one, not a devDependency (npm ci --omit=dev)', () => {
    const missing: string[] = [];
    const seen = new Set<string>();
    const files = sourceFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const source = readFileSync(file, 'utf8');
      // `import type` is erased by tsc; everything else is loaded at run time.
      const specifiers = [
        ...source.matchAll(
          /^\s*(?:import(?!\s+type\s)[^'"]*?from\s*|import\s*|export(?!\s+type\s)\s+[^'"]*?from\s*)['"]([^'"]+)['"]/gm,
        ),
        ...source.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ].map((m) => m[1]!);
      for (const specifier of specifiers) {
        if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
        const name = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : specifier.split('/')[0]!;
        seen.add(name);
        if (!(name in pkg.dependencies) && !(name in pkg.optionalDependencies))
          missing.push(`${relative(ROOT, file)}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
    // The scan must see the service's real imports, or this test would pass on nothing.
    expect(seen).toContain('pino');
  });
});
