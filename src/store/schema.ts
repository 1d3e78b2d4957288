import type { ColumnType, Generated } from 'kysely';
import type { LeakColumn, LeakTables } from './leak-tables.js';
import type { RateLimitPlanTable } from './plan-table.js';
/** Table types of sql/, the minimal subset the repositories use. */
export interface ApiKeyTable extends CreditTableColumns, LeakColumn {
  seq: ColumnType<string, never, never>;
  id: string;
  name: string;
  secret_hash: Uint8Array;
  secret_ciphertext: Uint8Array;
  rate_limit_id: string | null;
  created_at: ColumnType<Date, Date, never>;
  last_updated: ColumnType<Date, Date, Date>;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  expires_at: Date | null;
  external_id: string | null;
  /** The caller's JSON object as serialised. */
  metadata: ColumnType<string, string | undefined, string>;
  last_used_at: ColumnType<Date | null, never, Date>;
  previous_secret_hash: Uint8Array | null;
  previous_secret_expires_at: Date | null;
  /** The previous secret sealed, for the tokens it signed (sql/090); null: none, or rolled before it. */
  previous_secret_ciphertext: ColumnType<Uint8Array | null, Uint8Array | null | undefined, Uint8Array | null>;
  consumer_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON array of route ids, or null: every route (sql/060). */
  allowed_route_ids: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON arrays of origins and of addresses or CIDR blocks, or null: any (sql/082). */
  allowed_origins: ColumnType<string | null, string | null | undefined, string | null>;
  allowed_addresses: ColumnType<string | null, string | null | undefined, string | null>;
  disabled_in_portal: ColumnType<boolean, boolean | undefined, boolean>; // by its portal user (sql/125)
}

/** A key's or consumer's balance (sql/061, store/credit-columns.ts); Postgres' bigints arrive as text. */
export interface CreditTableColumns {
  credits_epoch: ColumnType<string | number, number | undefined, number>;
  credits_granted: ColumnType<string | number | null, number | null | undefined, number | null>;
  credits_window: ColumnType<string | number, number | undefined, number>;
  credits_spent: ColumnType<string | number, number | undefined, number>;
  credits_refill: ColumnType<string | null, string | null | undefined, string | null>;
  credits_low_at: ColumnType<string | number | null, number | null | undefined, number | null>;
}

/** Whom a billing export bills a deleted key's usage to, as the key was when deleted (sql/072). */
export interface DeletedKeyTable {
  id: string;
  external_id: string | null;
  metadata: string;
  deleted_at: Date;
}

export interface ConsumerTable extends CreditTableColumns {
  id: string;
  name: string;
  external_id: string | null;
  /** The caller's JSON object as serialised. */
  metadata: ColumnType<string, string | undefined, string>;
  rate_limit_id: string | null;
  created_at: ColumnType<Date, Date, never>;
  last_updated: ColumnType<Date, Date, Date>;
}

/** A counter of sql/020: read as the driver gives it, written as a number, its default 0 when left out. */
type Counter = ColumnType<string, number | undefined, number>;
/** The consumer a usage row is filed under ('' for none: sql/020), '' when left out. */
type FiledUnder = ColumnType<string, string | undefined, string>;

export interface UsageEndpointTable {
  key_id: string;
  consumer_id: FiledUnder;
  endpoint: string;
  requests: ColumnType<string, number, number>;
  successful: ColumnType<string, number, number>;
  failed: ColumnType<string, number, number>;
  total_duration_ms: number;
  cost: Counter;
  /** sql/142: requests whose response reported no units readable (charged their reservation). */
  unsettled: Counter;
}

export interface UsageCustomerTable {
  key_id: string;
  consumer_id: FiledUnder;
  customer_id: string;
  requests: ColumnType<string, number, number>;
  successful: ColumnType<string, number, number>;
  failed: ColumnType<string, number, number>;
}

export interface UsageBatchTable {
  batch_id: string;
  applied_at: Generated<Date>;
}

export interface UsageBucketTable {
  key_id: string;
  consumer_id: FiledUnder;
  granularity: string;
  start: Date;
  requests: ColumnType<string, number, number>;
  successful: ColumnType<string, number, number>;
  failed: ColumnType<string, number, number>;
  rate_limited: ColumnType<string, number, number>;
  total_duration_ms: number;
  cost: Counter;
  unsettled: Counter; // sql/142
  status_2xx: Counter;
  status_3xx: Counter;
  status_4xx: Counter;
  status_5xx: Counter;
  credits_exhausted: Counter;
  concurrency_limited: Counter; // sql/095
  disabled: Counter;
  expired: Counter;
  route_not_allowed: Counter;
  /** sql/082 */
  origin_not_allowed: Counter;
  address_not_allowed: Counter;
  backend_error: Counter;
  backend_unreachable: Counter;
  /** The latency histogram: a JSON object of bin → requests (src/usage/latency-histogram.ts). */
  latency: ColumnType<string, string | undefined, string>;
}

export interface UsageEndpointBucketTable extends UsageBucketTable {
  endpoint: string;
}

export interface UsageCustomerBucketTable extends UsageBucketTable {
  customer_id: string;
}

export interface UsageRouteBucketTable extends UsageBucketTable {
  /** '' for the catch-all or no route (`routeId: null` in the API). */
  route_id: string;
}

export interface AdminTokenTable {
  id: string;
  name: string;
  scopes: string;
  token_hash: Uint8Array;
  expires_at: Date | null;
  created_at: Date;
}

export interface AuditLogTable {
  seq: ColumnType<string, never, never>;
  id: string;
  time: Date;
  actor_type: 'root' | 'token' | 'system' | 'portal';
  actor_id: string | null;
  actor_name: string | null;
  /** sql/100: a portal user's consumer. */
  actor_consumer_id: ColumnType<string | null, string | null | undefined, never>;
  action: string;
  target_type: string;
  target_id: string;
  request_id: string;
  client_address: string;
  before_state: string | null;
  after_state: string | null;
}

/** The route table (sql/030, sql/080). */
export interface RouteTable {
  route_id: string;
  host: string | null;
  path_prefix: string;
  /** Space-separated; null: every method. */
  methods: string | null;
  upstream_url: string;
  strip_prefix: ColumnType<boolean, boolean | undefined, boolean>;
  /** sql/080: `path_prefix` compared without regard to case. */
  case_insensitive: ColumnType<boolean, boolean | undefined, boolean>;
  /** sql/082: the route's CORS policy as JSON; null: none. */
  cors: ColumnType<string | null, string | null | undefined, string | null>;
  timeout_ms: number | null;
  created_at: ColumnType<Date, Date, never>;
  last_updated: ColumnType<Date, Date, Date>;
}

/** sql/050: billing exports and their ledger (src/billing/). */
export interface BillingExportTable {
  id: string;
  type: string;
  url: string;
  credential_ciphertext: Uint8Array | null;
  event_name: string;
  granularity: string;
  subject: string;
  customer_field: string | null;
  created_at: ColumnType<Date, Date, never>;
  last_updated: ColumnType<Date, Date, Date>;
  lease_holder: ColumnType<string | null, never, string | null>;
  lease_taken_at: ColumnType<Date | null, never, Date | null>;
  delivery_failures: ColumnType<number, never, number>;
  deliver_after: ColumnType<Date | null, never, Date | null>;
  stream_url: ColumnType<string | null, string | null | undefined, string | null>;
  retry_after: ColumnType<Date | null, never, Date | null>;
}

export interface BillingExportBucketTable {
  export_id: string;
  subject_id: string;
  bucket_start: Date;
  units: ColumnType<number, number, number>;
  revision: number;
}

export interface BillingExportSendTable {
  idempotency_id: string;
  export_id: string;
  subject_id: string;
  bucket_start: Date;
  revision: number;
  units: ColumnType<number, number, never>;
  customer: string;
  created_at: ColumnType<Date, Date, never>;
  delivered_at: ColumnType<Date | null, never, Date>;
  attempts: ColumnType<number, never, number>;
  next_attempt_at: Date;
}

export interface BillingExportRunTable {
  seq: ColumnType<string, never, never>;
  id: string;
  export_id: string;
  started_by: string;
  started_at: ColumnType<Date, Date, never>;
  finished_at: ColumnType<Date | null, never, Date>;
  closed_before: ColumnType<Date, Date, never>;
  planned: ColumnType<number, never, number>;
  delivered: ColumnType<number, never, number>;
  failed: ColumnType<number, never, number>;
  /** JSON array of subject ids. */
  skipped_subjects: ColumnType<string, never, string>;
  error: ColumnType<string | null, never, string | null>;
}

export interface BillingExportAttemptTable {
  run_id: string;
  idempotency_id: string;
  at: Date;
  status: number | null;
  error: string | null;
}

export interface OutboxEventTable {
  seq: ColumnType<string, never, never>;
  id: string;
  type: string;
  occurred_at: Date;
  /** The delivery body as sent. */
  payload: string;
  fanned_out: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface OutboxOnceTable {
  key: string;
  until: Date;
}

export interface WebhookTable {
  id: string;
  url: string;
  /** JSON array of event types. */
  events: string;
  description: string;
  enabled: boolean;
  secret_ciphertext: Uint8Array;
  created_at: ColumnType<Date, Date, never>;
  last_updated: Date;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

export interface WebhookDeliveryTable {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  created_at: ColumnType<Date, Date, never>;
  state: 'pending' | 'delivered' | 'failed';
  attempts: ColumnType<number, number | undefined, number>;
  first_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
}

export interface LeaseTable {
  name: string;
  holder: string;
  expires_at: Date;
}

/** sql/086: one failed request (src/usage/failure-log.ts); bigints arrive as text from Postgres. */
export interface FailureLogTable {
  seq: ColumnType<string | number, never, never>;
  at_ms: ColumnType<string | number, number, number>;
  request_id: string;
  key_id: string;
  consumer_id: FiledUnder;
  method: string;
  path: string;
  route_id: string | null;
  status: number;
  code: string;
  /** The refusing limit as JSON, for a 429 of a limit. */
  limit_rule: string | null;
  client_address: string | null;
  customer_id: string | null;
  duration_ms: number;
}

/** sql/086: failures past the per-key-per-minute bound, counted. */
export interface FailureLeftOutTable {
  key_id: string;
  consumer_id: FiledUnder;
  minute_ms: ColumnType<string | number, number, number>;
  code: string;
  left_out: ColumnType<string | number, number, number>;
}

/** How many entries of a key's minute were offered to the failure log, kept or not (the bound's count). */
export interface FailureOfferedTable {
  key_id: string;
  minute_ms: ColumnType<string | number, number, number>;
  offered: ColumnType<string | number, number, number>;
}

/** sql/100: the portal's one row of settings. */
export interface PortalSettingsTable {
  id: number;
  /** The settings as the API shows them, JSON text (the OIDC client secret is not in it). */
  settings: string;
  oidc_secret_ciphertext: Uint8Array | null;
  reference_document: string | null;
  reference_fetched_at: Date | null;
  reference_error: string | null;
  last_updated: Date;
}

/** sql/100: a portal session; its sign-in code and token only as SHA-256 hashes. */
export interface PortalSessionTable {
  id: string;
  consumer_id: string;
  user_id: string;
  user_email: string | null;
  user_name: string | null;
  ttl_seconds: number;
  code_hash: Uint8Array | null;
  code_expires_at: Date;
  token_hash: Uint8Array | null;
  created_at: ColumnType<Date, Date, never>;
  expires_at: Date;
}

/** sql/150: a single node's request still in flight after a moment (src/reservations/in-flight.ts). */
export interface InFlightRequestTable {
  id: string;
  holder: string;
  body: string;
}

export interface Database extends LeakTables {
  portal_settings: PortalSettingsTable;
  portal_sessions: PortalSessionTable;
  failure_log: FailureLogTable;
  failure_left_out: FailureLeftOutTable;
  failure_offered: FailureOfferedTable;
  rate_limit_plans: RateLimitPlanTable;
  api_keys: ApiKeyTable;
  deleted_keys: DeletedKeyTable;
  consumers: ConsumerTable;
  usage_endpoints: UsageEndpointTable;
  usage_customers: UsageCustomerTable;
  usage_batches: UsageBatchTable;
  usage_buckets: UsageBucketTable;
  usage_endpoint_buckets: UsageEndpointBucketTable;
  usage_customer_buckets: UsageCustomerBucketTable;
  usage_route_buckets: UsageRouteBucketTable;
  admin_tokens: AdminTokenTable;
  audit_log: AuditLogTable;
  routes: RouteTable;
  billing_exports: BillingExportTable;
  billing_export_buckets: BillingExportBucketTable;
  billing_export_sends: BillingExportSendTable;
  billing_export_runs: BillingExportRunTable;
  billing_export_attempts: BillingExportAttemptTable;
  outbox_events: OutboxEventTable;
  outbox_once: OutboxOnceTable;
  webhooks: WebhookTable;
  webhook_deliveries: WebhookDeliveryTable;
  leases: LeaseTable;
  in_flight_requests: InFlightRequestTable;
}
