/** Rolling a consumer API key: a new secret, the previous one working for a grace period (docs/guides/keys.md). */
import { AppError } from '../../../errors.js';
import { KEY_CHANGE_POLL_MS } from '../../../keys/key-change-feed.js';
import { encryptSecret, generateSecret, hashSecret } from '../../../keys/secret.js';
import { keyAudit } from '../../audit-views.js';
import { defineOperation } from '../../operation.js';
import { isoTimestamp } from '../../time-format.js';
import { KEY_NOT_FOUND, keyParams, TAG } from './key-params.js';
import { RollKeyRequest, RollKeyResponse } from './schemas.js';

/**
 * Every replica hears of a roll within two reads of the recorded changes, even one whose change
 * message was lost: no previous secret is stated to end sooner.
 */
const SHORTEST_GRACE_MS = 2 * KEY_CHANGE_POLL_MS;

/**
 * `previousSecretExpiresAt`: the first whole second (the resolution of the API's timestamps) at least
 * the grace, and at least SHORTEST_GRACE_MS, after the roll. With a grace the previous secret is kept
 * until exactly then, on every replica; with none it is refused at once wherever the roll is known,
 * and by then everywhere.
 */
function previousSecretEnd(now: Date, gracePeriodSeconds: number): Date {
  return new Date(
    Math.ceil((now.getTime() + Math.max(gracePeriodSeconds * 1000, SHORTEST_GRACE_MS)) / 1000) * 1000,
  );
}

export const rollKeyOperation = defineOperation({
  id: 'rollConsumerApiKey',
  method: 'post',
  path: '/consumer-api-key/:consumerApiKeyId/roll',
  scope: 'keys:write',
  tag: TAG,
  summary: 'Give a key a new secret, the previous one working for a grace period',
  description:
    'The body may be left out (grace 0). The new secret works at once on every replica; the previous one until `previousSecretExpiresAt`, then 401 `invalid_api_key`, on every replica from that very instant: the first whole second at least `gracePeriodSeconds` after the roll. With grace 0 it is refused at once wherever the roll is known, and `previousSecretExpiresAt` is the instant by which every replica has heard of it (the first whole second at least 0.5 s away), never one before the real end. Rolling again ends an earlier grace at once.',
  params: keyParams,
  body: { schema: RollKeyRequest, optional: true },
  success: { status: 200, description: 'Rolled', schema: RollKeyResponse },
  errors: KEY_NOT_FOUND,
  async handle({ params, body: { gracePeriodSeconds = 0 }, res, ctx }) {
    const id = params.consumerApiKeyId;
    const now = ctx.now();
    const previousUntil = previousSecretEnd(now, gracePeriodSeconds);
    const secret = generateSecret(ctx.leaks.keyPrefix);
    await ctx.audited(res, async ({ keys }) => {
      const before = await keys.get(id, true);
      if (!before) throw new AppError('key_not_found');
      await keys.roll(
        id,
        { hash: hashSecret(secret), ciphertext: encryptSecret(secret, ctx.sealingKey) },
        gracePeriodSeconds === 0 ? null : previousUntil,
        now,
      );
      const after = {
        ...keyAudit(before),
        secretRolled: true,
        previousSecretExpiresAt: isoTimestamp(previousUntil),
      };
      return {
        result: undefined,
        action: 'key.roll',
        target: { type: 'key', id },
        before: keyAudit(before),
        after,
      };
    });
    await ctx.announce({ kind: 'key', keyId: id });
    const body: RollKeyResponse = {
      consumerApiKeyId: id,
      secret,
      previousSecretExpiresAt: isoTimestamp(previousUntil),
    };
    res.json(body);
  },
});
