import { sql } from 'kysely';
import type { Db } from './db.js';
import { sqlDialectOf, type SqlDialect } from './sql-dialect.js';
import type { CorsPolicy } from '../plans/cors-policy.js';
import {
  asciiLowerCase,
  overlaps,
  type HttpMethod,
  type RouteConfig,
  type RouteMatch,
} from '../plans/route.js';

/** A route as stored: its configuration and when it was created and last changed. */
export interface RouteRow extends RouteConfig {
  readonly createdAt: Date;
  readonly lastUpdated: Date;
}

/** What a PATCH may change: everything but the id. */
export type RouteChanges = Partial<Omit<RouteConfig, 'routeId'>>;

/** Any fixed number: replicas sharing a Postgres take it before a change of the route table. */
const ROUTE_TABLE_LOCK_ID = 7_110_451_301;

const columns = [
  'route_id as routeId',
  'host',
  'path_prefix as pathPrefix',
  'methods',
  'case_insensitive as caseInsensitive',
  'upstream_url as upstreamUrl',
  'strip_prefix as stripPrefix',
  'timeout_ms as timeoutMs',
  'cors',
  'created_at as createdAt',
  'last_updated as lastUpdated',
] as const;

interface StoredRoute {
  routeId: string;
  host: string | null;
  pathPrefix: string;
  methods: string | null;
  caseInsensitive: boolean;
  upstreamUrl: string;
  stripPrefix: boolean;
  timeoutMs: number | null;
  /** JSON, null: no policy (sql/082). */
  cors: string | null;
  createdAt: Date;
  lastUpdated: Date;
}

function toRoute({
  host,
  pathPrefix,
  methods,
  caseInsensitive,
  timeoutMs,
  cors,
  ...rest
}: StoredRoute): RouteRow {
  return {
    ...rest,
    cors: cors === null ? null : (JSON.parse(cors) as CorsPolicy),
    match: {
      host,
      pathPrefix,
      methods: methods === null ? null : (methods.split(' ') as HttpMethod[]),
      caseInsensitive,
    },
    timeoutMs: timeoutMs === null ? null : Number(timeoutMs),
  };
}

function matchColumns(match: RouteMatch) {
  return {
    host: match.host,
    path_prefix: match.pathPrefix,
    methods: match.methods === null ? null : match.methods.join(' '),
    case_insensitive: match.caseInsensitive,
  };
}

const corsColumn = (cors: CorsPolicy | null): string | null => (cors === null ? null : JSON.stringify(cors));

export class RouteRepository {
  private readonly dialect: SqlDialect;

  constructor(private readonly db: Db) {
    this.dialect = sqlDialectOf(db);
  }

  /**
   * Inside a transaction, before a change of the table: changes wait for each other until their
   * transactions end, so two overlapping routes cannot both be checked against a table without the other.
   */
  async lock(): Promise<void> {
    await this.dialect.transactionLock(this.db, ROUTE_TABLE_LOCK_ID, true);
  }

  /** Every route, oldest first (creation time, then id): the table each replica loads, and the list. */
  async list(): Promise<RouteRow[]> {
    const rows = await this.db
      .selectFrom('routes')
      .select(columns)
      .orderBy('created_at')
      .orderBy('route_id')
      .execute();
    return rows.map(toRoute);
  }

  /** `forUpdate`: inside a transaction, hold the row until it ends (the state before a change). */
  async get(routeId: string, forUpdate = false): Promise<RouteRow | undefined> {
    let query = this.db.selectFrom('routes').select(columns).where('route_id', '=', routeId);
    if (forUpdate) query = this.dialect.lockRows(query, 'update');
    const row = await query.executeTakeFirst();
    return row && toRoute(row);
  }

  /**
   * The oldest route other than `exceptRouteId` that overlaps `match` (the same host, the same prefix
   * or one differing in case only where either route ignores case, a method in common).
   */
  async overlapping(match: RouteMatch, exceptRouteId?: string): Promise<RouteRow | undefined> {
    // Prefixes are ASCII (the schema's pattern): SQLite's lower() and Postgres's agree on them.
    let query = this.db
      .selectFrom('routes')
      .select(columns)
      .where(sql<string>`lower(path_prefix)`, '=', asciiLowerCase(match.pathPrefix));
    query = match.host === null ? query.where('host', 'is', null) : query.where('host', '=', match.host);
    if (exceptRouteId !== undefined) query = query.where('route_id', '!=', exceptRouteId);
    const rows = await query.orderBy('created_at').orderBy('route_id').execute();
    return rows.map(toRoute).find((route) => overlaps(route.match, match));
  }

  /** Returns false when a route with that id already exists. */
  async insert(route: RouteConfig, now: Date): Promise<boolean> {
    const result = await this.db
      .insertInto('routes')
      .values({
        route_id: route.routeId,
        ...matchColumns(route.match),
        upstream_url: route.upstreamUrl,
        strip_prefix: route.stripPrefix,
        timeout_ms: route.timeoutMs,
        cors: corsColumn(route.cors),
        created_at: now,
        last_updated: now,
      })
      .onConflict((oc) => oc.column('route_id').doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** Returns the route as it now is, or undefined when it does not exist. */
  async update(routeId: string, changes: RouteChanges, now: Date): Promise<RouteRow | undefined> {
    const updated = await this.db
      .updateTable('routes')
      .set({
        ...(changes.match !== undefined && matchColumns(changes.match)),
        ...(changes.upstreamUrl !== undefined && { upstream_url: changes.upstreamUrl }),
        ...(changes.stripPrefix !== undefined && { strip_prefix: changes.stripPrefix }),
        ...(changes.timeoutMs !== undefined && { timeout_ms: changes.timeoutMs }),
        ...(changes.cors !== undefined && { cors: corsColumn(changes.cors) }),
        last_updated: now,
      })
      .where('route_id', '=', routeId)
      .executeTakeFirst();
    return updated.numUpdatedRows > 0n ? this.get(routeId) : undefined;
  }

  /** Returns false when there was no such route. */
  async delete(routeId: string): Promise<boolean> {
    const deleted = await this.db.deleteFrom('routes').where('route_id', '=', routeId).executeTakeFirst();
    return deleted.numDeletedRows > 0n;
  }
}
