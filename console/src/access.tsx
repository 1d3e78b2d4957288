/**
 * What the signed-in token may do, asked once of the API (`GET /tollgate/whoami`, which any valid
 * token may call): every control that needs a scope the token lacks is shown disabled, naming that
 * scope, before anyone clicks it. The API still decides: a change of the token's scopes since sign-in
 * shows as the API's own refusal.
 */
import { createContext, type ButtonHTMLAttributes, type ComponentChildren } from 'preact';
import { useContext } from 'preact/hooks';
import type { AdminScope, Whoami } from './types';

export interface Access {
  /** The token, once the API has answered; undefined meanwhile (every control is offered until then). */
  readonly whoami: Whoami | undefined;
  /** Whether the token lacks `scope` (known only once the API has answered). */
  lacks(scope: AdminScope): boolean;
}

export function accessOf(whoami: Whoami | undefined): Access {
  return { whoami, lacks: (scope) => whoami !== undefined && !whoami.scopes.includes(scope) };
}

export const AccessContext = createContext<Access>(accessOf(undefined));

export const useAccess = (): Access => useContext(AccessContext);

/** "(needs keys:write)": said inside the control itself, so its name tells why it is unavailable. */
function Needs({ scope }: { scope: AdminScope }) {
  return <span class="needs-scope"> (needs {scope})</span>;
}

type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & { readonly scope: AdminScope };

/** A button that needs `scope`: disabled, saying so (in its name too), for a token without it. */
export function ScopedButton({ scope, children, disabled, ...props }: ButtonProps) {
  const missing = useAccess().lacks(scope);
  const label = props['aria-label'];
  return (
    <button
      type="button"
      {...props}
      aria-label={missing && typeof label === 'string' ? `${label} (needs ${scope})` : label}
      disabled={Boolean(disabled) || missing}
    >
      {children}
      {missing && <Needs scope={scope} />}
    </button>
  );
}

/**
 * A link to a page that changes something (a form): for a token without `scope`, a disabled button in
 * its place, saying so. `class`: the link's (a button's look by default); `label`: its accessible name.
 */
export function ScopedLink({
  scope,
  href,
  class: className = 'button',
  label,
  children,
}: {
  scope: AdminScope;
  href: string;
  class?: string;
  label?: string;
  children: ComponentChildren;
}) {
  if (!useAccess().lacks(scope))
    return (
      <a class={className || undefined} href={href} aria-label={label}>
        {children}
      </a>
    );
  return (
    <button
      type="button"
      class={className === 'button' ? undefined : 'link'}
      aria-label={label && `${label} (needs ${scope})`}
      disabled
    >
      {children}
      <Needs scope={scope} />
    </button>
  );
}

/** In place of what a token without `scope` cannot read: which scope it lacks. */
export function NeedsScope({ scope, what }: { scope: AdminScope; what: string }) {
  return (
    <p class="needs-scope-note">
      {what} needs the scope <span class="mono">{scope}</span>, which this token lacks.
    </p>
  );
}
