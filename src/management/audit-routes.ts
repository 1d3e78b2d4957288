/** The audit log, newest first (contract section 9). */
import type { Router } from 'express';
import type { AuditEntry } from '../store/audit-repository.js';
import { requires } from './authenticate.js';
import { RawJson, sendJson } from './json-as-written.js';
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
        // `root` names the root token: admin token ids all start with `tok_`.
        actorId: query.actorId === 'root' ? null : query.actorId,
        from: query.from === undefined ? undefined : parseTimestamp(query.from),
        to: query.to === undefined ? undefined : parseTimestamp(query.to),
      };
      const rows = await ctx.audit.list(filter, query.after, query.limit + 1);
      const { items, nextCursor } = page(rows, query.limit, (e: AuditEntry) => ({ at: e.time.getTime(), id: String(e.seq) }));
      const state = (text: string | null) => (text === null ? null : new RawJson(text));
      const body: AuditLogResponse = {
        auditLog: items.map(({ seq: _seq, ...e }) => ({ ...e, time: isoTimestamp(e.time), changes: { before: state(e.changes.before), after: state(e.changes.after) } })),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      sendJson(res, body);
    })
    .all(methodNotAllowed('GET, HEAD'));
}
