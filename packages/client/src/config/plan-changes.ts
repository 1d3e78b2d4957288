/**
 * The difference between a file and the running service, as changes, and every reason not to make
 * them, all found before any call that changes state: a reference to nothing, a field the API cannot
 * change, a secret whose variable is not set, and (with --prune, without --force) what is still in use.
 */
import type { Change } from './change.js';
import type { ConfigProblem } from './config-error.js';
import { fieldName, type ConfigFile, type FieldPath, type ListSection, type Section } from './config-file.js';
import { secretOf, type Environment } from './env-references.js';
import type { AfterApply, ApplyOptions } from './kind.js';
import { KINDS, type AnyKind } from './kinds/index.js';
import type { ServiceState } from './read-state.js';

export interface PlanOptions extends ApplyOptions {
  /** Delete what is in use too, as the API's `force` does. */
  readonly force: boolean;
}

/** Changes of one kind: creations and updates, deletions. */
export interface KindChanges {
  readonly section: Section;
  readonly upserts: readonly Change[];
  readonly deletions: readonly Change[];
}

export interface ChangePlan {
  readonly changes: readonly KindChanges[];
  /** Faults of the file against the service (with line and field). */
  readonly problems: readonly ConfigProblem[];
  /** `--prune` without `--force`: what would be deleted but is in use, and why. */
  readonly inUse: readonly string[];
}

/** The items a file declares of a kind: a singleton left out is declared as `{}`. */
function itemsOf(kind: AnyKind, config: ConfigFile): readonly unknown[] {
  return kind.singleton ? [config[kind.section] ?? {}] : ((config[kind.section] as unknown[]) ?? []);
}

/**
 * For each item, the object it declares, if the service holds it: of those with its identity, one it
 * leaves unchanged first, else the first left. Identities are unique but for webhooks, where two may
 * share a URL: each then pairs with its own, and a second apply changes nothing.
 */
function pairs(
  kind: AnyKind,
  items: readonly unknown[],
  current: readonly unknown[],
  options: ApplyOptions,
): (unknown | undefined)[] {
  const unclaimed = new Set(current);
  const claim = (item: unknown, unchangedOnly: boolean) => {
    const id = kind.identityOfItem(item);
    const found = [...unclaimed].find(
      (object) =>
        kind.identityOf(object) === id &&
        (!unchangedOnly || Object.keys(kind.differences(item, object, options)).length === 0),
    );
    unclaimed.delete(found);
    return found;
  };
  const unchanged = items.map((item) => claim(item, true));
  return unchanged.map((object, i) => object ?? claim(items[i], false));
}

function kindChanges(
  kind: AnyKind,
  config: ConfigFile,
  current: readonly unknown[],
  options: PlanOptions,
  after: AfterApply,
  env: Environment,
  fault: (path: FieldPath, message: string) => void,
  inUse: string[],
): KindChanges {
  const named = (id: string) => (kind.singleton ? kind.noun : `${kind.noun} "${id}"`);
  const items = itemsOf(kind, config);
  const paired = pairs(kind, items, current, options);
  const upserts = items.flatMap((item, i): Change[] => {
    const path: FieldPath = kind.singleton ? [kind.section] : [kind.section, i];
    const sending = (secrets: string[]) => {
      for (const reference of secrets) {
        const { name, value } = secretOf(reference, env);
        if (value === undefined) fault([...path, ...kind.secretField!], `\${${name}} is not set`);
      }
      return secrets;
    };
    const id = kind.identityOfItem(item);
    const object = paired[i];
    if (object === undefined) {
      return [
        {
          action: 'create',
          target: named(id),
          fields: [],
          secrets: sending(kind.secretsOf?.(item) ?? []),
          // A singleton always exists: only the kinds that list objects get here.
          run: (client, env) => kind.create!(client, item, env),
        },
      ];
    }
    const conflict = kind.conflict?.(item, object);
    if (conflict !== undefined) fault(path, conflict);
    const patch = kind.differences(item, object, options);
    if (Object.keys(patch).length === 0) return [];
    return [
      {
        action: 'update',
        target: named(id),
        fields: Object.keys(patch),
        secrets: sending(kind.secretsOf?.(item, patch) ?? []),
        run: (client, env) => kind.update(client, object, patch, env),
      },
    ];
  });
  const declared = new Set(paired);
  const deletions = !options.prune
    ? []
    : current.flatMap((object): Change[] => {
        const id = kind.identityOf(object);
        if (id === undefined || declared.has(object)) return [];
        const reason = kind.inUse?.(object, after);
        if (reason !== undefined && !options.force) inUse.push(`${named(id)}: ${reason}`);
        const force = reason !== undefined;
        return [
          {
            action: 'delete',
            target: named(id),
            fields: force ? ['force'] : [],
            secrets: [],
            // A singleton is always declared: never deleted.
            run: (client) => kind.remove!(client, object, force),
          },
        ];
      });
  return { section: kind.section, upserts, deletions };
}

/** The identities a file may refer to: what it declares, and what the service keeps of the rest. */
function known(section: ListSection, config: ConfigFile, state: ServiceState, prune: boolean): Set<string> {
  const kind = KINDS.find((k) => k.section === section)!;
  const kept = prune ? [] : (state.get(section) ?? []).map((object) => kind.identityOf(object) ?? '');
  return new Set([...(config[section] ?? []).map((item) => kind.identityOfItem(item)), ...kept]);
}

/** Each plan and route a file names, that neither it nor the service (after the apply) holds. */
function dangling(config: ConfigFile, state: ServiceState, prune: boolean) {
  const plans = known('plans', config, state, prune);
  const routes = known('routes', config, state, prune);
  const faults: [FieldPath, string][] = [];
  (config.consumers ?? []).forEach((consumer, i) => {
    const id = consumer.rateLimitId;
    if (typeof id === 'string' && !plans.has(id))
      faults.push([['consumers', i, 'rateLimitId'], `names no plan ("${id}")`]);
  });
  (config.portal?.publicPlans ?? []).forEach((id, i) => {
    if (!plans.has(id)) faults.push([['portal', 'publicPlans', i], `names no plan ("${id}")`]);
  });
  (config.plans ?? []).forEach((plan, i) => {
    const matches: [FieldPath, { routeIds?: string[] } | undefined][] = [
      ...(plan.limits ?? []).map((l, j): [FieldPath, typeof l.match] => [
        ['plans', i, 'limits', j, 'match'],
        l.match,
      ]),
      ...(plan.costs ?? []).map((c, j): [FieldPath, typeof c.match] => [
        ['plans', i, 'costs', j, 'match'],
        c.match,
      ]),
    ];
    for (const [path, match] of matches)
      (match?.routeIds ?? []).forEach((id, k) => {
        if (!routes.has(id)) faults.push([[...path, 'routeIds', k], `names no route ("${id}")`]);
      });
  });
  return faults;
}

export function planChanges(
  config: ConfigFile,
  state: ServiceState,
  options: PlanOptions,
  env: Environment,
  lineOf: (path: FieldPath) => number,
): ChangePlan {
  const problems: ConfigProblem[] = [];
  const fault = (path: FieldPath, message: string) =>
    problems.push({ line: lineOf(path), field: fieldName(path), message });
  const inUse: string[] = [];
  const changes = KINDS.map((kind) =>
    kindChanges(
      kind,
      config,
      state.get(kind.section) ?? [],
      options,
      { config, state, prune: options.prune },
      env,
      fault,
      inUse,
    ),
  );
  for (const [path, message] of dangling(config, state, options.prune)) fault(path, message);
  return { changes, problems: problems.sort((a, b) => a.line - b.line), inUse };
}
