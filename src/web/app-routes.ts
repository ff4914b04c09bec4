import Router from '@koa/router';
import type Provider from 'oidc-provider';
import type { Context, Next } from 'koa';
import type { AppRow } from '../db/apps.js';
import type { GroupRow } from '../db/groups.js';
import { ConflictError, NotFoundError, type AppError } from '../errors.js';
import { accessOf } from '../http/load-group.js';
import { parseId } from '../ids.js';
import { presentApp, presentSecret, redirectUrisOf } from '../presenters/app.js';
import { pageLanguage, pageT, translateMessage, translator, type Language, type Translate } from '../i18n.js';
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
const FIELDS = [
  'name', 'homepageURL', 'description', 'callbackURL', 'signOutRedirectURLs',
  // Back-channel logout: one URL, an empty box for none.
  'backchannelLogoutURL',
] as const;
/** The switches, checkboxes: an unchecked one sends nothing, which is off. */
const SWITCHES = [
  'deviceFlow',
  'requirePushedAuthorizationRequests',
  'clientCredentials',
] as const;
type AppForm = Record<(typeof FIELDS)[number], string> & Record<(typeof SWITCHES)[number], boolean>;
const EMPTY_FORM: AppForm = {
  name: '', homepageURL: '', description: '', callbackURL: '', signOutRedirectURLs: '', deviceFlow: false, requirePushedAuthorizationRequests: false,
  clientCredentials: false,
  backchannelLogoutURL: '',
};

/** The notices of `?notice=`, each a sentence of `apps:notices` (locales/<language>/apps.json). */
const NOTICES: Record<string, string> = {
  created: 'created',
  'secret-created': 'secretCreated',
  'app-repeated': 'appRepeated',
  'secret-repeated': 'secretRepeated',
  updated: 'updated',
  'callback-changed': 'callbackChanged',
  'secret-revoked': 'secretRevoked',
  deleted: 'deleted',
  'tokens-revoked': 'tokensRevoked',
};

/** A public application has no client secret, so the notices of its creation say so instead of speaking of one. */
const PUBLIC_NOTICES: Record<string, string> = {
  created: 'createdPublic',
  'app-repeated': 'appRepeatedPublic',
};

/** The two application types as the new-application form offers them; their names and what each is for are in `apps:types`. */
const CLIENT_TYPES = [{ value: 'confidential' }, { value: 'public' }] as const;

/** The application form's labels in the page's language; LABELS.app (the words its English errors start with) in English. */
function appLabels(t: Translate): Record<keyof typeof LABELS.app, string> {
  return Object.fromEntries(Object.keys(LABELS.app).map((field) => [field, t(`apps:labels.${field}`)])) as Record<keyof typeof LABELS.app, string>;
}

/**
 * The sign-out URLs' error names each bad line, the lines after the first in the same sentence
 * ("…, line 2, must …; line 3, must …"): no one sentence of the message tables matches that, so
 * in another language each line is said as a sentence of its own (messages-apps.json).
 */
function signOutErrorIn(message: string, lang: Language): string {
  const [first, ...more] = message.split(/; (?=line \d+, )/);
  if (!more.length) return message;
  return [first!, ...more.map((line) => `${LABELS.app.signOutRedirectURLs}, ${line}`)]
    .map((sentence) => translateMessage(sentence, lang))
    .join(translator(lang)('messages-apps:_lineSeparator'));
}

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
    backchannelLogoutURL: app.backchannel_logout_uri ?? '',
    clientCredentials: Boolean(app.allow_client_credentials),
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

  function notice(ctx: Ctx, t: Translate, app?: AppRow): string | null {
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    const sentence = (app && isPublic(app) ? PUBLIC_NOTICES[key] : undefined) ?? NOTICES[key];
    return sentence ? t(`apps:notices.${sentence}`) : null;
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
    const t = pageT(ctx);
    render(ctx, 'groups/settings/app', {
      title: t('apps:titles.app', { app: app.name, group: group.name }),
      group,
      tab: 'developer',
      app: presentApp(app),
      appUrl: appUrl(group, app),
      developerUrl: developerUrl(group),
      secrets,
      isPublic: isPublic(app),
      // A client that registered itself: its settings are its own (its metadata document, or what it sent), and it has no secrets.
      registered: app.registered_by ? { redirectUris: redirectUrisOf(app) } : null,
      authorizedUsers: await authorizedUsersOf(db, access),
      canGenerate: secrets.length < MAX_ACTIVE_SECRETS,
      maxSecrets: MAX_ACTIVE_SECRETS,
      newSecret: extra.newSecret ?? null,
      problem: extra.problem ?? null,
      values: extra.values ?? formOf(app),
      errors: extra.errors ?? {},
      labels: appLabels(t),
      onceKey: issueOnceKey(ctx),
      flash: extra.flash ?? notice(ctx, t, app),
    }, status);
  }

  function renderNew(ctx: Ctx, group: GroupRow, extra: { values?: AppForm & { type?: string }; errors?: Record<string, string>; onceKey?: string } = {}, status = 200) {
    const t = pageT(ctx);
    render(ctx, 'groups/settings/app-new', {
      title: t('apps:titles.new', { group: group.name }),
      group,
      tab: 'developer',
      developerUrl: developerUrl(group),
      clientTypes: CLIENT_TYPES,
      values: extra.values ?? { ...EMPTY_FORM, type: 'confidential' },
      errors: extra.errors ?? {},
      labels: appLabels(t),
      onceKey: extra.onceKey ?? issueOnceKey(ctx),
    }, status);
  }

  /** The errors of the application form, each next to its field; any other error propagates to the error page. */
  function fieldErrors(err: unknown, values: AppForm, lang: Language): Record<string, string> {
    const errors = formErrors(err, LABELS.app, {}, { signOutRedirectURLs: signOutLines(values).map(({ line }) => line) });
    const besideItsField = (field: string) => field === 'type' || field === 'clientCredentials' || (FIELDS as readonly string[]).includes(field);
    if (!errors || !Object.keys(errors).every(besideItsField)) throw err;
    // The other messages are translated as the page is rendered (render.ts).
    if (lang !== 'en' && errors.signOutRedirectURLs) errors.signOutRedirectURLs = signOutErrorIn(errors.signOutRedirectURLs, lang);
    return errors;
  }

  /** The flash that carries a new secret to the application's page. */
  const secretFlashFor = (app: AppRow) => `secret:${app.client_id}`;

  router.get('/', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const { total, items } = await applicationsOf(db, access, { limit: LIST_LIMIT, offset: 0 });
    const t = pageT(ctx);
    render(ctx, 'groups/settings/developer', {
      title: t('apps:titles.developer', { group: group.name }),
      group,
      tab: 'developer',
      apps: items.map((app) => ({ ...presentApp(app), url: appUrl(group, app) })),
      total,
      developerUrl: developerUrl(group),
      flash: notice(ctx, t),
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
      renderNew(ctx, access.group, { values: { ...values, type }, errors: fieldErrors(err, values, pageLanguage(ctx)), onceKey: sentOnceKey(ctx) }, (err as AppError).status);
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
    const t = pageT(ctx);
    const flash = fresh && (key === 'created' || key === 'app-repeated') ? t('apps:notices.createdNow') : fresh ? t('apps:notices.secretCreatedNow') : undefined;
    await renderEdit(ctx, access, fresh ? { newSecret: { secret: fresh.secret }, flash } : {});
    if (!fresh) keepFormForBack(ctx);
  });

  router.post('/apps/:clientId', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    // A client that registered itself keeps the settings it gave: its page offers no form to change them.
    if (access.app.registered_by) return ctx.redirect(appUrl(access.group, access.app));
    const values = appForm(ctx);
    let updated: AppRow;
    try {
      updated = await updateApplication(db, provider, access, appInput(values));
    } catch (err) {
      await renderEdit(ctx, access, { values, errors: fieldErrors(err, values, pageLanguage(ctx)) }, (err as AppError).status);
      return;
    }
    const notice = updated.callback_url !== access.app.callback_url ? 'callback-changed' : 'updated';
    ctx.redirect(`${appUrl(access.group, access.app)}?notice=${notice}`);
  });

  router.post('/apps/:clientId/secrets', ownersOnly, loadApp, async (ctx) => {
    const access = appAccess(ctx);
    // A client that registered itself is a public client: it has no secrets.
    if (access.app.registered_by) return ctx.redirect(appUrl(access.group, access.app));
    let outcome: { created: NewSecret } | { repeated: string | undefined };
    try {
      outcome = await createOnce(db, () => generateClientSecret(db, access, submissionOf(ctx, 'secret')));
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      await renderEdit(ctx, access, { problem: translateMessage(`Could not generate a new client secret: ${err.message}.`, pageLanguage(ctx)) }, err.status);
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
      title: pageT(ctx)('apps:titles.revokeTokens', { app: app.name, group: group.name }),
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
      title: pageT(ctx)('apps:titles.delete', { app: app.name, group: group.name }),
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
