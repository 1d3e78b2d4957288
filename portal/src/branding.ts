/**
 * The team's brand on every portal page: its title (the tab's too), logo and accent colour. The colour
 * is set as the `--accent` custom property through the CSSOM, which the portal's CSP allows (an inline
 * style attribute it would refuse); a value that is not a hex colour is ignored.
 */
import type { Branding } from './portal-types';

const HEX_COLOR = /^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i;

export function applyBranding(branding: Branding): void {
  const root = document.documentElement.style;
  if (branding.accentColor && HEX_COLOR.test(branding.accentColor))
    root.setProperty('--accent', branding.accentColor);
  else root.removeProperty('--accent');
}
