/**
 * The developer portal's settings: one object the service always holds, so a file declares it as an
 * object and apply only ever updates it. Fields the file leaves out are left as they are; with --prune
 * they return to a fresh service's defaults (a file without `portal` then resets the portal, turning it
 * off). The OIDC client secret is write-only: sent when OIDC is first set, and again only with
 * --rotate-credentials; `export` writes it as a `${ENV_VAR}` reference.
 */
import type { components } from '../../generated/management-api.js';
import { answerOf } from '../api-call.js';
import type { PortalItem } from '../config-file.js';
import { secretOf } from '../env-references.js';
import type { Kind } from '../kind.js';
import { changedSettings } from '../settings.js';

type PortalSettings = components['schemas']['PortalSettings'];
type Oidc = NonNullable<PortalItem['oidc']>;

/** The variable `export` names for the OIDC client secret. */
export const CLIENT_SECRET_VARIABLE = 'PORTAL_OIDC_CLIENT_SECRET';

/** What a service whose portal was never set holds (docs/guides/portal.md): what --prune returns to. */
const DEFAULTS: Required<PortalItem> = {
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

/** OIDC as compared: what the service derives (`redirectUri`, `clientSecretSet`) and the secret left out. */
const oidcSettings = (oidc: Oidc | PortalSettings['oidc']) =>
  oidc && { issuer: oidc.issuer, clientId: oidc.clientId, claim: oidc.claim, match: oidc.match };

/** The settings as a file declares them: the API reference without what its last fetch recorded. */
function declaredSettings(settings: PortalSettings) {
  const { lastUpdated: _lastUpdated, apiReference, oidc, ...plain } = settings;
  return {
    ...plain,
    apiReference: apiReference && ('url' in apiReference ? { url: apiReference.url } : apiReference),
    oidc: oidcSettings(oidc),
  };
}

const withSecret = (patch: Record<string, unknown>, env: Record<string, string | undefined>) => {
  const oidc = patch.oidc as Oidc | null | undefined;
  return typeof oidc?.clientSecret === 'string'
    ? { ...patch, oidc: { ...oidc, clientSecret: secretOf(oidc.clientSecret, env).value! } }
    : patch;
};

export const portal: Kind<PortalItem, PortalSettings> = {
  section: 'portal',
  noun: 'portal settings',
  singleton: true,
  list: async (client) => [await answerOf(client.GET('/tollgate/portal/settings'))],
  identityOfItem: () => 'settings',
  identityOf: () => 'settings',
  differences(item, settings, options) {
    const wanted = options.prune ? { ...DEFAULTS, ...item } : item;
    const { oidc, ...plain } = wanted;
    const changed = changedSettings(
      { ...plain, ...(oidc !== undefined && { oidc: oidcSettings(oidc) }) },
      declaredSettings(settings),
    );
    const sendSecret = oidc && (settings.oidc?.clientSecretSet !== true || options.rotateCredentials);
    return {
      ...changed,
      ...(('oidc' in changed || sendSecret) && { oidc: sendSecret ? oidc : changed.oidc }),
    };
  },
  secretsOf: (item, patch) => {
    const oidc = patch?.oidc as Oidc | null | undefined;
    return typeof oidc?.clientSecret === 'string' ? [oidc.clientSecret] : [];
  },
  secretField: ['oidc', 'clientSecret'],
  async update(client, _settings, patch, env) {
    await answerOf(client.PATCH('/tollgate/portal/settings', { body: withSecret(patch, env) }));
  },
  exported(settings) {
    const { oidc, ...declared } = declaredSettings(settings);
    return {
      ...declared,
      oidc: oidc && {
        ...oidc,
        ...(settings.oidc?.clientSecretSet && { clientSecret: `\${${CLIENT_SECRET_VARIABLE}}` }),
      },
    };
  },
};
