/**
 * "Sign in with …" through the team's OpenID Provider (docs/guides/portal.md): the authorization code
 * flow with PKCE (S256), `state` and `nonce`, by `openid-client` (certified, and it checks the ID
 * token's signature, issuer, audience, expiry and nonce). What the flow must remember between the
 * redirect and the callback travels in a sealed, HttpOnly cookie of the portal's path for 10 minutes,
 * so any replica can take the callback. The ID token's `claim` picks the consumer whose `externalId`
 * (or metadata field) equals it; no match: a page saying so, and no session.
 */
import { randomBytes } from 'node:crypto';
import express from 'express';
import * as oidc from 'openid-client';
import { AppError } from '../errors.js';
import { decryptSecret, encryptSecret, hashSecret } from '../keys/secret.js';
import type { ManagementContext } from '../management/context.js';
import {
  overHttps,
  portalOrigin,
  portalPaths,
} from '../management/resources/developer-portal/portal-origin.js';
import { DEFAULT_SESSION_TTL_SECONDS } from '../management/resources/developer-portal/schemas.js';
import { forwardedFacts, requestIdOf } from '../proxy/forwarding-headers.js';
import type { ConsumerRow } from '../store/consumer-repository.js';
import type { OidcSettings } from '../store/portal-settings-repository.js';
import type { PortalUserRow } from '../store/portal-session-repository.js';
import type { SendFailurePage } from './html-page.js';
import { portalCaller } from './portal-session.js';
import { cookieOf, generateSessionToken, setPortalCookie } from './session-cookie.js';
import { enterPortal } from './sign-in.js';

const FLOW_COOKIE = 'tollgate_portal_oidc';
const FLOW_SECONDS = 600;
const CONSUMER_PAGE = 1_000;

/** What the callback checks the provider's answer against. */
interface Flow {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  /** Epoch ms after which the callback is refused. */
  readonly until: number;
}

/** The provider's configuration from its discovery document; undefined: it did not answer. */
async function configurationOf(
  settings: OidcSettings,
  ctx: ManagementContext,
): Promise<oidc.Configuration | undefined> {
  const { oidcSecretCiphertext } = await ctx.portal.get();
  if (oidcSecretCiphertext === null) throw new AppError('not_found');
  const issuer = new URL(settings.issuer);
  const secret = decryptSecret(oidcSecretCiphertext, ctx.encryptionKeys);
  try {
    // An http: issuer is the administrator's choice (a provider on the same host or network).
    return await oidc.discovery(issuer, settings.clientId, secret, undefined, {
      ...(issuer.protocol === 'http:' && { execute: [oidc.allowInsecureRequests] }),
    });
  } catch (err) {
    ctx.logger.warn({ issuer: settings.issuer, err: (err as Error).message }, 'OpenID Provider unreachable');
    return undefined;
  }
}

/** The consumer whose externalId, or metadata field, equals the claim's value. */
async function consumerOfClaim(
  value: string,
  match: string,
  ctx: ManagementContext,
): Promise<ConsumerRow | undefined> {
  if (match === 'externalId') return (await ctx.consumers.list({ externalId: value }, undefined, 1))[0];
  const field = match.slice('metadata.'.length);
  for (let after: ConsumerRow | undefined; ;) {
    const page = await ctx.consumers.list(
      {},
      after && { at: after.createdAt.getTime(), id: after.id },
      CONSUMER_PAGE,
    );
    const found = page.find((c) => (JSON.parse(c.metadata) as Record<string, unknown>)[field] === value);
    if (found || page.length < CONSUMER_PAGE) return found;
    after = page[page.length - 1];
  }
}

const text = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;

export function oidcSignIn(ctx: ManagementContext, sendFailurePage: SendFailurePage): express.Router {
  const paths = portalPaths(ctx.prefix);
  const router = express.Router({ caseSensitive: true, strict: true });
  const settingsOf = async (): Promise<OidcSettings> => {
    const { settings } = await ctx.portal.get();
    if (settings.oidc === null) throw new AppError('not_found');
    return settings.oidc;
  };

  router.get('/', async (req, res, next) => {
    try {
      const config = await configurationOf(await settingsOf(), ctx);
      if (!config) {
        await sendFailurePage(res, 'provider_down');
        return;
      }
      const flow: Flow = {
        state: oidc.randomState(),
        nonce: oidc.randomNonce(),
        verifier: oidc.randomPKCECodeVerifier(),
        until: ctx.clock() + FLOW_SECONDS * 1000,
      };
      const sealed = encryptSecret(JSON.stringify(flow), ctx.sealingKey).toString('base64url');
      setPortalCookie(res, FLOW_COOKIE, sealed, FLOW_SECONDS, {
        prefix: ctx.prefix,
        secure: overHttps(req, ctx.trustProxy),
      });
      const to = oidc.buildAuthorizationUrl(config, {
        redirect_uri: `${portalOrigin(req, ctx.trustProxy)}${paths.oidcCallback}`,
        scope: 'openid email profile',
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
        code_challenge_method: 'S256',
      });
      res.redirect(302, to.href);
    } catch (err) {
      next(err);
    }
  });

  router.get('/callback', async (req, res, next) => {
    try {
      const settings = await settingsOf();
      const sealed = cookieOf(req, FLOW_COOKIE);
      // The flow cookie is spent whatever happens next.
      setPortalCookie(res, FLOW_COOKIE, '', 0, {
        prefix: ctx.prefix,
        secure: overHttps(req, ctx.trustProxy),
      });
      let flow: Flow | undefined;
      try {
        flow =
          sealed === undefined
            ? undefined
            : (JSON.parse(decryptSecret(Buffer.from(sealed, 'base64url'), ctx.encryptionKeys)) as Flow);
      } catch {
        flow = undefined;
      }
      if (!flow || flow.until < ctx.clock()) {
        await sendFailurePage(res, 'oidc_expired');
        return;
      }
      const config = await configurationOf(settings, ctx);
      if (!config) {
        await sendFailurePage(res, 'provider_down');
        return;
      }
      let claims: oidc.IDToken | undefined;
      try {
        const tokens = await oidc.authorizationCodeGrant(
          config,
          new URL(`${portalOrigin(req, ctx.trustProxy)}${req.originalUrl}`),
          {
            pkceCodeVerifier: flow.verifier,
            expectedState: flow.state,
            expectedNonce: flow.nonce,
            idTokenExpected: true,
          },
        );
        claims = tokens.claims();
      } catch (err) {
        ctx.logger.info({ err: (err as Error).message }, 'portal OIDC sign-in refused');
      }
      if (!claims) {
        await sendFailurePage(res, 'oidc_failed');
        return;
      }
      const value = claims[settings.claim];
      const consumer =
        typeof value === 'string' ? await consumerOfClaim(value, settings.match, ctx) : undefined;
      if (!consumer) {
        await sendFailurePage(res, 'no_account');
        return;
      }
      const user: PortalUserRow = {
        id: text(claims.sub, 200)!,
        ...(text(claims.email, 320) !== undefined && { email: text(claims.email, 320)! }),
        ...(text(claims.name, 200) !== undefined && { name: text(claims.name, 200)! }),
      };
      const token = generateSessionToken();
      const id = 'pss_' + randomBytes(16).toString('base64url');
      const now = ctx.now();
      const expiresAt = new Date(now.getTime() + DEFAULT_SESSION_TTL_SECONDS * 1000);
      const session = {
        id,
        consumerId: consumer.id,
        user,
        ttlSeconds: DEFAULT_SESSION_TTL_SECONDS,
        signedIn: true,
        createdAt: now,
        expiresAt,
      };
      res.locals.caller = portalCaller(
        session,
        requestIdOf(req.headers),
        forwardedFacts(req, ctx.trustProxy).client,
      );
      await ctx.audited(res, async ({ portalSessions }) => {
        await portalSessions.insert({ ...session, tokenHash: hashSecret(token) });
        return {
          result: undefined,
          action: 'portal.session_create',
          target: { type: 'portal_session', id },
          before: null,
          after: {
            sessionId: id,
            consumerId: consumer.id,
            user,
            signedIn: true,
            expiresAt: expiresAt.toISOString(),
          },
        };
      });
      enterPortal(res, ctx, session, token);
    } catch (err) {
      next(err);
    }
  });
  return router;
}
