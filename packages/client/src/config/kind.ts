/**
 * What `tollgate apply` and `export` know of one kind of object: how the service lists it, what
 * identifies it, how a declared item compares with it, and the calls that create, change and delete it.
 */
import type { TollgateClient } from '../management-client.js';
import type { ConfigFile, FieldPath, Section } from './config-file.js';
import type { Environment } from './env-references.js';

export interface ApplyOptions {
  /** Send declared credentials to objects that exist too (`--rotate-credentials`). */
  readonly rotateCredentials: boolean;
  /** Delete what the file does not name; of a singleton, return the fields it leaves out to their defaults. */
  readonly prune: boolean;
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
  /**
   * The service always holds exactly one (the portal's settings): the file declares it as an object, not
   * a list; it is never created or deleted, only updated, and a file without it declares it as `{}`.
   */
  readonly singleton?: boolean;
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
  /** Where in an item its secret reference is (`credential`), named when its variable is not set. */
  readonly secretField?: FieldPath;
  /** Absent for a singleton. */
  create?(client: TollgateClient, item: Item, env: Environment): Promise<void>;
  update(
    client: TollgateClient,
    current: Current,
    patch: Record<string, unknown>,
    env: Environment,
  ): Promise<void>;
  /** Absent for a singleton. */
  remove?(client: TollgateClient, current: Current, force: boolean): Promise<void>;
  /** Why deleting it without `force` is refused (keys or consumers still use it after the apply), if it is. */
  inUse?(current: Current, after: AfterApply): string | undefined;
  /** The item that declares it as it is: `apply` of it changes nothing. */
  exported(current: Current): Item;
}
