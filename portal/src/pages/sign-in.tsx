/**
 * The page for a visitor without a session. A sign-in link the team sent signs in on the server, which
 * then opens the portal (a used or expired link gets the server's own page saying so); here, the team's
 * "Sign in with …" when it set an OpenID Connect provider, and why the last session ended, if it did.
 */
import { PageTitle } from '../../../console/src/components/page-title';
import type { Branding } from '../portal-types';

/** Why there is no session now, when the page knows. */
export type SignedOutReason = 'signed_out' | 'ended';

const REASONS: Readonly<Record<SignedOutReason, { title: string; text: string }>> = {
  signed_out: { title: 'You signed out', text: 'Use a new sign-in link to come back.' },
  ended: {
    title: 'Your session ended',
    text: 'It expired or was ended by the team. Sign in again to continue.',
  },
};

/** "Sign in with accounts.example.com": the provider named by its issuer's host. */
const providerName = (issuer: string) => {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
};

export function SignInPage({
  branding,
  reason,
}: {
  branding: Branding;
  reason: SignedOutReason | undefined;
}) {
  const said = reason === undefined ? undefined : REASONS[reason];
  return (
    <main id="main" class="sign-in">
      {branding.logoUrl && <img src={branding.logoUrl} alt="" class="logo" />}
      <PageTitle title={said?.title ?? `Sign in to ${branding.title}`} site={branding.title} />
      {said && <p role="status">{said.text}</p>}
      <p>
        Open the sign-in link you were sent{branding.oidc ? ', or sign in with your account' : ''}. A link
        works once, for ten minutes.
      </p>
      {branding.oidc && (
        <p>
          {/* A navigation, not a fetch: the provider's page takes over, then sends the browser back. */}
          <a class="button" href={branding.oidc.signInPath}>
            Sign in with {providerName(branding.oidc.issuer)}
          </a>
        </p>
      )}
      {branding.supportUrl && (
        <p>
          <a href={branding.supportUrl} rel="noreferrer">
            Contact support
          </a>
        </p>
      )}
    </main>
  );
}
