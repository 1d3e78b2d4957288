/** Table types of sql/135: keys reported leaked, and the secret scanning reports handled lately. */
import type { ColumnType } from 'kysely';

export interface LeakColumn {
  /** The key's latest leak report as JSON text {at, source, url, action}; null: never reported. */
  leak: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SecretScanningReportTable {
  /** SHA-256 of the signed body as received. */
  body_hash: Uint8Array;
  /** The answer given, as sent. */
  answer: string;
  received_at: Date;
}

export interface LeakTables {
  secret_scanning_reports: SecretScanningReportTable;
}
