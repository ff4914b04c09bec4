import Router, { type RouterContext } from '@koa/router';
import type { Context, Middleware } from 'koa';
import type Provider from 'oidc-provider';
import type { AuditRow } from '../db/audit.js';
import type { GroupRow } from '../db/groups.js';
import { ROLES, VISIBILITY_LEVELS, type Role } from '../vocabulary.js';
import { auditDetails, auditDetailsOf, exportedAuditEvent, presentAuditEvent } from '../presenters/audit.js';
import { sendNdjson } from '../http/ndjson.js';
import { AppError, NotFoundError } from '../errors.js';
import { accessOf, groupLoader } from '../http/load-group.js';
import { parseId } from '../ids.js';
import { canChangeMember, canGroup, type GroupAction } from '../policies/group.js';
import { pageLanguage, translateMessage, translator, type Language, type Translate } from '../i18n.js';
import {
  addMember,
  auditLogOf,
  groupAuditExport,
  changeRole,
  closedForTwoFactor,
  createGroup,
  currentRole,
  groupPathById,
  groupsOfUser,
  isLastOwner,
  LAST_OWNER_LEAVING,
  leaveGroup,
  membersOf,
  removeMember,
  TwoFactorRequiredError,
  updateGroupSettings,
  type GroupAccess,
} from '../services/groups.js';
import { deleteGroup, groupDeletionSummary, requireDeletionConfirmed } from '../services/group-deletion.js';
import * as rules from '../services/rules.js';
import { hasTwoFactor } from '../services/two-factor.js';
import { MAX_POLICY_DAYS } from '../policies/token-lifetime.js';
import { actorOf, formFields, requireUser, returnToQuery, type WebDeps } from './context.js';
import { formErrors, LABELS, sentence } from './form-errors.js';
import { createOnce, issueOnceKey, keepFormForBack, sentOnceKey, submissionOf } from './one-time-key.js';
import { render } from './render.js';
import { TWO_FACTOR_SETTINGS } from './two-factor-routes.js';

/** The levels as GitLab names them, each with who it is meant for, shown next to the choice (words: locales/<language>/groups.json). */
function visibilityLevels(t: Translate) {
  return VISIBILITY_LEVELS.map((value) => ({ value, label: t(`groups:visibility.${value}.label`), explanation: t(`groups:visibility.${value}.explanation`) }));
}

/** The roles with what each may do (policies/group.ts), in one line each, as the Members page explains them. */
function roles(t: Translate) {
  return ROLES.map((value) => ({ value, label: t(`groups:roles.${value}.label`), explanation: t(`groups:roles.${value}.explanation`) }));
}

/** A group form's labels in the page's language; the errors keep LABELS' English words, which render translates. */
function labelsOf(t: Translate, form: 'group' | 'member'): Record<string, string> {
  return Object.fromEntries(Object.keys(LABELS[form]).map((field) => [field, t(`groups:labels.${form}.${field}`)]));
}

/** The one-line notices of Post/Redirect/Get, chosen by a query flag (never echoing the query itself). */
const NOTICES: ReadonlySet<string> = new Set(['created', 'saved', 'added', 'role', 'removed', 'left', 'deleted', 'group-repeated', 'member-repeated']);

type Ctx = RouterContext;

/** Groups pages: the list of mine, a new group, a group and its settings. */
export function groupRoutes(deps: WebDeps & { provider: Provider }): Router {
  const { db } = deps;
  const router = new Router();
  const loadGroup = pageGroupLoader(deps);

  function settingsUrl(group: GroupRow, tab = ''): string {
    return `/groups/${encodeURIComponent(group.path)}/settings${tab ? `/${tab}` : ''}`;
  }

  function notice(ctx: Context, t: Translate): string | null {
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    return NOTICES.has(key) ? t(`groups:notices.${key}`) : null;
  }

  router.get('/groups', async (ctx) => {
    const user = requireUser(ctx);
    const actor = actorOf(ctx);
    const [{ items }, viewerHasTwoFactor] = await Promise.all([groupsOfUser(db, user.id, { limit: 200, offset: 0 }), hasTwoFactor(db, user.id)]);
    // Marked: the groups that require two-factor authentication, and those closed to this viewer until they turn it on.
    const groups = items.map((g) => ({ ...g, closedForTwoFactor: closedForTwoFactor(g, actor, viewerHasTwoFactor) }));
    const t = translator(pageLanguage(ctx));
    render(ctx, 'groups/index', { title: t('groups:titles.index'), groups, twoFactorSettings: TWO_FACTOR_SETTINGS, flash: notice(ctx, t) });
  });

  function renderNewGroup(ctx: Ctx, extra: { values: Record<string, string>; errors?: Record<string, string>; onceKey: string }, status = 200) {
    const t = translator(pageLanguage(ctx));
    render(ctx, 'groups/new', {
      title: t('groups:titles.new'),
      labels: labelsOf(t, 'group'),
      visibilityLevels: visibilityLevels(t),
      ...extra,
    }, status);
  }

  router.get('/groups/new', (ctx) => {
    requireUser(ctx);
    renderNewGroup(ctx, { values: { visibilityLevel: 'private' }, onceKey: issueOnceKey(ctx) });
    keepFormForBack(ctx);
  });

  router.post('/groups/new', async (ctx) => {
    const actor = actorOf(ctx);
    const form = formFields(ctx);
    const values = {
      name: form.name ?? '',
      path: form.path ?? '',
      description: form.description ?? '',
      visibilityLevel: form.visibilityLevel || 'private',
    };
    try {
      const outcome = await createOnce(db, () => createGroup(db, actor, values, submissionOf(ctx, 'group')));
      if ('created' in outcome) {
        ctx.redirect(`/groups/${encodeURIComponent(outcome.created.path)}?notice=created`);
        return;
      }
      const path = outcome.repeated ? await groupPathById(db, Number(outcome.repeated)) : undefined;
      ctx.redirect(path ? `/groups/${encodeURIComponent(path)}?notice=group-repeated` : '/groups');
    } catch (err) {
      const errors = formErrors(err, LABELS.group);
      if (!errors) throw err;
      renderNewGroup(ctx, { values, errors, onceKey: sentOnceKey(ctx) }, (err as AppError).status);
    }
  });

  async function renderShow(ctx: Ctx, access: GroupAccess, problem: string | null = null, status = 200) {
    const { group, role } = access;
    const members = await membersOf(db, access);
    const lang = pageLanguage(ctx);
    const t = translator(lang);
    render(ctx, 'groups/show', {
      title: group.name,
      group,
      role,
      members,
      settingsUrl: firstSettingsTab(group, role),
      lastOwner: isLastOwner(access, members) ? `${translateMessage(sentence(LAST_OWNER_LEAVING), lang)}${t('common:sentenceEnd')}` : null,
      visibilityLevels: visibilityLevels(t),
      problem,
      flash: notice(ctx, t),
    }, status);
  }

  router.get('/groups/:path', loadGroup('read'), async (ctx) => {
    await renderShow(ctx, accessOf(ctx));
  });

  // Leaving: any member, from the group's page; the last owner is told why not there.
  router.post('/groups/:path/leave', loadGroup('leave'), async (ctx) => {
    const access = accessOf(ctx);
    try {
      await leaveGroup(db, access);
    } catch (err) {
      if (!(err instanceof AppError && err.field)) throw err;
      const lang = pageLanguage(ctx);
      const reason = translateMessage(sentence(err.message), lang);
      await renderShow(ctx, access, translator(lang)('groups:show.couldNotLeave', { group: access.group.name, reason }), err.status);
      return;
    }
    ctx.redirect('/groups?notice=left');
  });

  router.get('/groups/:path/leave', loadGroup('leave'), (ctx) => {
    ctx.redirect(`/groups/${encodeURIComponent(accessOf(ctx).group.path)}`);
  });

  // Settings: General.
  function renderGeneral(ctx: Ctx, group: GroupRow, extra: { values?: Record<string, string | boolean>; errors?: Record<string, string> } = {}, status = 200) {
    const t = translator(pageLanguage(ctx));
    render(ctx, 'groups/settings/general', {
      title: t('groups:titles.settings', { group: group.name }),
      group,
      tab: 'general',
      values: extra.values ?? {
        name: group.name,
        description: group.description,
        visibilityLevel: group.visibility_level,
        requireTwoFactor: Boolean(group.require_two_factor),
        personalTokenMaxLifetimeDays: group.personal_token_max_lifetime_days === null ? '' : String(group.personal_token_max_lifetime_days),
      },
      maxLifetimeDays: MAX_POLICY_DAYS,
      errors: extra.errors ?? {},
      labels: labelsOf(t, 'group'),
      visibilityLevels: visibilityLevels(t),
      flash: notice(ctx, t),
    }, status);
  }

  router.get('/groups/:path/settings', loadGroup('manage-settings'), (ctx) => {
    renderGeneral(ctx, accessOf(ctx).group);
  });

  router.post('/groups/:path/settings', loadGroup('manage-settings'), async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const form = formFields(ctx);
    const values = {
      name: form.name ?? '',
      description: form.description ?? '',
      visibilityLevel: form.visibilityLevel ?? '',
      requireTwoFactor: form.requireTwoFactor === 'on',
      personalTokenMaxLifetimeDays: (form.personalTokenMaxLifetimeDays ?? '').trim(),
    };
    try {
      await updateGroupSettings(db, access, { ...values, personalTokenMaxLifetimeDays: daysField(values.personalTokenMaxLifetimeDays) });
      ctx.redirect(`${settingsUrl(group)}?notice=saved`);
    } catch (err) {
      const errors = formErrors(err, LABELS.group);
      if (!errors) throw err;
      renderGeneral(ctx, group, { values, errors }, (err as AppError).status);
    }
  });

  // Settings: Members.
  async function renderMembers(
    ctx: Ctx,
    access: GroupAccess,
    extra: { values?: Record<string, string>; errors?: Record<string, string>; problem?: string; onceKey?: string } = {},
    status = 200,
  ) {
    const { group, actor, role } = access;
    const members = (await membersOf(db, access)).map((m) => ({ ...m, mayChange: canChangeMember(role, { from: m.role }) }));
    const t = translator(pageLanguage(ctx));
    const allRoles = roles(t);
    render(ctx, 'groups/settings/members', {
      title: t('groups:titles.members', { group: group.name }),
      group,
      tab: 'members',
      can: canOf(role),
      members,
      actorId: actor.userId,
      roles: allRoles,
      // The roles this actor may give: a maintainer's choices leave out owner.
      grantable: allRoles.filter((r) => canChangeMember(role, { to: r.value })),
      values: extra.values ?? { role: 'member' },
      errors: extra.errors ?? {},
      labels: labelsOf(t, 'member'),
      onceKey: extra.onceKey ?? issueOnceKey(ctx),
      problem: extra.problem ?? null,
      flash: notice(ctx, t),
    }, status);
  }

  router.get('/groups/:path/settings/members', loadGroup('manage-members'), async (ctx) => {
    await renderMembers(ctx, accessOf(ctx));
    keepFormForBack(ctx);
  });

  router.post('/groups/:path/settings/members', loadGroup('manage-members'), async (ctx) => {
    const access = accessOf(ctx);
    const form = formFields(ctx);
    const values = { user: form.user ?? '', role: form.role ?? '' };
    try {
      const outcome = await createOnce(db, () => addMember(db, access, values, submissionOf(ctx, 'member')));
      ctx.redirect(`${settingsUrl(access.group, 'members')}?notice=${'created' in outcome ? 'added' : 'member-repeated'}`);
    } catch (err) {
      const errors = formErrors(err, LABELS.member);
      if (!errors) throw err;
      await renderMembers(ctx, access, { values, errors, onceKey: sentOnceKey(ctx) }, (err as AppError).status);
    }
  });

  // A refused role change or removal is shown at its form's address: that address answers a GET too.
  router.get(['/groups/:path/settings/members/:userId/role', '/groups/:path/settings/members/:userId/remove'], loadGroup('manage-members'), (ctx) => {
    ctx.redirect(settingsUrl(accessOf(ctx).group, 'members'));
  });

  /** Role changes and removals: a refused change (the last-owner rule) is shown on the members page. */
  async function changeMember(ctx: Ctx, verb: 'change the role of' | 'remove', change: (access: GroupAccess, userId: number) => Promise<void>) {
    const access = accessOf(ctx);
    const { actor, group } = access;
    const userId = memberId(ctx.params.userId);
    try {
      await change(access, userId);
    } catch (err) {
      if (!(err instanceof AppError && err.field)) throw err;
      const member = (await membersOf(db, access)).find((m) => m.user_id === userId);
      const lang = pageLanguage(ctx);
      const t = translator(lang);
      const problem = t(verb === 'remove' ? 'groups:members.couldNotRemove' : 'groups:members.couldNotChangeRole', {
        username: member?.username ?? t('groups:members.thisMember'),
        reason: translateMessage(err.message, lang),
      });
      await renderMembers(ctx, access, { problem }, err.status);
      return;
    }
    // Whoever just gave up their own ownership can no longer see the settings.
    if (userId === actor.userId && !canGroup(await currentRole(db, access), 'manage-members')) {
      ctx.redirect(verb === 'remove' ? '/groups' : `/groups/${encodeURIComponent(group.path)}`);
      return;
    }
    ctx.redirect(`${settingsUrl(group, 'members')}?notice=${verb === 'remove' ? 'removed' : 'role'}`);
  }

  router.post('/groups/:path/settings/members/:userId/role', loadGroup('manage-members'), (ctx) =>
    changeMember(ctx, 'change the role of', (access, userId) => changeRole(db, access, userId, formFields(ctx).role ?? '')));

  router.post('/groups/:path/settings/members/:userId/remove', loadGroup('manage-members'), (ctx) =>
    changeMember(ctx, 'remove', (access, userId) => removeMember(db, access, userId)));

  // Settings: Audit log.
  router.get('/groups/:path/settings/audit', loadGroup('read-audit'), async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const lang = pageLanguage(ctx);
    const events = (await auditLogOf(db, access)).map((row) => groupAuditEvent(row, lang));
    render(ctx, 'groups/settings/audit', { title: translator(lang)('groups:titles.audit', { group: group.name }), group, tab: 'audit', can: canOf(access.role), events });
  });

  // Settings: Audit log → Download: the whole log as NDJSON, read a batch at a time.
  router.get('/groups/:path/settings/audit/download', loadGroup('read-audit'), async (ctx) => {
    const access = accessOf(ctx);
    await sendNdjson(ctx, `audit-${access.group.path}.ndjson`, groupAuditExport(db, access), exportedAuditEvent);
  });

  // Settings: Delete the group, after a page naming what goes with it and asking for its path.
  async function renderDelete(ctx: Ctx, access: GroupAccess, errors: Record<string, string> = {}, status = 200) {
    const { group } = access;
    const t = translator(pageLanguage(ctx));
    render(ctx, 'groups/settings/delete', {
      title: t('groups:titles.delete', { group: group.name }),
      group,
      tab: 'general',
      summary: await groupDeletionSummary(db, access),
      values: { confirm: '' },
      errors,
    }, status);
  }

  router.get('/groups/:path/settings/delete', loadGroup('delete-group'), async (ctx) => {
    await renderDelete(ctx, accessOf(ctx));
  });

  router.post('/groups/:path/settings/delete', loadGroup('delete-group'), async (ctx) => {
    const access = accessOf(ctx);
    try {
      requireDeletionConfirmed(access, formFields(ctx).confirm);
    } catch (err) {
      if (!(err instanceof AppError && err.field)) throw err;
      await renderDelete(ctx, access, { [err.field]: err.message }, err.status);
      return;
    }
    await deleteGroup(db, deps.provider, access);
    ctx.redirect('/groups?notice=deleted');
  });

  // Settings: Developer lives in app-routes.ts.

  return router;
}

/**
 * `loadGroup(action)` for the pages under `/groups/:path`. Sign-in comes first (a signed-out
 * visitor learns nothing about which paths exist); an unknown path and a group one cannot see
 * read the same; a settings page answers 403 to anyone whose role does not open it, member or
 * not. A member the group refuses for want of two-factor authentication is sent (303) to turn it
 * on, with the page they asked for (a GET's; else the group's) to come back to.
 */
export function pageGroupLoader(deps: WebDeps): (action: GroupAction) => Middleware {
  const load = groupLoader({
    db: deps.db,
    actorOf,
    refOf: (ctx) => {
      const path = rules.groupPath.safeParse(ctx.params.path?.toLowerCase());
      return path.success ? { path: path.data } : undefined;
    },
    outsiders: 'forbidden',
    notFound: 'There is no group at this address, or you are not a member of it.',
  });
  return (action) => {
    const loadGroup = load(action);
    return async function loadGroupOrTurnOnTwoFactor(ctx, next) {
      try {
        await loadGroup(ctx, next);
      } catch (err) {
        // Only the loading step's refusal: the route itself ran for a member the group let in.
        if (!(err instanceof TwoFactorRequiredError) || ctx.state.access) throw err;
        const back = ctx.method === 'GET' ? ctx.path : `/groups/${encodeURIComponent(String(ctx.params.path ?? '').toLowerCase())}`;
        ctx.redirect(`${TWO_FACTOR_SETTINGS}${returnToQuery(back)}`);
        ctx.status = 303;
      }
    };
  };
}

/** The settings tabs' test of what the viewer may open (views/groups/_settings_header.ejs). */
function canOf(role: Role | undefined): (action: GroupAction) => boolean {
  return (action) => canGroup(role, action);
}

/** Where the group page's Settings button leads: General for an owner, Members for a maintainer, nowhere for a member. */
function firstSettingsTab(group: GroupRow, role: Role | undefined): string | null {
  const base = `/groups/${encodeURIComponent(group.path)}/settings`;
  if (canGroup(role, 'manage-settings')) return base;
  return canGroup(role, 'manage-members') ? `${base}/members` : null;
}

/** The lifetime cap as typed: empty is no limit, digits a number of days, anything else a number the rules refuse. */
function daysField(value: string): number | null {
  if (value === '') return null;
  return /^[0-9]{1,6}$/.test(value) ? Number(value) : NaN;
}

function memberId(value: string | undefined): number {
  const id = parseId(value);
  if (id === undefined) throw new NotFoundError('that user is not a member of this group');
  return id;
}

/** Revocations a report of leaked credentials made: no person acted. */
const REPORTED_ACTIONS = new Set(['app.secret.report.revoke', 'app.token.report.revoke']);

/**
 * An audit row as the group's log in `lang` shows it: the actor ("deleted user", or "—": the admin
 * CLI), the action in words, the details with the fields named by the form's labels.
 */
function groupAuditEvent(row: AuditRow, lang: Language) {
  const t = translator(lang);
  const [form, fields]: [string, Record<string, string>] = row.action.startsWith('app.')
    ? ['audit:_appFields', LABELS.app]
    : row.action.startsWith('webhook.') ? ['webhooks:labels', LABELS.webhook]
      : row.action.startsWith('resource.') ? ['resources:labels', LABELS.resource] : ['groups:labels.group', LABELS.group];
  const details = auditDetails(auditDetailsOf(row), (field) => (Object.hasOwn(fields, field) ? t(`${form}.${field}`) : field), lang);
  const actor = row.actor_username
    ?? (row.actor_client_id ? t('groups:audit.application', { name: row.actor_app_name ?? row.actor_client_id }) : undefined)
    ?? (row.actor_deleted ? t('groups:audit.deletedUser') : REPORTED_ACTIONS.has(row.action) ? t('groups:audit.leakReport') : '—');
  return presentAuditEvent(row, actor, details, lang);
}
