/**
 * The management API: keys, plans, consumers and bindings behind the root token. Built from its dependencies and
 * never listening itself, so the server mounts it and tests run it in process. The operations live in
 * one folder per resource (resources/<resource>/); this file is what they share: authentication, errors and the
 * announcements.
 */
import express, { type RequestHandler } from 'express';
import { AppError } from '../errors.js';
import type { KeyChange } from '../keys/key-events.js';
import type { Metrics } from '../ops/metrics.js';
import { tracer } from '../tracing/tracer.js';
import { BillingExportRepository } from '../billing/export-repository.js';
import { AdminTokenRepository } from '../store/admin-token-repository.js';
import { AuditRepository, generateAuditId } from '../store/audit-repository.js';
import { ConsumerRepository } from '../store/consumer-repository.js';
import { CreditRepository } from '../store/credit-repository.js';
import { KeyRepository } from '../store/key-repository.js';
import { PlanRepository } from '../store/plan-repository.js';
import { FailureLogRepository } from '../usage/failure-log-repository.js';
import { RouteRepository } from '../store/route-repository.js';
import { Outbox, type NewEvent } from '../store/outbox.js';
import { DeliveryRepository } from '../store/delivery-repository.js';
import { WebhookRepository } from '../store/webhook-repository.js';
import { PortalSessionRepository } from '../store/portal-session-repository.js';
import { SecretScanningReportRepository } from '../store/secret-scanning-report-repository.js';
import { PortalSettingsRepository } from '../store/portal-settings-repository.js';
import { authenticate, callerOf } from './authenticate.js';
import { eventOfChange } from './change-events.js';
import type { AuditedChange, ManagementContext, ManagementDeps } from './context.js';
import { sendAppError, strictApp } from './express-app.js';
import { buildConfigSchema } from './config-schema.js';
import { jsonText } from './json-as-written.js';
import { OPERATIONS } from './resources/index.js';
import { registerOperations } from './register-operations.js';
import { GITHUB_REPORTS_PATH, githubReportsRoute } from './resources/leaks/github-route.js';
import { GitHubSigningKeys } from '../keys/github-signing-keys.js';

export type { ManagementDeps, UsageTotalsReader } from './context.js';
export type { UsageTotals } from './resources/usage/schemas.js';

function countAndNoStore(metrics: Metrics): RequestHandler {
  return (_req, res, next) => {
    // Responses carry secrets: no cache anywhere may keep them.
    res.set('Cache-Control', 'no-store');
    res.once('finish', () => metrics.managementRequests.inc({ status: String(res.statusCode) }));
    next();
  };
}

/** An audit image as stored: JSON text, with a key's metadata as written; null: no target. */
const stateText = (state: unknown): string | null => (state === null ? null : jsonText(state));

/** What every operation gets: the dependencies and the few things all of them do (the portal's too). */
export function createManagementContext(deps: ManagementDeps): ManagementContext {
  const sealingKey = deps.encryptionKeys[0];
  if (!sealingKey) throw new Error('createManagementApp: encryptionKeys needs at least the current key');
  const { logger } = deps;
  const ctx: ManagementContext = {
    ...deps,
    sealingKey,
    routes: new RouteRepository(deps.db),
    failureLog: new FailureLogRepository(deps.db),
    webhooks: new WebhookRepository(deps.db),
    deliveries: new DeliveryRepository(deps.db),
    portal: new PortalSettingsRepository(deps.db),
    portalSessions: new PortalSessionRepository(deps.db),
    now: () => new Date(deps.clock()),
    async announce(change: KeyChange) {
      try {
        await deps.keyEvents.publish(change);
      } catch (err) {
        logger.warn(
          { change, err: (err as Error).message },
          'change not broadcast; key caches expire it instead',
        );
      }
    },
    audited: (res, work) =>
      deps.db.transaction().execute(async (trx) => {
        const change = await work({
          keys: new KeyRepository(trx),
          plans: new PlanRepository(trx),
          consumers: new ConsumerRepository(trx),
          credits: new CreditRepository(trx),
          tokens: new AdminTokenRepository(trx),
          routes: new RouteRepository(trx),
          billingExports: new BillingExportRepository(trx),
          webhooks: new WebhookRepository(trx),
          deliveries: new DeliveryRepository(trx),
          portal: new PortalSettingsRepository(trx),
          portalSessions: new PortalSessionRepository(trx),
          secretScanningReports: new SecretScanningReportRepository(trx),
        });
        if ('unchanged' in change) return change.result;
        const caller = callerOf(res);
        const time = ctx.now();
        const changes = [...(change.preceding ?? []), change];
        await new Outbox(trx).add(
          changes
            .map((c) => eventOfChange(c, time))
            .filter((event): event is NewEvent => event !== undefined),
        );
        const entry = ({ action, target, before, after }: AuditedChange) => ({
          id: generateAuditId(),
          time,
          actor: caller.actor,
          action,
          target,
          requestId: caller.requestId,
          clientAddress: caller.clientAddress,
          changes: { before: stateText(before), after: stateText(after) },
        });
        await new AuditRepository(trx).insert(changes.map(entry));
        return change.result;
      }),
  };
  return ctx;
}

export function createManagementApp(deps: ManagementDeps): express.Express {
  const ctx = createManagementContext(deps);

  // Exact paths, as src/server.ts routes them: case-sensitive, no trailing slash.
  const router = express.Router({ caseSensitive: true, strict: true });
  registerOperations(router, OPERATIONS, ctx);

  const app = strictApp();
  app.use(countAndNoStore(deps.metrics));
  // Before authentication: editors and CI fetch it without a token, and it holds no state.
  const configSchema = buildConfigSchema();
  app.get(`${deps.prefix}/tollgate/config-schema.json`, (_req, res) => void res.json(configSchema));
  // GitHub signs its reports instead of presenting a token (docs/guides/leaked-keys.md).
  const githubKeys = new GitHubSigningKeys(deps.leaks.githubKeysUrl, deps.logger, deps.clock);
  app.post(`${deps.prefix}${GITHUB_REPORTS_PATH}`, githubReportsRoute(ctx, githubKeys));
  if (tracer !== undefined) app.use(tracer.management(deps.prefix));
  app.use(
    authenticate({
      rootToken: deps.rootToken,
      tokens: deps.tokenLookup,
      throttle: deps.throttle,
      trustProxy: deps.trustProxy,
      clock: deps.clock,
    }),
  );
  app.use(deps.prefix === '' ? '/' : deps.prefix, router);
  app.use((_req, _res, next) => next(new AppError('not_found')));
  app.use(sendAppError(deps));
  return app;
}
