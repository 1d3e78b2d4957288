import { portalPaths } from '../../management/resources/developer-portal/portal-origin.js';
import type { StoredPortalSettings } from '../../store/portal-settings-repository.js';
import type { Branding } from './schemas.js';

/** What every portal page shows before and after sign-in: the team's brand and the ways in. */
export function brandingOf({ settings, reference }: StoredPortalSettings, prefix: string): Branding {
  const given = settings.apiReference;
  return {
    title: settings.title,
    logoUrl: settings.logoUrl,
    accentColor: settings.accentColor,
    supportUrl: settings.supportUrl,
    oidc:
      settings.oidc === null
        ? null
        : { issuer: settings.oidc.issuer, signInPath: portalPaths(prefix).oidcStart },
    apiReference: given !== null && ('document' in given || reference.document !== null),
  };
}
