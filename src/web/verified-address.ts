import type { Context, Next } from 'koa';
import { mayAddCredentials, type SensitiveAction } from '../policies/account.js';
import { requireUser, type WebDeps } from './context.js';
import { render } from './render.js';
import { pageT } from '../i18n.js';

/**
 * Before a form that adds a way into the account (a passkey, an authenticator app, a personal
 * access token): where the site requires verified addresses, an account whose address is not
 * verified yet gets a page saying to verify it first, with **Resend the link**, and nothing is
 * added. `action` is the change asked for, said on the page in its words (account:purpose).
 */
export function refuseUnverified(deps: WebDeps, action: SensitiveAction) {
  return async function verifiedAddressFirst(ctx: Context, next: Next): Promise<void> {
    const user = requireUser(ctx);
    if (mayAddCredentials(user, deps.config.requireVerifiedEmail)) return next();
    const t = pageT(ctx);
    render(ctx, 'account/verify-first', {
      title: t('account:titles.verifyFirst'),
      purpose: t(`account:purpose.${action}`),
      email: user.email,
      back: ctx.path.startsWith('/account/settings/') ? ctx.path.split('/').slice(0, 4).join('/') : '/account/settings',
      hideVerifyBanner: true,
    }, 403);
  };
}
