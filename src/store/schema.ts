import type { ColumnType, Generated } from 'kysely';

/** Table types of sql/, the minimal subset the repositories use. */
export interface RateLimitPlanTable {
  rate_limit_id: string;
  description: string;
  limit: ColumnType<string, number, number>;
  period: string;
  /** The limits as JSON, or null for one fixed limit named after its period (sql/013). */
  limits: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  last_updated: ColumnType<Date, Date, Date>;
}

export interface ApiKeyTable {
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
}

export interface UsageEndpointTable {
  key_id: string;
  endpoint: string;
  requests: ColumnType<string, number, number>;
  successful: ColumnType<string, number, number>;
  failed: ColumnType<string, number, number>;
  total_duration_ms: number;
}

export interface UsageCustomerTable {
  key_id: string;
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
  granularity: string;
  start: Date;
  requests: ColumnType<string, number, number>;
  successful: ColumnType<string, number, number>;
  failed: ColumnType<string, number, number>;
  rate_limited: ColumnType<string, number, number>;
  total_duration_ms: number;
}

export interface UsageEndpointBucketTable extends UsageBucketTable {
  endpoint: string;
}

export interface UsageCustomerBucketTable extends UsageBucketTable {
  customer_id: string;
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
  actor_type: 'root' | 'token';
  actor_id: string | null;
  actor_name: string | null;
  action: string;
  target_type: string;
  target_id: string;
  request_id: string;
  client_address: string;
  before_state: string | null;
  after_state: string | null;
}

export interface Database {
  rate_limit_plans: RateLimitPlanTable;
  api_keys: ApiKeyTable;
  usage_endpoints: UsageEndpointTable;
  usage_customers: UsageCustomerTable;
  usage_batches: UsageBatchTable;
  usage_buckets: UsageBucketTable;
  usage_endpoint_buckets: UsageEndpointBucketTable;
  usage_customer_buckets: UsageCustomerBucketTable;
  admin_tokens: AdminTokenTable;
  audit_log: AuditLogTable;
}
