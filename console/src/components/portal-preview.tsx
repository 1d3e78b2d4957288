/**
 * The portal's brand as its pages show it: the logo beside the title in the top bar, and a button and a
 * link in the accent colour. The colour is set as `--accent` through the CSSOM, as the portal itself
 * sets it (portal/src/branding.ts): the console's CSP refuses inline style attributes, not the CSSOM.
 * The console's CSP loads images from its own origin only, so a logo on the team's site is named in
 * its place (the portal, whose CSP allows https images, shows it).
 */
import { useEffect, useRef } from 'preact/hooks';
import { contrastWithWhite, HEX_COLOR } from '../portal-settings';

/** WCAG AA for text of ordinary size. */
const READABLE_CONTRAST = 4.5;

/**
 * How the preview can show the logo: as an image (on the console's own origin), by the site it lives
 * on (another origin), or not at all (no address yet).
 */
function logoOf(logoUrl: string): { image: boolean; host: string } | undefined {
  if (!/^https?:\/\/\S+$/.test(logoUrl)) return undefined;
  try {
    const url = new URL(logoUrl);
    return { image: url.origin === location.origin, host: url.host };
  } catch {
    return undefined;
  }
}

export function PortalPreview({
  title,
  logoUrl,
  accentColor,
}: {
  title: string;
  logoUrl: string;
  accentColor: string;
}) {
  const frame = useRef<HTMLDivElement>(null);
  const colour = HEX_COLOR.test(accentColor) ? accentColor : undefined;
  useEffect(() => {
    const style = frame.current?.style;
    if (!style) return;
    if (colour) style.setProperty('--accent', colour);
    else style.removeProperty('--accent');
  }, [colour]);
  const logo = logoOf(logoUrl);
  const contrast = colour ? contrastWithWhite(colour) : undefined;
  return (
    <section class="portal-preview" aria-labelledby="portal-preview-title">
      <h2 id="portal-preview-title">Preview</h2>
      <div class="portal-preview-frame" ref={frame} data-testid="portal-preview">
        <div class="portal-preview-bar">
          {logo?.image && <img src={logoUrl} alt="" class="logo" />}
          {logo && !logo.image && <span class="portal-preview-logo">Logo from {logo.host}</span>}
          <span class="portal-preview-title">{title.trim() || 'Untitled portal'}</span>
        </div>
        <div class="portal-preview-body">
          <span class="portal-preview-button">Create a key</span>
          <span class="portal-preview-link">API reference</span>
        </div>
      </div>
      {logo && !logo.image && (
        <p class="help">The console shows images from its own site only; the portal shows the logo itself.</p>
      )}
      {contrast !== undefined && contrast < READABLE_CONTRAST && (
        <p class="help" role="status">
          White text on {colour} has a contrast of {contrast.toFixed(1)}:1; the portal’s buttons are hard to
          read below {READABLE_CONTRAST}:1. A darker colour reads better.
        </p>
      )}
    </section>
  );
}
