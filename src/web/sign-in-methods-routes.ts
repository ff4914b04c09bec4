import { SIGN_IN_METHODS_PAGE, startUpstream } from './federation-routes.js';
import Router from '@koa/router';
import type { Context } from 'koa';
import type { UserRow } from '../db/users.js';
import { AppError } from '../errors.js';
import { parseId } from '../ids.js';
import { openProvider } from '../services/federation/providers.js';
import { HasPasswordError, setFirstPassword, signInMethodsOf, signInProviderBySlug, unlinkIdentity } from '../services/federation/sign-in-methods.js';
import { hasPassword } from '../services/passwords.js';
import type { AccessConfirmation } from './confirm-access.js';
import { formFields, requireUser, type WebDeps } from './context.js';
import { formErrorsOrRetry, formStatus } from './form-errors.js';
import { render } from './render.js';
import { pageT } from '../i18n.js';
import { refuseUnverified } from './verified-address.js';
import { mayAddCredentials } from '../policies/account.js';
import { noticeToOwner } from './security-notice.js';

/** Account settings → Sign-in methods, where a link made from it comes back to. */
export const SIGN_IN_METHODS = SIGN_IN_METHODS_PAGE;

/** The Set a password form's labels (the words its errors start with). */
const SET_PASSWORD_LABELS = { password: 'New password', password_confirmation: 'Confirm new password' };

/**
 * Account settings → Sign-in methods: the password (or Set a password, for an account made by an
 * upstream sign-in), the passkeys, each linked identity with Unlink, and Link another provider.
 * Setting a password, linking and unlinking need a recent proof of the owner (Confirm access);
 * unlinking is refused when it would leave the account no way to sign in. Each change sends a
 * security notice and redirects (Post/Redirect/Get).
 */
export function signInMethodsRoutes(deps: WebDeps, access: AccessConfirmation): Router {
  const router = new Router();

  async function flash(ctx: Context, methods: Awaited<ReturnType<typeof signInMethodsOf>>): Promise<string | null> {
    const notice = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    const t = pageT(ctx);
    if (notice === 'password-set') return t('account:notices.passwordSet');
    if (notice === 'linked') {
      // The identity linked last is the one the round trip just linked.
      const latest = [...methods.identities].sort((a, b) => (b.linkedAt ?? '').localeCompare(a.linkedAt ?? '') || b.id - a.id)[0];
      return latest ? t('account:notices.linked', { provider: latest.providerName }) : null;
    }
    if (notice === 'unlinked') {
      const slug = typeof ctx.query.provider === 'string' ? ctx.query.provider : '';
      const provider = await signInProviderBySlug(deps.db, slug);
      return provider ? t('account:notices.unlinkedProvider', { provider: provider.name }) : t('account:notices.unlinked');
    }
    return null;
  }

  async function renderPage(ctx: Context, user: UserRow, errors: Record<string, string> = {}, status = 200) {
    const methods = await signInMethodsOf(deps.db, user);
    render(ctx, 'account/sign-in-methods', {
      title: pageT(ctx)('account:titles.signInMethods'),
      tab: 'sign-in-methods',
      methods,
      errors,
      values: {},
      labels: SET_PASSWORD_LABELS,
      // A new way in waits for a verified address, as passkeys and tokens do.
      mayLink: mayAddCredentials(user, deps.config.requireVerifiedEmail),
      flash: status === 200 ? await flash(ctx, methods) : null,
    }, status);
  }

  router.get(SIGN_IN_METHODS, async (ctx) => {
    await renderPage(ctx, requireUser(ctx));
  });

  // The address the sign-in flow returns to after a link, kept beside Account settings' own.
  router.get('/settings/sign-in-methods', (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${SIGN_IN_METHODS}${ctx.querystring ? `?${ctx.querystring}` : ''}`);
  });

  // The addresses the forms post to, opened on their own: the page.
  router.get([`${SIGN_IN_METHODS}/password`, `${SIGN_IN_METHODS}/identities/:id/unlink`, `${SIGN_IN_METHODS}/link/:slug`], (ctx) => {
    requireUser(ctx);
    ctx.redirect(SIGN_IN_METHODS);
  });

  router.post(`${SIGN_IN_METHODS}/password`, async (ctx, next) => {
    // An account with a password changes it on the Password page, which asks for the current one.
    if (hasPassword(requireUser(ctx).password_hash)) return ctx.redirect('/account/settings/password');
    return next();
  }, access.required('set-password'), async (ctx) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    try {
      await setFirstPassword(deps, user, { password: form.password ?? '', confirmation: form.password_confirmation ?? '' }, ctx.ip);
    } catch (err) {
      if (err instanceof HasPasswordError) return ctx.redirect('/account/settings/password');
      const errors = formErrorsOrRetry(ctx, err, 'password', SET_PASSWORD_LABELS);
      if (!errors) throw err;
      await renderPage(ctx, user, errors, formStatus(err));
      return;
    }
    noticeToOwner(deps, ctx, user, 'password-set');
    ctx.redirect(`${SIGN_IN_METHODS}?notice=password-set`);
  });

  router.post(`${SIGN_IN_METHODS}/identities/:id/unlink`, access.required('unlink-sign-in-method'), async (ctx) => {
    const user = requireUser(ctx);
    const id = parseId(ctx.params.id);
    if (id === undefined) throw new AppError(404, 'not_found', 'There is no such linked identity on your account.');
    let unlinked: { slug: string; providerName: string };
    try {
      unlinked = await unlinkIdentity(deps.db, user, id, ctx.ip);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 409) throw err;
      await renderPage(ctx, user, { unlink: err.message }, err.status);
      return;
    }
    noticeToOwner(deps, ctx, user, 'sign-in-method-unlinked', unlinked.providerName);
    ctx.redirect(`${SIGN_IN_METHODS}?${new URLSearchParams({ notice: 'unlinked', provider: unlinked.slug })}`);
  });

  router.post(`${SIGN_IN_METHODS}/link/:slug`, refuseUnverified(deps, 'link-sign-in-method'), access.required('link-sign-in-method'), async (ctx) => {
    const user = requireUser(ctx);
    const slug = String(ctx.params.slug ?? '');
    const row = await signInProviderBySlug(deps.db, slug);
    if (!row || row.disabled_at !== null) throw new AppError(404, 'not_found', 'There is no such sign-in provider, or it is turned off.');
    const methods = await signInMethodsOf(deps.db, user);
    if (!methods.linkable.some((provider) => provider.slug === row.slug)) {
      await renderPage(ctx, user, { link: `Your account is linked to ${row.name} already.` }, 409);
      return;
    }
    await startUpstream(ctx, deps, openProvider(row, deps.cipher), { intent: 'link', userId: user.id });
  });

  return router;
}
