/** The audit log, newest first (docs/guides/admin-tokens-and-audit.md). */
import type { AuditEntry } from '../../../store/audit-repository.js';
import { RawJson, sendJson } from '../../json-as-written.js';
import { defineOperation } from '../../operation.js';
import { pageOf, positionAfter } from '../../pages.js';
import { AuditLogQuery, AuditLogResponse } from './schemas.js';
import { DEFAULT_PAGE_SIZE } from '../../schemas.js';
import { isoTimestamp } from '../../time-format.js';
import { parseTimestamp, rangeProblems } from '../../validation.js';

/** The position in the log is its sequence number. */
const SEQUENCE = /^[0-9]{1,16}$/;

export const auditLogOperations = [
  defineOperation({
    id: 'listAuditLog',
    method: 'get',
    path: '/tollgate/audit-log',
    scope: 'audit:read',
    tag: 'Admin tokens and audit',
    summary: 'The audit log, newest first',
    description: 'Entries older than AUDIT_RETENTION_DAYS (default 365) are deleted.',
    query: { schema: AuditLogQuery, check: rangeProblems },
    success: { status: 200, description: 'One page of entries', schema: AuditLogResponse },
    async handle({ query, res, ctx }) {
      const limit = query.limit ?? DEFAULT_PAGE_SIZE;
      const after = positionAfter(query.cursor, SEQUENCE);
      const filter = {
        action: query.action,
        targetId: query.targetId,
        // `root` names the root token and `system` Tollgate itself: admin token ids all start with `tok_`.
        ...(query.actorId === 'root' || query.actorId === 'system'
          ? { actorType: query.actorId as 'root' | 'system' }
          : { actorId: query.actorId }),
        from: query.from === undefined ? undefined : parseTimestamp(query.from),
        to: query.to === undefined ? undefined : parseTimestamp(query.to),
      };
      const rows = await ctx.audit.list(filter, after, limit + 1);
      const { items, nextCursor } = pageOf(rows, limit, (e: AuditEntry) => ({
        at: e.time.getTime(),
        id: String(e.seq),
      }));
      const state = (text: string | null) => (text === null ? null : new RawJson(text));
      const body: AuditLogResponse = {
        auditLog: items.map(({ seq: _seq, ...e }) => ({
          ...e,
          time: isoTimestamp(e.time),
          changes: { before: state(e.changes.before), after: state(e.changes.after) },
        })),
        ...(nextCursor !== undefined && { nextCursor }),
      };
      sendJson(res, body);
    },
  }),
];
