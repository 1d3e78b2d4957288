/**
 * What `tollgate apply` and `export` know of one kind of object: how the service lists it, what
 * identifies it, how a declared item compares with it, and the calls that create, change and delete it.
 */
import type { TollgateClient } from '../management-client.js';
import type { ConfigFile, Section } from './config-file.js';
import type { Environment } from './env-references.js';

export interface ApplyOptions {
  /** Send declared credentials to objects that exist too (`--rotate-credentials`). */
  readonly rotateCredentials: boolean;
}

/** What the service will hold once the file is applied: the file, and the service as it is. */
export interface AfterApply {
  readonly config: ConfigFile;
  readonly state: ReadonlyMap<Section, readonly unknown[]>;
  readonly prune: boolean;
}

export interface Kind<Item, Current> {
  readonly section: Section;
  /** Names one object in what apply prints: `plan`, `billing export`. */
  readonly noun: string;
  list(client: TollgateClient): Promise<Current[]>;
  identityOfItem(item: Item): string;
  /** undefined: a file cannot name it (a consumer without `externalId`), so apply leaves it alone. */
  identityOf(current: Current): string | undefined;
  /** The update body that makes `current` what `item` declares: only the fields that differ; {} when none. */
  differences(item: Item, current: Current, options: ApplyOptions): Record<string, unknown>;
  /** Why `item` cannot be applied to `current` (a field the API cannot change), if it cannot. */
  conflict?(item: Item, current: Current): string | undefined;
  /** The `${ENV_VAR}` references creating `item`, or sending `patch`, reads. */
  secretsOf?(item: Item, patch?: Record<string, unknown>): string[];
  create(client: TollgateClient, item: Item, env: Environment): Promise<void>;
  update(
    client: TollgateClient,
    current: Current,
    patch: Record<string, unknown>,
    env: Environment,
  ): Promise<void>;
  remove(client: TollgateClient, current: Current, force: boolean): Promise<void>;
  /** Why deleting it without `force` is refused (keys or consumers still use it after the apply), if it is. */
  inUse?(current: Current, after: AfterApply): string | undefined;
  /** The item that declares it as it is: `apply` of it changes nothing. */
  exported(current: Current): Item;
}
