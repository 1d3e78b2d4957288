/**
 * The pages the portal's server answers itself, when a sign-in fails (a used or expired link, too many
 * failed links, the OpenID Provider refusing or silent, no consumer matching the claim): the portal's
 * own look, with the team's title, logo, accent colour and support link, saying what happened and what
 * to do. No script: the portal's stylesheet (the built pages', `PageAssets`) and one inline rule for
 * the accent colour, allowed by its hash in the CSP and nothing else. Every text is escaped.
 */
import { createHash } from 'node:crypto';
import type { Response } from 'express';
import type { ManagementContext } from '../management/context.js';
import { portalPaths } from '../management/resources/developer-portal/portal-origin.js';
import { brandingOf } from './api/branding.js';
import { serverPageHeaders, type PageAssets } from './pages/portal-pages.js';

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

const HEX_COLOR = /^#[0-9a-f]{6}$/i;

interface FailurePage {
  readonly status: number;
  readonly title: string;
  readonly happened: string;
  readonly todo: string;
  /** What to do instead when the portal offers "Sign in with …". */
  readonly todoWithProvider?: string;
}

/** What can go wrong signing in, each with its status, what happened and what to do about it. */
const FAILURES = {
  link_not_working: {
    status: 400,
    title: 'This sign-in link does not work',
    happened:
      'It was used already, it expired (a link works once, for 10 minutes), or its session was ended.',
    todo: 'Ask the team that sent it for a new link.',
    todoWithProvider: 'Ask the team that sent it for a new link, or sign in with your account.',
  },
  too_many_attempts: {
    status: 429,
    title: 'Too many attempts',
    happened: 'Too many sign-in links failed from your network in the last minute.',
    todo: 'Wait a minute, then open your link again.',
  },
  oidc_expired: {
    status: 400,
    title: 'Sign-in expired',
    happened: 'The sign-in took longer than 10 minutes, or it was not started on this portal.',
    todo: 'Start again from the sign-in page.',
  },
  oidc_failed: {
    status: 400,
    title: 'Sign-in failed',
    happened: 'Your identity provider did not confirm the sign-in.',
    todo: 'Start again from the sign-in page. If it fails again, contact support.',
  },
  provider_down: {
    status: 502,
    title: 'Sign-in unavailable',
    happened: 'Your identity provider did not answer.',
    todo: 'Try again in a few minutes.',
  },
  no_account: {
    status: 403,
    title: 'No account matches',
    happened: 'You signed in, but no account of this API belongs to you.',
    todo: 'Ask the team that gave you access to add you, then sign in again.',
  },
} as const satisfies Readonly<Record<string, FailurePage>>;

export type SignInFailure = keyof typeof FAILURES;

/** Sends the page of `failure`, branded as the portal's settings say; `headers` are set with it. */
export type SendFailurePage = (
  res: Response,
  failure: SignInFailure,
  headers?: Readonly<Record<string, string>>,
) => Promise<void>;

export function failurePages(ctx: ManagementContext, assets: PageAssets | undefined): SendFailurePage {
  const home = portalPaths(ctx.prefix).home;
  return async (res, failure, headers = {}) => {
    const brand = brandingOf(await ctx.portal.get(), ctx.prefix);
    const page: FailurePage = FAILURES[failure];
    const { status, title, happened } = page;
    const todo = (brand.oidc !== null && page.todoWithProvider) || page.todo;
    const accent =
      brand.accentColor !== null && HEX_COLOR.test(brand.accentColor)
        ? `:root{--accent:${brand.accentColor}}`
        : '';
    const styleHash = createHash('sha256').update(accent).digest('base64');
    const support =
      brand.supportUrl === null
        ? ''
        : `<p><a href="${escapeHtml(brand.supportUrl)}" rel="noreferrer">Contact support</a></p>`;
    const logo = brand.logoUrl === null ? '' : `<img src="${escapeHtml(brand.logoUrl)}" alt="" class="logo">`;
    const head = [
      '<meta charset="utf-8">',
      '<meta name="viewport" content="width=device-width, initial-scale=1">',
      '<meta name="referrer" content="no-referrer">',
      `<title>${escapeHtml(title)} · ${escapeHtml(brand.title)}</title>`,
      assets ? `<link rel="icon" href="${escapeHtml(assets.icon)}" type="image/svg+xml">` : '',
      assets ? `<link rel="stylesheet" href="${escapeHtml(assets.stylesheet)}">` : '',
      `<style>${accent}</style>`,
    ].join('');
    const body = [
      `<header class="top"><span class="brand">${logo}${escapeHtml(brand.title)}</span></header>`,
      '<main id="main" class="sign-in">',
      `<h1>${escapeHtml(title)}</h1>`,
      `<p>${escapeHtml(happened)}</p>`,
      `<p>${escapeHtml(todo)}</p>`,
      `<p><a class="button" href="${escapeHtml(home)}">Back to the sign-in page</a></p>`,
      support,
      '</main>',
    ].join('');
    res
      .status(status)
      .set(serverPageHeaders(styleHash))
      .set(headers)
      .type('text/html; charset=utf-8')
      .send(`<!doctype html><html lang="en"><head>${head}</head><body>${body}</body></html>`);
  };
}
