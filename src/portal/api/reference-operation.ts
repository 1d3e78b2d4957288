/** The team's API reference in the portal's API, served from the portal's own origin (docs/decisions/0106-portal-api-reference.md). */
import { Type } from '@sinclair/typebox';
import { AppError } from '../../errors.js';
import { defineOperation } from '../../management/operation.js';
import { documentWithoutHtml } from './markdown-without-html.js';

export const portalReferenceOperation = defineOperation({
  id: 'portalApiReference',
  method: 'get',
  path: '/reference',
  scope: null,
  tag: 'Portal',
  summary: "The team's OpenAPI document, served from the portal's own origin, its Markdown without HTML",
  success: {
    status: 200,
    description: 'The document',
    schema: Type.Record(Type.String(), Type.Unknown(), { title: 'OpenApiDocument' }),
  },
  errors: { not_found: 'The portal has no API reference (or it was never fetched)' },
  async handle({ res, ctx }) {
    const { settings, reference } = await ctx.portal.get();
    const given = settings.apiReference;
    // Given inline, or the last good copy of what Tollgate fetched.
    const text =
      given === null ? null : 'document' in given ? JSON.stringify(given.document) : reference.document;
    if (text === null) throw new AppError('not_found', 'The portal has no API reference');
    res.json(documentWithoutHtml(JSON.parse(text)));
  },
});
