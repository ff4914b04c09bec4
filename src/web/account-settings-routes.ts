import Router from '@koa/router';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { UserRow } from '../db/users.js';
import { presentSession } from '../presenters/session.js';
import { changePassword, deleteAccount, deleteConfirmedAccount, groupsOnlyOwnedBy, LastOwnerError, setLanguage, updateProfile } from '../services/account.js';
import { ValidationError } from '../errors.js';
import { LinkRefusedError } from '../services/account-links.js';
import { confirmEmailChange, emailChangeOf, pendingEmailChange } from '../services/email-change.js';
import { listSessions, signOutEverywhere, signOutSession } from '../services/sessions.js';
import { explainRefusedLink, renderRefusedLink } from './account-link-routes.js';
import { formFields, requireUser, seenFrom, type WebDeps } from './context.js';
import { formErrorsOrRetry, formStatus, LABELS } from './form-errors.js';
import type { AccessConfirmation } from './confirm-access.js';
import { render } from './render.js';
import { asLanguage, LANGUAGES, negotiateLanguage, pageLanguage, pageT } from '../i18n.js';
import { SIGN_IN_METHODS } from './sign-in-methods-routes.js';
import { hasPassword } from '../services/passwords.js';

const BASE = '/account/settings';

/** Each `?notice=` to its sentence's key (account:notices). */
const NOTICES: Record<string, string> = {
  'profile-saved': 'profileSaved',
  'language-saved': 'languageSaved',
  'email-pending': 'profileSaved',
  'email-changed': 'emailChanged',
  'password-changed': 'passwordChanged',
  'session-signed-out': 'sessionSignedOut',
  'others-signed-out': 'othersSignedOut',
};

/**
 * Account settings → Profile, Password, Sessions and Delete account. Each form carries the CSRF
 * token, shows its errors next to its fields, and redirects after success (Post/Redirect/Get).
 */
export function accountSettingsRoutes(deps: WebDeps & { provider: Provider }, access: AccessConfirmation): Router {
  const router = new Router();

  /** The page's notice in its language. */
  function notice(ctx: Context): string | null {
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    return Object.hasOwn(NOTICES, key) ? pageT(ctx)(`account:notices.${NOTICES[key]}`) : null;
  }

  async function renderProfile(ctx: Context, user: UserRow, values: { name: string; email: string }, errors: Record<string, string> = {}, status = 200) {
    render(ctx, 'account/settings/profile', {
      title: pageT(ctx)('account:titles.profile'),
      tab: 'profile',
      values,
      errors,
      labels: LABELS.profile,
      // An account without a password confirms a new address through Confirm access instead.
      password: hasPassword(user.password_hash),
      email: user.email,
      emailVerified: Boolean(user.email_verified_at),
      // A new address waiting for its link looks the same whether or not another account has it.
      pendingEmail: await pendingEmailChange(deps.db, user.id),
      flash: notice(ctx),
      language: { chosen: asLanguage(user.language) ?? '', browser: negotiateLanguage(ctx), all: LANGUAGES },
    }, status);
  }

  router.get(`${BASE}/profile`, async (ctx) => {
    const user = requireUser(ctx);
    await renderProfile(ctx, user, { name: user.name, email: user.email });
  });

  const confirmOwnerForNewAddress = access.required('change-email');
  router.post(`${BASE}/profile`, async (ctx, next) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    // An account without a password changes its address after Confirm access, as the account's owner.
    if (hasPassword(user.password_hash) || (form.email ?? '') === user.email) return next();
    return confirmOwnerForNewAddress(ctx, async () => {
      ctx.state.ownerConfirmed = true;
      await next();
    });
  }, async (ctx) => {
    const user = requireUser(ctx);
    const form = formFields(ctx);
    const values = { name: form.name ?? '', email: form.email ?? '' };
    try {
      const { emailChangeStarted } = await updateProfile(deps, user, { ...values, currentPassword: form.current_password ?? '', confirmed: ctx.state.ownerConfirmed === true }, seenFrom(ctx));
      ctx.redirect(`${BASE}/profile?notice=${emailChangeStarted ? 'email-pending' : 'profile-saved'}`);
    } catch (err) {
      const errors = formErrorsOrRetry(ctx, err, 'current_password', LABELS.profile);
      if (!errors) throw err;
      await renderProfile(ctx, user, values, errors, formStatus(err));
    }
  });

  // The language needs no password: it changes nothing anyone could use.
  router.post(`${BASE}/language`, async (ctx) => {
    const user = requireUser(ctx);
    try {
      await setLanguage(deps.db, user, formFields(ctx).language ?? '');
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      return renderProfile(ctx, user, { name: user.name, email: user.email }, { language: err.message }, 400);
    }
    ctx.redirect(`${BASE}/profile?notice=language-saved`);
  });

  // The link mailed to a new address: checked first (an unusable one says so to anyone), then made
  // only for the account that asked, signed in (a sign-in comes back here).
  router.get('/change-email', async (ctx) => {
    if (!(await explainRefusedLink(ctx, () => emailChangeOf(deps.db, ctx.query.token)))) return;
    const user = requireUser(ctx);
    try {
      await confirmEmailChange(deps, user, ctx.query.token, seenFrom(ctx));
    } catch (err) {
      if (err instanceof LinkRefusedError) return renderRefusedLink(ctx, err);
      throw err;
    }
    ctx.redirect(`${BASE}/profile?notice=email-changed`);
  });

  function renderPassword(ctx: Context, errors: Record<string, string> = {}, status = 200) {
    render(ctx, 'account/settings/password', { title: pageT(ctx)('account:titles.password'), tab: 'password', errors, labels: LABELS.password, flash: notice(ctx) }, status);
  }

  // An account made by an upstream sign-in has no current password to ask for: it sets a first one.
  router.get(`${BASE}/password`, (ctx) => {
    if (!hasPassword(requireUser(ctx).password_hash)) return ctx.redirect(SIGN_IN_METHODS);
    renderPassword(ctx);
  });

  router.post(`${BASE}/password`, async (ctx) => {
    const user = requireUser(ctx);
    if (!hasPassword(user.password_hash)) return ctx.redirect(SIGN_IN_METHODS);
    const form = formFields(ctx);
    try {
      await changePassword(
        deps,
        user,
        { currentPassword: form.current_password ?? '', password: form.password ?? '', confirmation: form.password_confirmation ?? '' },
        { ...seenFrom(ctx), currentSessionUid: await deps.sessions.uid(ctx) },
      );
      ctx.redirect(`${BASE}/password?notice=password-changed`);
    } catch (err) {
      const errors = formErrorsOrRetry(ctx, err, 'current_password', LABELS.password);
      if (!errors) throw err;
      renderPassword(ctx, errors, formStatus(err));
    }
  });

  router.get(`${BASE}/sessions`, async (ctx) => {
    const user = requireUser(ctx);
    const current = await deps.sessions.uid(ctx);
    const lang = pageLanguage(ctx);
    const sessions = (await listSessions(deps, user.id)).map((row) => presentSession(row, current, lang));
    render(ctx, 'account/settings/sessions', { title: pageT(ctx)('account:titles.sessions'), tab: 'sessions', sessions, flash: notice(ctx) });
  });

  // The addresses the Sessions forms post to, opened on their own: the list.
  router.get([`${BASE}/sessions/sign-out-others`, `${BASE}/sessions/:uid/sign-out`], (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${BASE}/sessions`);
  });

  router.post(`${BASE}/sessions/sign-out-others`, async (ctx) => {
    const user = requireUser(ctx);
    await signOutEverywhere(deps, user.id, { except: await deps.sessions.uid(ctx) });
    ctx.redirect(`${BASE}/sessions?notice=others-signed-out`);
  });

  router.post(`${BASE}/sessions/:uid/sign-out`, async (ctx) => {
    const user = requireUser(ctx);
    const uid = String(ctx.params.uid ?? '');
    const current = uid === (await deps.sessions.uid(ctx));
    await signOutSession(deps, user.id, uid);
    if (current) {
      await deps.sessions.signOut(ctx);
      ctx.redirect('/login');
      return;
    }
    ctx.redirect(`${BASE}/sessions?notice=session-signed-out`);
  });

  async function renderDelete(ctx: Context, user: UserRow, errors: Record<string, string> = {}, status = 200) {
    render(ctx, 'account/settings/delete', {
      title: pageT(ctx)('account:titles.delete'),
      tab: 'delete',
      errors,
      labels: LABELS.deleteAccount,
      password: hasPassword(user.password_hash),
      ownedGroups: await groupsOnlyOwnedBy(deps.db, user.id),
    }, status);
  }

  router.get(`${BASE}/delete`, async (ctx) => {
    await renderDelete(ctx, requireUser(ctx));
  });

  // An account without a password (made by an upstream sign-in) confirms through Confirm access.
  router.post(`${BASE}/delete`, async (ctx, next) => {
    if (hasPassword(requireUser(ctx).password_hash)) return next();
    return access.required('delete-account')(ctx, async () => {
      ctx.state.ownerConfirmed = true;
      await next();
    });
  }, async (ctx) => {
    const user = requireUser(ctx);
    try {
      if (ctx.state.ownerConfirmed === true) await deleteConfirmedAccount(deps, user, ctx.ip);
      else await deleteAccount(deps, user, formFields(ctx).password ?? '', ctx.ip);
    } catch (err) {
      // The page itself names the groups a last owner must hand over first.
      const errors = err instanceof LastOwnerError ? {} : formErrorsOrRetry(ctx, err, 'password', LABELS.deleteAccount);
      if (!errors) throw err;
      await renderDelete(ctx, user, errors, formStatus(err));
      return;
    }
    await deps.sessions.signOut(ctx);
    ctx.redirect('/account/deleted');
  });

  router.get('/account/deleted', (ctx) => {
    render(ctx, 'account/deleted', { title: pageT(ctx)('account:titles.deleted') });
  });

  return router;
}
