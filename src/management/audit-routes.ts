/** The audit log, newest first (contract section 9). */
import type { Router } from 'express';
import type { AuditEntry } from '../store/audit-repository.js';
import { requires } from './authenticate.js';
import type { ManagementContext } from './context.js';
import { methodNotAllowed, page, pageQuery } from './route-helpers.js';
import { PATHS, REQUIRED_SCOPES } from './routes.js';
import type { AuditLogResponse } from './schemas.js';
import { isoTimestamp } from './time-format.js';
import { parseTimestamp, validateAuditLogQuery } from './validation.js';

export function addAuditRoutes(router: Router, ctx: ManagementContext): void {
  router
    .route(PATHS.auditLog)
    .get(requires(REQUIRED_SCOPES.auditLog.get), async (req, res) => {
      const query = pageQuery(validateAuditLogQuery, req.query);
      const filter = {
        action: query.action,
        targetId: query.targetId,
        actorId: query.actorId,
        from: query.from === undefined ? undefined : parseTimestamp(query.from),
        to: query.to === undefined ? undefined : parseTimestamp(query.to),
      };
      const rows = await ctx.audit.list(filter, query.after, query.limit + 1);
      const { items, nextCursor } = page(rows, query.limit, (e: AuditEntry) => ({ at: e.time.getTime(), id: String(e.seq) }));
      const body: AuditLogResponse = {
        auditLog: items.map(({ seq: _seq, ...e }) => ({ ...e, time: isoTimestamp(e.time) })),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      res.json(body);
    })
    .all(methodNotAllowed('GET, HEAD'));
}
