import Router from '@koa/router';
import type Provider from 'oidc-provider';
import type { Context, Next } from 'koa';
import type { AppRow } from '../db/apps.js';
import type { GroupRow } from '../db/groups.js';
import { ConflictError, NotFoundError, type AppError } from '../errors.js';
import { accessOf } from '../http/load-group.js';
import { parseId } from '../ids.js';
import { presentApp, presentSecret } from '../presenters/app.js';
import {
  applicationOfGroup,
  applicationsOf,
  authorizedUsersOf,
  createApplication,
  deleteApplication,
  generateClientSecret,
  isPublic,
  MAX_ACTIVE_SECRETS,
  revokeAllUserTokens,
  revokeClientSecret,
  secretsOf,
  signOutUrlsOf,
  updateApplication,
  type AppAccess,
  type NewSecret,
} from '../services/apps.js';
import { formFields, type WebDeps } from './context.js';
import { flashBox } from './flash.js';
import { formErrors, LABELS } from './form-errors.js';
import { createOnce, issueOnceKey, keepFormForBack, sentOnceKey, submissionOf } from './one-time-key.js';
import { pageGroupLoader } from './group-routes.js';
import { render } from './render.js';

type Ctx = Context;

/** An application's fields with the labels people know from GitHub, and the sign-out URLs; the form field names are the API's. */
const FIELDS = ['name', 'homepageURL', 'description', 'callbackURL', 'signOutRedirectURLs'] as const;
/** The two switches, checkboxes: an unchecked one sends nothing, which is off. */
const SWITCHES = ['deviceFlow', 'requirePushedAuthorizationRequests'] as const;
type AppForm = Record<(typeof FIELDS)[number], string> & Record<(typeof SWITCHES)[number], boolean>;
const EMPTY_FORM: AppForm = { name: '', homepageURL: '', description: '', callbackURL: '', signOutRedirectURLs: '', deviceFlow: false, requirePushedAuthorizationRequests: false };

const SHOWN_ONCE = 'was shown once, on the page after it was made, and is not shown again: only a digest is stored. If it was not copied, generate a new one and revoke the old one.';

const NOTICES: Record<string, string> = {
  created: `Application created. Its client secret ${SHOWN_ONCE}`,
  'secret-created': `New client secret generated. It ${SHOWN_ONCE}`,
  'app-repeated': `This form was submitted already: this is the application it created. Its client secret ${SHOWN_ONCE}`,
  'secret-repeated': `This form was submitted already: the client secret it generated is listed below. It ${SHOWN_ONCE}`,
  updated: 'Application updated.',
  'callback-changed': 'Application updated. Its authorization callback URL changed, so every user\'s authorization of it ended: each must authorize it again.',
  'secret-revoked': 'Client secret revoked. It no longer authenticates.',
  deleted: 'Application deleted. Its codes and tokens no longer work.',
  'tokens-revoked': 'Every user token of this application is revoked. Its users must authorize it again.',
};

/** A public application has no client secret, so the notices of its creation say so instead of speaking of one. */
const PUBLIC_NOTICES: Record<string, string> = {
  created: 'Application created. It is public: it has no client secret, and every authorization must use PKCE (S256).',
  'app-repeated': 'This form was submitted already: this is the application it created. It is public: it has no client secret.',
};

/** The two application types, with what each is for, as the new-application form offers them. */
const CLIENT_TYPES = [
  { value: 'confidential', label: 'Confidential', explanation: 'A server that can keep a client secret; it authenticates with it when it exchanges a code.' },
  { value: 'public', label: 'Public', explanation: 'A native or single-page app that cannot keep a secret: no secret, and every authorization must use PKCE (S256).' },
] as const;

/** The type chosen on the new-application form (the service refuses anything but the two). */
function clientTypeOf(ctx: Ctx): string {
  return formFields(ctx).type || 'confidential';
}

/** The Developer page shows at most this many applications; the API pages through any number. */
const LIST_LIMIT = 200;

function appForm(ctx: Ctx): AppForm {
  const form = formFields(ctx);
  return {
    ...Object.fromEntries(FIELDS.map((field) => [field, form[field] ?? ''])),
    ...Object.fromEntries(SWITCHES.map((field) => [field, form[field] === 'on'])),
  } as AppForm;
}

/** The sign-out URLs box's lines, trimmed, each with its line number (from 1), blank lines left out. */
function signOutLines(values: AppForm): Array<{ url: string; line: number }> {
  return values.signOutRedirectURLs.split(/\r?\n/).map((text, i) => ({ url: text.trim(), line: i + 1 })).filter(({ url }) => url !== '');
}

/** The form as the services take it: the sign-out URLs are one a line in their text box, blank lines ignored. */
function appInput(values: AppForm) {
  return { ...values, signOutRedirectURLs: signOutLines(values).map(({ url }) => url) };
}

function formOf(app: AppRow): AppForm {
  return {
    name: app.name,
    homepageURL: app.homepage_url,
    description: app.description,
    callbackURL: app.callback_url,
    signOutRedirectURLs: signOutUrlsOf(app).join('\n'),
    deviceFlow: Boolean(app.device_flow),
    requirePushedAuthorizationRequests: Boolean(app.require_pushed_authorization_requests),
  };
}

/** A path segment that cannot be a secret id is the same as an unknown secret. */
function secretId(ctx: Ctx): number {
  const id = parseId(ctx.params.secretId);
  if (id === undefined) throw new NotFoundError('no such client secret');
  return id;
}

/**
 * Group settings → Developer: the OAuth applications of a group. Owners only, by
 * the same policy as the API (the services check it again on every change). Creating forms carry
 * a one-time key, and every POST that creates redirects to a page (Post/Redirect/Get): a new
 * secret reaches that page once, in the one-time flash, never in a URL.
 */
export function appRoutes(deps: WebDeps & { provider: Provider }): Router {
  const { db, provider } = deps;
  const router = new Router({ prefix: '/groups/:path/settings/developer' });

  const developerUrl = (group: GroupRow) => `/groups/${encodeURIComponent(group.path)}/settings/developer`;
  const appUrl = (group: GroupRow, app: AppRow) => `${developerUrl(group)}/apps/${encodeURIComponent(app.client_id)}`;

  function notice(ctx: Ctx, app?: AppRow): string | null {
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    return (app && isPublic(app) ? PUBLIC_NOTICES[key] : undefined) ?? NOTICES[key] ?? null;
  }

  const loadGroup = pageGroupLoader(deps);

  /**
   * After `ownersOnly` (the group of the URL, for its owners): the application of the URL, which must belong to
   * that group: an application of another group under this group's address is a 404, whoever asks.
   */
  const ownersOnly = loadGroup('manage-apps');
  async function loadApp(ctx: Context, next: Next) {
    try {
      ctx.state.access = await applicationOfGroup(db, accessOf(ctx), String(ctx.params.clientId ?? ''));
    } catch (err) {
      throw err instanceof NotFoundError ? new NotFoundError('This group has no application at this address.') : err;
    }
    await next();
  }
  const appAccess = (ctx: Ctx) => accessOf<AppAccess>(ctx);

  async function renderEdit(
    ctx: Ctx,
    access: AppAccess,
    extra: { values?: AppForm; errors?: Record<string, string>; newSecret?: { secret: string }; problem?: string; flash?: string } = {},
    status = 200,
  ) {
    const { group, app } = access;
    const secrets = (await secretsOf(db, access)).map(presentSecret);
    render(ctx, 'groups/settings/app', {
      title: `${app.name} · Developer · ${group.name}`,
      group,
      tab: 'developer',
      app: presentApp(app),
      appUrl: appUrl(group, app),
      developerUrl: developerUrl(group),
      secrets,
      isPublic: isPublic(app),
      authorizedUsers: await authorizedUsersOf(db, access),
      canGenerate: secrets.length < MAX_ACTIVE_SECRETS,
      maxSecrets: MAX_ACTIVE_SECRETS,
      newSecret: extra.newSecret ?? null,
      problem: extra.problem ?? null,
      values: extra.values ?? formOf(app),
      errors: extra.errors ?? {},
      labels: LABELS.app,
      onceKey: issueOnceKey(ctx),
      flash: extra.flash ?? notice(ctx, app),
    }, status);
  }

  function renderNew(ctx: Ctx, group: GroupRow, extra: { values?: AppForm & { type?: string }; errors?: Record<string, string>; onceKey?: string } = {}, status = 200) {
    render(ctx, 'groups/settings/app-new', {
      title: `New application · ${group.name}`,
      group,
      tab: 'developer',
      developerUrl: developerUrl(group),
      clientTypes: CLIENT_TYPES,
      values: extra.values ?? { ...EMPTY_FORM, type: 'confidential' },
      errors: extra.errors ?? {},
      labels: LABELS.app,
      onceKey: extra.onceKey ?? issueOnceKey(ctx),
    }, status);
  }

  /** The errors of the application form, each next to its field; any other error propagates to the error page. */
  function fieldErrors(err: unknown, values: AppForm): Record<string, string> {
    const errors = formErrors(err, LABELS.app, {}, { signOutRedirectURLs: signOutLines(values).map(({ line }) => line) });
    if (!errors || !Object.keys(errors).every((field) => field === 'type' || (FIELDS as readonly string[]).includes(field))) throw err;
    return errors;
  }

  /** The flash that carries a new secret to the application's page. */
  const secretFlashFor = (app: AppRow) => `secret:${app.client_id}`;

  router.get('/', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const { total, items } = await applicationsOf(db, access, { limit: LIST_LIMIT, offset: 0 });
    render(ctx, 'groups/settings/developer', {
      title: `Developer · ${group.name}`,
      group,
      tab: 'developer',
      apps: items.map((app) => ({ ...presentApp(app), url: appUrl(group, app) })),
      total,
      developerUrl: developerUrl(group),
      flash: notice(ctx),
    });
  });

  router.get('/apps/new', ownersOnly, (ctx) => {
    renderNew(ctx, accessOf(ctx).group);
    keepFormForBack(ctx);
  });

  // The address the new-application form posts to, opened on its own: the list of applications.
  router.get('/apps', ownersOnly, (ctx) => {
    ctx.redirect(developerUrl(accessOf(ctx).group));
  });

  router.post('/apps', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const values = appForm(ctx);
    const type = clientTypeOf(ctx);
    let outcome: { created: { app: AppRow; secret: NewSecret | undefined } } | { repeated: string | undefined };
    try {
      outcome = await createOnce(db, () => createApplication(db, access, { ...appInput(values), type }, submissionOf(ctx, 'app')));
    } catch (err) {
      renderNew(ctx, access.group, { values: { ...values, type }, errors: fieldErrors(err, values), onceKey: sentOnceKey(ctx) }, (err as AppError).status);
      return;
    }
    if ('created' in outcome) {
      const { app, secret } = outcome.created;
      // A public application has no secret to show.
      if (secret) flashBox(ctx).put({ for: secretFlashFor(app), secret: secret.secret });
      ctx.redirect(`${appUrl(access.group, app)}?notice=created`);
      return;
    }
    const developer = developerUrl(access.group);
    ctx.redirect(outcome.repeated ? `${developer}/apps/${encodeURIComponent(outcome.repeated)}?notice=app-repeated` : developer);
  });

  /** An application's page; right after its creation or a new secret, with that secret, this once. */
  router.get('/apps/:clientId', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    const fresh = flashBox(ctx).take(secretFlashFor(access.app));
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    // A repeated submission still shows a secret its first copy left unread (a double click's first page never arrives).
    const flash = fresh && (key === 'created' || key === 'app-repeated') ? 'Application created.' : fresh ? 'New client secret generated.' : undefined;
    await renderEdit(ctx, access, fresh ? { newSecret: { secret: fresh.secret }, flash } : {});
    if (!fresh) keepFormForBack(ctx);
  });

  router.post('/apps/:clientId', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    const values = appForm(ctx);
    let updated: AppRow;
    try {
      updated = await updateApplication(db, provider, access, appInput(values));
    } catch (err) {
      await renderEdit(ctx, access, { values, errors: fieldErrors(err, values) }, (err as AppError).status);
      return;
    }
    const notice = updated.callback_url !== access.app.callback_url ? 'callback-changed' : 'updated';
    ctx.redirect(`${appUrl(access.group, access.app)}?notice=${notice}`);
  });

  router.post('/apps/:clientId/secrets', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    let outcome: { created: NewSecret } | { repeated: string | undefined };
    try {
      outcome = await createOnce(db, () => generateClientSecret(db, access, submissionOf(ctx, 'secret')));
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      await renderEdit(ctx, access, { problem: `Could not generate a new client secret: ${err.message}.` }, err.status);
      return;
    }
    if ('created' in outcome) flashBox(ctx).put({ for: secretFlashFor(access.app), secret: outcome.created.secret });
    ctx.redirect(`${appUrl(access.group, access.app)}?notice=${'created' in outcome ? 'secret-created' : 'secret-repeated'}`);
  });

  // A refused new secret or revocation is shown at the address its form posts to: opened on its own, the application.
  router.get(['/apps/:clientId/secrets', '/apps/:clientId/secrets/:secretId/revoke'], ownersOnly, loadApp, (ctx) => {
    const { group, app } = appAccess(ctx);
    ctx.redirect(appUrl(group, app));
  });

  router.post('/apps/:clientId/secrets/:secretId/revoke', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    await revokeClientSecret(db, access, secretId(ctx));
    ctx.redirect(`${appUrl(access.group, access.app)}?notice=secret-revoked`);
  });

  // Revoke all user tokens (GitHub's name): asked on a page of its own, as deleting is.
  router.get('/apps/:clientId/revoke-tokens', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    const { group, app } = access;
    render(ctx, 'groups/settings/app-revoke-tokens', {
      title: `Revoke all user tokens of ${app.name}? · ${group.name}`,
      group,
      tab: 'developer',
      app: presentApp(app),
      appUrl: appUrl(group, app),
      isPublic: isPublic(app),
      authorizedUsers: await authorizedUsersOf(db, access),
    });
  });

  router.post('/apps/:clientId/revoke-tokens', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    await revokeAllUserTokens(db, provider, access);
    ctx.redirect(`${appUrl(access.group, access.app)}?notice=tokens-revoked`);
  });

  // Deleting asks first on a page of its own, so a stray click (or a page without scripts) cannot delete.
  router.get('/apps/:clientId/delete', ownersOnly, loadApp, (ctx) => {
    const { group, app } = appAccess(ctx);
    render(ctx, 'groups/settings/app-delete', {
      title: `Delete ${app.name}? · ${group.name}`,
      group,
      tab: 'developer',
      app: presentApp(app),
      appUrl: appUrl(group, app),
    });
  });

  router.post('/apps/:clientId/delete', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    await deleteApplication(db, provider, access);
    ctx.redirect(`${developerUrl(access.group)}?notice=deleted`);
  });

  return router;
}
