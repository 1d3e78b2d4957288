/**
 * A key reported leaked (docs/guides/leaked-keys.md) as its administrator and its owner see it: the
 * notice on the key in the console and in the developer portal, saying when, by whom, where and what
 * was done, and never the secret.
 */
import { consoleSuite, signedInTab, visit } from './helpers/console-browser.js';
import { openPortalFor, signedInPortal } from './helpers/portal-browser.js';
import type { Tollgate } from '../e2e/helpers/tollgate.js';

let tollgate: Tollgate;
let consumerId = '';
const key = { id: '', secret: '' };

const suite = consoleSuite(async (started) => {
  tollgate = started;
  consumerId = await openPortalFor(tollgate, 'Initech');
  const created = await tollgate.admin('POST', '/consumer-api-key/create', {
    name: 'Mobile app',
    consumerId,
  });
  expect(created.status).toBe(201);
  Object.assign(key, { id: created.body.id, secret: created.body.secret });
  const reported = await tollgate.admin('POST', '/tollgate/keys/leaked', {
    secrets: [key.secret],
    source: 'gitleaks in CI',
  });
  expect(reported.body[0].label).toBe('true_positive');
});
const tab = signedInTab(suite, () => tollgate.rootToken);

it('shows the administrator the notice on the key in the console', async () => {
  await visit(tab.session, `keys/${key.id}`, 'Mobile app');
  const notice = tab.session.page.getByRole('status', { name: 'Leaked secret' });
  await expect(notice.textContent()).resolves.toMatch(
    /reported leaked.*reported by gitleaks in CI\. The key was disabled: its requests are refused/,
  );
});

it("shows the key's owner the notice in the portal, the secret masked with its prefix", async () => {
  const session = await signedInPortal(suite.browser, tollgate, consumerId);
  try {
    await session.page.getByRole('link', { name: 'Mobile app' }).click();
    const notice = session.page.getByRole('status', { name: 'Leaked secret' });
    await expect(notice.textContent()).resolves.toMatch(/reported by gitleaks in CI\. The key was disabled/);
    await expect(session.page.content()).resolves.not.toContain(key.secret);
    await expect(session.page.getByText(`tg_…${key.secret.slice(-4)}`).count()).resolves.toBeGreaterThan(0);
  } finally {
    await session.context.close();
  }
});
