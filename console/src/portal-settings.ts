/**
 * The developer portal's settings as the console edits them (docs/guides/portal.md): a draft of plain
 * strings, and the PATCH body it makes, or what is wrong with it, field by field, before the API is
 * called. The client secret is write-only: the draft starts empty and an empty one keeps the stored one.
 */
import { parseJsonObject } from './format';
import type { PortalSettings, UpdatePortalSettings } from './types';

export type ReferenceKind = 'none' | 'url' | 'document';

export interface SettingsDraft {
  readonly enabled: boolean;
  readonly title: string;
  readonly logoUrl: string;
  readonly accentColor: string;
  readonly supportUrl: string;
  readonly maxKeysPerConsumer: string;
  readonly publicPlans: readonly string[];
  readonly referenceKind: ReferenceKind;
  readonly referenceUrl: string;
  readonly referenceDocument: string;
  readonly oidc: boolean;
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly claim: string;
  readonly match: string;
}

export type SettingsField = keyof SettingsDraft;
export type Problems = Partial<Record<SettingsField, string>>;

export const HEX_COLOR = /^#[0-9a-f]{6}$/i;
const WEB_URL = /^https?:\/\/\S+$/;
const OIDC_MATCH = /^(externalId|metadata\.[A-Za-z0-9_-]{1,64})$/;
export const MAX_KEYS = 100;

export function draftOf(settings: PortalSettings): SettingsDraft {
  const reference = settings.apiReference;
  return {
    enabled: settings.enabled,
    title: settings.title,
    logoUrl: settings.logoUrl ?? '',
    accentColor: settings.accentColor ?? '',
    supportUrl: settings.supportUrl ?? '',
    maxKeysPerConsumer: String(settings.maxKeysPerConsumer),
    publicPlans: settings.publicPlans,
    referenceKind: reference === null ? 'none' : 'url' in reference ? 'url' : 'document',
    referenceUrl: reference && 'url' in reference ? reference.url : '',
    referenceDocument:
      reference && 'document' in reference ? JSON.stringify(reference.document, null, 2) : '',
    oidc: settings.oidc !== null,
    issuer: settings.oidc?.issuer ?? '',
    clientId: settings.oidc?.clientId ?? '',
    clientSecret: '',
    claim: settings.oidc?.claim ?? '',
    match: settings.oidc?.match ?? 'externalId',
  };
}

const urlProblem = (value: string, what: string) =>
  value && !WEB_URL.test(value) ? `${what} must be a web address starting with https://` : undefined;

function referenceOf(draft: SettingsDraft, problems: Problems): UpdatePortalSettings['apiReference'] {
  if (draft.referenceKind === 'none') return null;
  if (draft.referenceKind === 'url') {
    const url = draft.referenceUrl.trim();
    problems.referenceUrl = url
      ? urlProblem(url, 'The API reference’s address')
      : 'Give the address of your OpenAPI document, or choose “None”.';
    return { url };
  }
  const document = draft.referenceDocument.trim() ? parseJsonObject(draft.referenceDocument) : undefined;
  if (document) return { document };
  problems.referenceDocument = 'Paste the OpenAPI document as a JSON object ({ "openapi": … }).';
  return null;
}

function oidcOf(
  draft: SettingsDraft,
  secretStored: boolean,
  problems: Problems,
): UpdatePortalSettings['oidc'] {
  if (!draft.oidc) return null;
  const issuer = draft.issuer.trim();
  const clientId = draft.clientId.trim();
  const claim = draft.claim.trim();
  const match = draft.match.trim();
  problems.issuer = issuer ? urlProblem(issuer, 'The issuer') : 'Give the issuer’s address (https://…).';
  if (!clientId) problems.clientId = 'Give the client id your provider issued.';
  if (!claim) problems.claim = 'Name the ID token claim that says whose account it is (e.g. org_id).';
  if (!OIDC_MATCH.test(match))
    problems.match = 'Compare with “externalId” or a metadata field, “metadata.<field>”.';
  if (!draft.clientSecret && !secretStored)
    problems.clientSecret = 'Give the client secret your provider issued (it is stored once, never shown).';
  return {
    issuer,
    clientId,
    claim,
    match,
    ...(draft.clientSecret ? { clientSecret: draft.clientSecret } : {}),
  };
}

/**
 * The body saving `draft` over `saved`: every plain field, and the API reference and OIDC only when
 * they changed (saving the same reference address again would fetch it again).
 */
export function settingsBody(
  draft: SettingsDraft,
  saved: PortalSettings,
): { body: UpdatePortalSettings; problems: Problems } {
  const problems: Problems = {};
  const title = draft.title.trim();
  if (!title) problems.title = 'Give the portal a title: every page shows it.';
  else if (title.length > 100) problems.title = 'The title is at most 100 characters.';
  problems.logoUrl = urlProblem(draft.logoUrl.trim(), 'The logo’s address');
  problems.supportUrl = urlProblem(draft.supportUrl.trim(), 'The support address');
  if (draft.accentColor && !HEX_COLOR.test(draft.accentColor))
    problems.accentColor = 'Write the colour as # and six hex digits, e.g. #0f766e.';
  const maxKeys = Number(draft.maxKeysPerConsumer);
  if (!/^\d+$/.test(draft.maxKeysPerConsumer.trim()) || maxKeys > MAX_KEYS)
    problems.maxKeysPerConsumer = `A whole number from 0 to ${MAX_KEYS}.`;
  const before = draftOf(saved);
  const referenceChanged =
    draft.referenceKind !== before.referenceKind ||
    draft.referenceUrl !== before.referenceUrl ||
    draft.referenceDocument !== before.referenceDocument;
  const oidcChanged = (['oidc', 'issuer', 'clientId', 'clientSecret', 'claim', 'match'] as const).some(
    (field) => draft[field] !== before[field],
  );
  const apiReference = referenceOf(draft, problems);
  const oidc = oidcOf(draft, saved.oidc?.clientSecretSet ?? false, problems);
  const body: UpdatePortalSettings = {
    enabled: draft.enabled,
    title,
    logoUrl: draft.logoUrl.trim() || null,
    accentColor: draft.accentColor || null,
    supportUrl: draft.supportUrl.trim() || null,
    maxKeysPerConsumer: maxKeys,
    publicPlans: [...draft.publicPlans],
    ...(referenceChanged ? { apiReference } : {}),
    ...(oidcChanged ? { oidc } : {}),
  };
  for (const field of Object.keys(problems) as SettingsField[])
    if (problems[field] === undefined) delete problems[field];
  return { body, problems };
}

/** WCAG's contrast ratio of white text on `hex` (#rrggbb): the portal's buttons are white on the accent. */
export function contrastWithWhite(hex: string): number {
  const channel = (at: number) => {
    const c = parseInt(hex.slice(at, at + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return 1.05 / (luminance + 0.05);
}
