import Router from '@koa/router';
import type { Context, Next } from 'koa';
import type Provider from 'oidc-provider';
import type { AuditRow } from '../db/audit.js';
import { auditDetails, auditDetailsOf, exportedAuditEvent, presentAuditEvent } from '../presenters/audit.js';
import { presentAdminUser } from '../presenters/user.js';
import { sendNdjson } from '../http/ndjson.js';
import type { UserRow } from '../db/users.js';
import { NotFoundError } from '../errors.js';
import { parseId } from '../ids.js';
import { isDisabled, isSiteAdmin } from '../policies/site.js';
import { disableUser, enableUser, findUsers, requireUserById, resetTwoFactor, sendPasswordReset, siteAuditExport, siteAuditLog } from '../services/admin.js';
import { listPasskeys } from '../services/passkeys.js';
import { twoFactorStatus } from '../services/two-factor.js';
import { signedInUserById } from '../services/users.js';
import { adminClientRegistrationRoutes } from './admin-client-registration-routes.js';
import { adminProviderRoutes } from './admin-provider-routes.js';
import { actorOf, type WebDeps } from './context.js';
import { type Language, pageLanguage, pageT, translator } from '../i18n.js';
import { render } from './render.js';
import { noticeToOwner } from './security-notice.js';

const BASE = '/admin';
const PAGE_SIZE = 20;
const MAX_QUERY = 100;

/** The notices of a user's page after an action (`?notice=`), their words in admin.json's `userNotices`. */
const NOTICES: ReadonlySet<string> = new Set(['disabled', 'enabled', 'already-disabled', 'already-enabled', 'reset-sent', 'two-factor-reset', 'two-factor-off']);

/** Whether a path belongs to the Admin area. */
function isAdminPath(path: string): boolean {
  return path === BASE || path.startsWith(`${BASE}/`);
}

/**
 * Whether the Admin area must stay out of sight for this request: anyone but a signed-in site
 * administrator gets exactly what an unknown address gets, for every method (a form posted
 * without a token included), so nobody learns the area exists.
 */
export function adminAreaHidden(deps: WebDeps) {
  return async function hidden(ctx: Context): Promise<boolean> {
    if (!isAdminPath(ctx.path)) return false;
    try {
      const accountId = await deps.sessions.accountId(ctx);
      return !isSiteAdmin(accountId ? await signedInUserById(deps.db, accountId) : undefined);
    } catch {
      // Storage away: nobody can be told apart from a visitor, so the area stays hidden.
      return true;
    }
  };
}

/** A query parameter as one string: the first of a repeated one, '' for none. */
function firstValue(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** The page number of a list (`?page=`): a whole number from 1, anything else the first page. */
function pageOf(ctx: Context): { number: number; limit: number; offset: number } {
  const raw = firstValue(ctx.query.page);
  const number = /^[1-9][0-9]{0,5}$/.test(raw) ? Number(raw) : 1;
  return { number, limit: PAGE_SIZE, offset: (number - 1) * PAGE_SIZE };
}

/** Links to the previous and next pages of a list, keeping its other parameters. */
function pagination(path: string, page: { number: number }, total: number, params: Record<string, string> = {}) {
  const last = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const href = (n: number) => `${path}?${new URLSearchParams({ ...params, page: String(n) }).toString()}`;
  return {
    number: page.number,
    last,
    // 0 past the last page: nothing is shown there.
    first: (page.number - 1) * PAGE_SIZE < total ? (page.number - 1) * PAGE_SIZE + 1 : 0,
    end: Math.min(total, page.number * PAGE_SIZE),
    total,
    previous: page.number > 1 ? href(Math.min(page.number - 1, last)) : null,
    next: page.number < last ? href(page.number + 1) : null,
  };
}

/** A site audit row as the log in `lang` shows it: the administrator, "CLI", or "—" for a deleted account. */
function siteAuditEvent(row: AuditRow, lang: Language) {
  const { via, ...rest } = auditDetailsOf(row);
  return presentAuditEvent(row, row.actor_username ?? (via === 'cli' ? 'CLI' : '—'), auditDetails(rest, undefined, lang), lang);
}

/**
 * The Admin area: every user (search, pages), a user's page with Disable, Enable and Send
 * password reset, and the admin audit log. Site administrators only; to anyone else it does not
 * exist (see adminAreaHidden, and the same 404 here should a request reach it anyway).
 */
export function adminRoutes(deps: WebDeps & { provider: Provider }): Router {
  const { db } = deps;
  const router = new Router({ prefix: BASE });

  router.use(async function onlySiteAdmins(ctx: Context, next: Next) {
    if (!isSiteAdmin(ctx.state.user as UserRow | undefined)) throw new NotFoundError('There is nothing at this address.');
    await next();
  });

  async function targetUser(ctx: Context): Promise<UserRow> {
    const id = parseId(ctx.params.id);
    if (id === undefined) throw new NotFoundError('There is no such user.');
    return requireUserById(db, id);
  }

  const userUrl = (user: { id: number }) => `${BASE}/users/${user.id}`;

  router.get('/', (ctx) => ctx.redirect(`${BASE}/users`));

  router.get('/users', async (ctx) => {
    const query = firstValue(ctx.query.q).trim().slice(0, MAX_QUERY);
    const page = pageOf(ctx);
    const { total, items } = await findUsers(db, query, page);
    render(ctx, 'admin/users', {
      title: pageT(ctx)('admin:titles.users'),
      tab: 'users',
      query,
      users: items.map(presentAdminUser),
      pages: pagination(`${BASE}/users`, page, total, query ? { q: query } : {}),
    });
  });

  router.get('/users/:id', async (ctx) => {
    const user = await targetUser(ctx);
    const key = firstValue(ctx.query.notice);
    const t = pageT(ctx);
    render(ctx, 'admin/user', {
      title: t('admin:titles.user', { username: user.username }),
      tab: 'users',
      user: presentAdminUser(user),
      twoFactor: await twoFactorStatus(db, user.id),
      passkeyCount: (await listPasskeys(db, user.id)).length,
      self: user.id === actorOf(ctx).userId,
      flash: NOTICES.has(key) ? t(`admin:userNotices.${key}`) : null,
    });
  });

  router.get('/users/:id/disable', async (ctx) => {
    const user = await targetUser(ctx);
    if (isDisabled(user)) return ctx.redirect(userUrl(user));
    render(ctx, 'admin/disable', { title: pageT(ctx)('admin:titles.disable', { username: user.username }), tab: 'users', user: presentAdminUser(user) });
  });

  router.post('/users/:id/disable', async (ctx) => {
    const user = await targetUser(ctx);
    const { changed } = await disableUser(deps, actorOf(ctx), user);
    ctx.redirect(`${userUrl(user)}?notice=${changed ? 'disabled' : 'already-disabled'}`);
  });

  router.post('/users/:id/enable', async (ctx) => {
    const user = await targetUser(ctx);
    const changed = await enableUser(db, actorOf(ctx), user);
    ctx.redirect(`${userUrl(user)}?notice=${changed ? 'enabled' : 'already-enabled'}`);
  });

  router.post('/users/:id/password-reset', async (ctx) => {
    const user = await targetUser(ctx);
    await sendPasswordReset(deps, actorOf(ctx), user);
    ctx.redirect(`${userUrl(user)}?notice=reset-sent`);
  });

  router.post('/users/:id/two-factor-reset', async (ctx) => {
    const user = await targetUser(ctx);
    const changed = await resetTwoFactor(db, actorOf(ctx), user);
    // The owner learns of it: an administrator's account in the wrong hands could strip a second factor too.
    if (changed) noticeToOwner(deps, ctx, user, 'two-factor-reset');
    ctx.redirect(`${userUrl(user)}?notice=${changed ? 'two-factor-reset' : 'two-factor-off'}`);
  });

  adminProviderRoutes(router, deps);
  adminClientRegistrationRoutes(router, deps);

  router.get('/audit', async (ctx) => {
    const page = pageOf(ctx);
    const { total, items } = await siteAuditLog(db, page);
    const lang = pageLanguage(ctx);
    render(ctx, 'admin/audit', {
      title: translator(lang)('admin:titles.audit'),
      tab: 'audit',
      events: items.map((row) => siteAuditEvent(row, lang)),
      pages: pagination(`${BASE}/audit`, page, total),
      download: `${BASE}/audit/download`,
    });
  });

  // The whole site log as NDJSON, read a batch at a time.
  router.get('/audit/download', async (ctx) => {
    await sendNdjson(ctx, 'audit-site.ndjson', siteAuditExport(db), exportedAuditEvent);
  });

  return router;
}
