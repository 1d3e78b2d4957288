/**
 * Finding a key by its secret (docs/guides/keys.md, Finding keys): the secret travels in a body, never in a URL that
 * logs and histories keep, and the answer never carries a secret. Each lookup is a guess at a secret
 * as much as a wrong credential is, so a miss counts against the same per-address budget as a wrong
 * management token, and past it every call from the address is refused until the window ends. Nothing
 * changes, so the audit log (the record of changes) has no entry; the log line names who looked up
 * which key (docs/decisions/0056-console-own-scopes-and-key-lookup.md).
 */
import { Type } from '@sinclair/typebox';
import { AppError } from '../../../errors.js';
import { hashSecret } from '../../../keys/secret.js';
import { secondsUntil } from '../../../plans/window.js';
import type { KeyRow } from '../../../store/key-row.js';
import type { KeyWithPlan } from '../../../store/key-with-plan.js';
import { callerOf } from '../../authenticate.js';
import { keySummary } from '../keys/views.js';
import { defineOperation } from '../../operation.js';
import { IsoTimestamp } from '../../schemas.js';
import { KeySummary } from '../keys/schemas.js';
import { isoTimestamp } from '../../time-format.js';
import { SECRET_PATTERN } from '../../../keys/secret-format.js';

const LookupKeyRequest = Type.Object(
  {
    secret: Type.String({
      pattern: SECRET_PATTERN,
      description:
        'A secret as create or roll answered it: its prefix and 36 characters (docs/guides/leaked-keys.md), or `tg_` and 43 characters before checksums',
    }),
  },
  { additionalProperties: false, title: 'LookupKeyRequest' },
);

const LookupKeyResponse = Type.Object(
  {
    apiKey: KeySummary,
    matched: Type.Unsafe<'current' | 'previous'>({
      type: 'string',
      enum: ['current', 'previous'],
      description:
        '`current`: the key’s secret now; `previous`: the secret it had before its last roll (working until `previousSecretExpiresAt`)',
    }),
    previousSecretExpiresAt: Type.Optional({
      ...IsoTimestamp,
      description: 'With `previous`: when that secret stops (or stopped) working',
    }),
  },
  { additionalProperties: false, title: 'LookupKeyResponse' },
);

export const keyLookupOperations = [
  defineOperation({
    id: 'lookupConsumerApiKey',
    method: 'post',
    path: '/tollgate/keys/lookup',
    scope: 'keys:read',
    readOnly: true,
    tag: 'Consumer API keys',
    summary: 'Find the key a secret belongs to',
    description:
      'The secret goes in the body, never in a URL; the answer is the key as the list shows it, without its secret, and whether the secret is its current one or the previous one of a roll. A secret that opens no key counts as a wrong credential from the client address: past 20 a minute every call from it gets 429 `too_many_failed_attempts` until the minute ends.',
    body: { schema: LookupKeyRequest },
    success: { status: 200, description: 'The key that secret opens', schema: LookupKeyResponse },
    errors: { key_not_found: 'No key has that secret (now, or as the previous secret of a roll)' },
    async handle({ body, res, ctx }) {
      const caller = callerOf(res);
      const now = ctx.clock();
      const attempt = await ctx.throttle.attempt(caller.clientAddress, now, body.secret);
      if (!attempt.allowed) {
        res.set('Retry-After', String(secondsUntil(attempt.retryAtMs, now)));
        throw new AppError('too_many_failed_attempts');
      }
      let found: KeyWithPlan | undefined;
      let key: KeyRow | undefined;
      try {
        found = await ctx.keys.findBySecretHash(hashSecret(body.secret));
        key = found && (await ctx.keys.get(found.id));
      } catch (err) {
        // A database that failed proves nothing about the secret: the attempt is given back.
        attempt.settle(false);
        throw err;
      }
      attempt.settle(key === undefined);
      if (!key) throw new AppError('key_not_found', 'No key has that secret');
      ctx.logger.info(
        { requestId: caller.requestId, actor: caller.actor, keyId: key.id },
        'key found by its secret',
      );
      const previousUntil = found!.secretValidUntilMs;
      res.json({
        apiKey: keySummary(key),
        matched: previousUntil === null ? 'current' : 'previous',
        ...(previousUntil !== null && { previousSecretExpiresAt: isoTimestamp(new Date(previousUntil)) }),
      });
    },
  }),
];
