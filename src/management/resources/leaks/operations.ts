/** `POST /tollgate/keys/leaked`: any scanner's report of leaked secrets (docs/guides/leaked-keys.md). */
import { defineOperation } from '../../operation.js';
import { handleLeakReport } from './leak-handling.js';
import { LeakAnswer, LeakedKeysRequest } from './schemas.js';

/** The `token_type` of secrets reported here (GitHub's reports carry their own). */
const TOKEN_TYPE = 'tollgate_api_key';

export const leakOperations = [
  defineOperation({
    id: 'reportLeakedKeys',
    method: 'post',
    path: '/tollgate/keys/leaked',
    scope: 'keys:write',
    tag: 'Consumer API keys',
    summary: 'Report secrets found leaked: their keys are disabled, rolled or flagged (LEAKED_KEY_ACTION)',
    description:
      'For a scanner other than GitHub (gitleaks, GitLab, your own). Each secret that would authenticate now is a true positive: its key is handled as LEAKED_KEY_ACTION says (`disable`, `roll`: a new secret and the old one refused at once, `notify`: nothing changes), gains `leak` in its detail, an audit entry (actor: the caller; `source` recorded) and a `key.leaked` webhook event, on every replica within 1 s. A key already disabled, expired or rolled past its grace is a false positive and nothing changes. No secret is recorded or answered: only its SHA-256.',
    body: { schema: LeakedKeysRequest },
    success: { status: 200, description: 'One label per secret, in the order sent', schema: LeakAnswer },
    async handle({ body, res, ctx }) {
      const reported = body.secrets.map((token) => ({ token, type: TOKEN_TYPE, url: null }));
      const answer = await handleLeakReport(ctx, res, reported, body.source ?? 'manual');
      res.type('application/json').send(answer);
    },
  }),
];
