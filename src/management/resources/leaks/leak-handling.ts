/**
 * What becomes of secrets reported leaked (docs/guides/leaked-keys.md), whoever reported them: each
 * secret that would authenticate now is a true positive, and its key is handled as LEAKED_KEY_ACTION
 * says (disabled, rolled, or only flagged), with its audit entry and its `key.leaked` event, in the
 * one transaction of `ctx.audited`. Nothing here keeps or tells a secret: only its SHA-256.
 */
import type { Response } from 'express';
import { encryptSecret, generateSecret, hashSecret, looksLikeSecret } from '../../../keys/secret.js';
import type { KeyLeak } from '../../../store/key-row.js';
import { keyAudit } from '../../audit-views.js';
import type { AuditedChange, ManagementContext, Repositories } from '../../context.js';
import { isoTimestamp } from '../../time-format.js';
import type { LeakAnswer } from './schemas.js';

export interface ReportedSecret {
  readonly token: string;
  /** The reporter's name for the kind of secret, echoed in the answer. */
  readonly type: string;
  /** Where it was found; null: not said. */
  readonly url: string | null;
}

/**
 * A report already handled (GitHub's, by its body): `claim` answers the earlier answer's text, or
 * undefined when this is the first, which `ctx.audited` then records beside the changes.
 */
export interface ReportClaim {
  readonly bodyHash: Buffer;
  readonly since: Date;
}

/** The answer to the report as JSON text, in the order reported (the same text for a report handled before). */
export async function handleLeakReport(
  ctx: ManagementContext,
  res: Response,
  reported: readonly ReportedSecret[],
  source: string,
  claim?: ReportClaim,
): Promise<string> {
  const changedKeys: string[] = [];
  const answer = await ctx.audited(res, async (repositories) => {
    const now = ctx.now();
    const earlier =
      claim && (await repositories.secretScanningReports.claim(claim.bodyHash, now, claim.since));
    if (earlier !== undefined) return { result: earlier, unchanged: true as const };
    const hashed = reported.map(({ token }) => ({ token, hash: hashSecret(token) }));
    const keyIds = await liveKeysOf(repositories, hashed, now.getTime());
    const answers: LeakAnswer = reported.map(({ type }, i) => ({
      token_hash: hashed[i]!.hash.toString('hex'),
      token_type: type,
      label: keyIds[i] === undefined ? 'false_positive' : 'true_positive',
    }));
    const changes: AuditedChange[] = [];
    for (const [i, { url }] of reported.entries()) {
      const keyId = keyIds[i];
      // A key reported twice in one report (a secret listed twice, or two of its secrets) is handled once.
      if (keyId === undefined || changedKeys.includes(keyId)) continue;
      changedKeys.push(keyId);
      changes.push(
        await handleLeakedKey(ctx, repositories, keyId, { at: isoTimestamp(now), source, url }, now),
      );
    }
    const text = JSON.stringify(answers);
    if (claim) await repositories.secretScanningReports.answer(claim.bodyHash, text);
    const last = changes.pop();
    if (last === undefined) return { result: text, unchanged: true as const };
    return { result: text, ...last, preceding: changes };
  });
  for (const keyId of changedKeys) await ctx.announce({ kind: 'key', keyId });
  return answer;
}

/**
 * The key each reported token opens now (undefined: none): enabled, unexpired, and the token its
 * current secret or a rolled one still in its grace. All are judged before any key is handled, so each
 * entry of a secret is labelled as it was at the report. The keys are locked (in the order of their
 * ids, so that reports naming the same keys wait for each other rather than deadlock) and only then
 * read, so of concurrent reports of one key only the first finds it live.
 */
async function liveKeysOf(
  { keys }: Repositories,
  reported: readonly { readonly token: string; readonly hash: Buffer }[],
  nowMs: number,
): Promise<(string | undefined)[]> {
  const secrets = new Map<string, Buffer>();
  for (const { token, hash } of reported) if (looksLikeSecret(token)) secrets.set(token, hash);
  const found = new Set<string>();
  for (const hash of secrets.values()) {
    const key = await keys.findBySecretHash(hash);
    if (key !== undefined) found.add(key.id);
  }
  for (const id of [...found].sort()) await keys.get(id, true);
  const live = new Map<string, string>();
  for (const [token, hash] of secrets) {
    const key = await keys.findBySecretHash(hash);
    if (key === undefined || !key.enabled) continue;
    if (key.expiresAtMs !== null && key.expiresAtMs <= nowMs) continue;
    if (key.secretValidUntilMs !== null && key.secretValidUntilMs <= nowMs) continue;
    live.set(token, key.id);
  }
  return reported.map(({ token }) => live.get(token));
}

/** LEAKED_KEY_ACTION applied to one key, and the leak recorded on it: the change its audit entry shows. */
async function handleLeakedKey(
  ctx: ManagementContext,
  { keys }: Repositories,
  id: string,
  report: Omit<KeyLeak, 'action'>,
  now: Date,
): Promise<AuditedChange> {
  const { action } = ctx.leaks;
  const before = (await keys.get(id, true))!;
  if (action === 'disable') await keys.update(id, { enabled: false }, now);
  if (action === 'roll') {
    // The leaked secret and any rolled one in its grace are refused at once; the owner reads the new one.
    const secret = generateSecret(ctx.leaks.keyPrefix);
    await keys.roll(
      id,
      { hash: hashSecret(secret), ciphertext: encryptSecret(secret, ctx.sealingKey) },
      null,
      now,
    );
  }
  const leak: KeyLeak = { ...report, action };
  await keys.recordLeak(id, leak, now);
  const after = (await keys.get(id))!;
  return {
    action: 'key.leak',
    target: { type: 'key', id },
    before: keyAudit(before),
    after: { ...keyAudit(after), ...(action === 'roll' && { secretRolled: true }), leak },
  };
}
