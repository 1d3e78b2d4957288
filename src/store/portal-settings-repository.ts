import type { Db } from './db.js';

/** How a portal user's ID token names their consumer. */
export interface OidcSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly claim: string;
  /** `externalId`, or `metadata.<field>`. */
  readonly match: string;
}

/** The developer portal's settings as an administrator sets them (less the OIDC client secret). */
export interface PortalSettings {
  readonly enabled: boolean;
  readonly title: string;
  readonly logoUrl: string | null;
  readonly accentColor: string | null;
  readonly supportUrl: string | null;
  readonly maxKeysPerConsumer: number;
  readonly publicPlans: readonly string[];
  readonly apiReference: { readonly url: string } | { readonly document: Record<string, unknown> } | null;
  readonly oidc: OidcSettings | null;
}

/** What Tollgate last fetched of `apiReference.url`. */
export interface FetchedReference {
  /** The document as JSON text; null: never fetched. */
  readonly document: string | null;
  readonly fetchedAt: Date | null;
  readonly error: string | null;
}

export interface StoredPortalSettings {
  readonly settings: PortalSettings;
  /** The OIDC client secret, sealed like a key's; null: none. */
  readonly oidcSecretCiphertext: Uint8Array | null;
  readonly reference: FetchedReference;
  /** null: never set (the defaults). */
  readonly lastUpdated: Date | null;
}

export const DEFAULT_PORTAL_SETTINGS: PortalSettings = {
  enabled: false,
  title: 'Developer portal',
  logoUrl: null,
  accentColor: null,
  supportUrl: null,
  maxKeysPerConsumer: 5,
  publicPlans: [],
  apiReference: null,
  oidc: null,
};

const NOTHING_FETCHED: FetchedReference = { document: null, fetchedAt: null, error: null };

/** The portal's one row of settings (sql/100). */
export class PortalSettingsRepository {
  constructor(private readonly db: Db) {}

  async get(): Promise<StoredPortalSettings> {
    const row = await this.db
      .selectFrom('portal_settings')
      .selectAll()
      .where('id', '=', 1)
      .executeTakeFirst();
    if (!row)
      return {
        settings: DEFAULT_PORTAL_SETTINGS,
        oidcSecretCiphertext: null,
        reference: NOTHING_FETCHED,
        lastUpdated: null,
      };
    return {
      settings: { ...DEFAULT_PORTAL_SETTINGS, ...(JSON.parse(row.settings) as Partial<PortalSettings>) },
      oidcSecretCiphertext: row.oidc_secret_ciphertext,
      reference: {
        document: row.reference_document,
        fetchedAt: row.reference_fetched_at,
        error: row.reference_error,
      },
      lastUpdated: row.last_updated,
    };
  }

  /** Stores the settings; a changed `apiReference` forgets what was fetched of the previous one. */
  async save(
    settings: PortalSettings,
    oidcSecretCiphertext: Uint8Array | null,
    referenceKept: boolean,
    now: Date,
  ): Promise<void> {
    const values = {
      settings: JSON.stringify(settings),
      oidc_secret_ciphertext: oidcSecretCiphertext,
      last_updated: now,
      ...(!referenceKept && { reference_document: null, reference_fetched_at: null, reference_error: null }),
    };
    await this.db
      .insertInto('portal_settings')
      .values({ id: 1, ...values })
      .onConflict((conflict) => conflict.column('id').doUpdateSet(values))
      .execute();
  }

  /** What a fetch of `apiReference.url` brought: a document (error null), or why none (the last good one kept). */
  async saveFetch(fetched: { document: string; at: Date } | { error: string }): Promise<void> {
    await this.db
      .updateTable('portal_settings')
      .set(
        'error' in fetched
          ? { reference_error: fetched.error }
          : { reference_document: fetched.document, reference_fetched_at: fetched.at, reference_error: null },
      )
      .where('id', '=', 1)
      .execute();
  }
}
