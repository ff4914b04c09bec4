import Router from '@koa/router';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { cookieNames } from '../cookie-names.js';
import type { UserRow } from '../db/users.js';
import { AppError } from '../errors.js';
import { describeUserAgent } from '../presenters/session.js';
import { passwordStamp, RECOVERY_MS, recoveringAccount, recoveryView, removeAllForRecovery, removeForRecovery } from '../services/recovery.js';
import { formFields, returnToQuery, safeReturnTo, type WebDeps } from './context.js';
import { render } from './render.js';
import { pageLanguage, pageT } from '../i18n.js';
import { SignedCookie } from './signed-cookie.js';

/**
 * The page after a password reset (services/recovery.ts): what else reaches the account, with
 * Remove for each and Remove all, for the browser that made the reset and for RECOVERY_MS. That
 * browser holds a signed pass (account, password stamp, whether the reset cleared the account);
 * any other browser, or this one later, sees only that the password is changed.
 */
export class RecoveryPass {
  private readonly cookie: SignedCookie;

  constructor(secure: boolean) {
    this.cookie = new SignedCookie(cookieNames(secure).recovery, RECOVERY_MS, secure);
  }

  give(ctx: Context, user: Pick<UserRow, 'id'>, passwordHash: string, cleared: boolean): void {
    this.cookie.set(ctx, [String(user.id), passwordStamp(passwordHash), cleared ? 'cleared' : 'kept']);
  }

  /** The account the browser's pass is for, while the pass holds (and the password is the one the reset set). */
  async account(ctx: Context, deps: WebDeps): Promise<{ user: UserRow; cleared: boolean } | undefined> {
    const [id, stamp, state] = this.cookie.read(ctx) ?? [];
    const userId = Number(id);
    if (!Number.isSafeInteger(userId) || !stamp) return undefined;
    const user = await recoveringAccount(deps.db, userId, stamp);
    return user && { user, cleared: state === 'cleared' };
  }
}

/** Removing without a pass: the window closed, or another browser made the reset. */
class NoRecoveryPassError extends AppError {
  constructor() {
    super(403, 'no_recovery_pass', 'The few minutes after a password reset in which this page can remove things have passed, or the reset was made in another browser. Sign in and use Account settings instead.');
  }
}

const DONE = '/reset-password/done';

/** Each `?notice=` to its sentence's key (account:notices). */
const NOTICES: Record<string, string> = {
  removed: 'removed',
  'all-removed': 'allRemoved',
};

export function recoveryRoutes(deps: WebDeps & { provider: Provider }): Router {
  const router = new Router();
  const pass = new RecoveryPass(deps.config.issuer.startsWith('https://'));

  // Every session was signed out: the flow's start (return_to) asks for the new password.
  router.get(DONE, async (ctx) => {
    const signInAt = safeReturnTo(ctx.query.return_to, '/login');
    const recovering = await pass.account(ctx, deps);
    const view = recovering ? await recoveryView({ db: deps.db, provider: deps.provider }, recovering.user.id) : undefined;
    const t = pageT(ctx);
    const notice = String(ctx.query.notice ?? '');
    render(ctx, 'password-reset/done', {
      title: t('account:titles.passwordChanged'),
      signInAt,
      returnTo: safeReturnTo(ctx.query.return_to, ''),
      cleared: recovering?.cleared ?? false,
      email: recovering?.user.email ?? '',
      view: view && {
        ...view,
        sessions: view.sessions.map((s) => ({ ...s, browser: describeUserAgent(s.userAgent, pageLanguage(ctx)) })),
      },
      flash: Object.hasOwn(NOTICES, notice) ? t(`account:notices.${NOTICES[notice]}`) : null,
    });
  });

  router.post(`${DONE}/remove`, async (ctx) => {
    const recovering = await pass.account(ctx, deps);
    if (!recovering) throw new NoRecoveryPassError();
    const form = formFields(ctx);
    await removeForRecovery({ db: deps.db, provider: deps.provider }, recovering.user, form.item ?? '', form.id ?? '', ctx.ip);
    ctx.redirect(`${DONE}${withNotice(form.return_to, 'removed')}`);
  });

  router.post(`${DONE}/remove-all`, async (ctx) => {
    const recovering = await pass.account(ctx, deps);
    if (!recovering) throw new NoRecoveryPassError();
    await removeAllForRecovery({ db: deps.db, provider: deps.provider }, recovering.user, ctx.ip);
    ctx.redirect(`${DONE}${withNotice(formFields(ctx).return_to, 'all-removed')}`);
  });

  // The addresses the forms post to, opened on their own: the page the forms are on.
  router.get([`${DONE}/remove`, `${DONE}/remove-all`], (ctx) => ctx.redirect(DONE));

  return router;
}

function withNotice(returnTo: unknown, notice: string): string {
  const query = returnToQuery(returnTo);
  return query ? `${query}&notice=${notice}` : `?notice=${notice}`;
}
