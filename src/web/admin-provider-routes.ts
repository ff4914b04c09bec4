import type Router from '@koa/router';
import type { Context } from 'koa';
import { hasControlCharacter } from '../control-characters.js';
import type { SignInProviderRow } from '../db/sign-in-providers.js';
import { AppError, NotFoundError } from '../errors.js';
import { presentSignInProvider } from '../presenters/sign-in-provider.js';
import type { CheckResult } from '../services/directory/check.js';
import { filterSent, testConnection, testUser, type ConnectionTest, type UserTest } from '../services/directory/probe.js';
import {
  availableKinds,
  callbackUrl,
  createProvider,
  listProviders,
  removalImpact,
  removeProvider,
  requireProvider,
  setProviderDisabled,
  updateProvider,
  type ProviderInput,
} from '../services/federation/manage.js';
import { directoryKindOf, kindOf } from '../services/federation/kinds.js';
import { openProvider } from '../services/federation/providers.js';
import { MAX_LOGIN_LENGTH } from '../services/rules.js';
import type { ProviderKind } from '../services/federation/upstream.js';
import { actorOf, formFields, type WebDeps } from './context.js';
import { formErrors, formStatus } from './form-errors.js';
import { render } from './render.js';
import { RESOURCES, pageLanguage, pageT, translateMessage, translator, type Translate } from '../i18n.js';

/**
 * Admin → Sign-in providers: the list, Add (the kind first, then its fields), a provider's page
 * with its callback URL, Edit, Disable/Enable and Remove (after a page that says what goes with
 * it). A directory's (LDAP) page has no callback URL but Test connection, Test a user and Check
 * linked accounts now, each showing what the directory answered on the page again. Registered on
 * the Admin area's router, so that only site administrators reach it.
 */

const BASE = '/admin/providers';

/** The provider form's common fields; their labels are admin.json's `labels`, and each kind's settings bring their own. */
const FIELDS = ['kind', 'name', 'slug', 'client_id', 'client_secret', 'scopes', 'allow_sign_up', 'allowed_domains', 'trust_mfa', 'position'] as const;

/** The notices of the providers' pages after an action (`?notice=`), their words in admin.json's `providerNotices`. */
const NOTICES: ReadonlySet<string> = new Set(['added', 'saved', 'unchanged', 'disabled', 'enabled', 'already-disabled', 'already-enabled', 'removed']);

/** A notice in the page's words; a directory's "added" has no callback URL to register. */
const notice = (ctx: Context, t: Translate, directory = false): string | null => {
  const key = firstValue(ctx.query.notice);
  if (!NOTICES.has(key)) return null;
  return t(`admin:providerNotices.${directory && key === 'added' ? 'addedDirectory' : key}`);
};

/** A multi-line setting's box (a CA certificate, a group mapping): as long as the longest value the kind takes. */
const MULTILINE_MAX = 20_000;

/**
 * A kind's setting in the page's words: its label and hint from admin.json's `kinds` when it has
 * them (the built-in kinds), as the kind writes them otherwise.
 */
function settingWords(t: Translate, kind: string, setting: { name: string; label: string; hint: string }): { label: string; hint: string } {
  const kinds = (RESOURCES.en.admin as { kinds?: Record<string, Record<string, unknown>> } | undefined)?.kinds ?? {};
  if (!Object.hasOwn(kinds, kind) || !Object.hasOwn(kinds[kind]!, setting.name)) return { label: setting.label, hint: setting.hint };
  return { label: t(`admin:kinds.${kind}.${setting.name}.label`), hint: t(`admin:kinds.${kind}.${setting.name}.hint`) };
}

const firstValue = (value: string | string[] | undefined): string => (Array.isArray(value) ? value[0] : value) ?? '';

/**
 * The form's labels in `t`'s language. In English they are the words the form's errors start
 * with (formErrors), which the message tables (messages-admin) translate whole.
 */
function labelsOf(kind: ProviderKind | undefined, t: Translate = translator('en')): Record<string, string> {
  return {
    ...Object.fromEntries(FIELDS.map((field) => [field, t(`admin:labels.${field}`)])),
    // A directory's client ID and secret are its service account's DN and password.
    ...(kind?.signIn === 'directory' ? { client_id: t('admin:directoryLabels.client_id'), client_secret: t('admin:directoryLabels.client_secret') } : {}),
    ...Object.fromEntries((kind?.settings ?? []).map((s) => [s.name, settingWords(t, kind!.kind, s).label])),
  };
}

/** A posted provider form as the service's input: the common fields, and the kind's own settings. */
function inputOf(fields: Record<string, string>, kind: ProviderKind | undefined): ProviderInput {
  return {
    kind: fields.kind,
    slug: fields.slug ?? '',
    name: fields.name ?? '',
    client_id: fields.client_id ?? '',
    client_secret: fields.client_secret ?? '',
    scopes: fields.scopes ?? '',
    settings: Object.fromEntries((kind?.settings ?? []).map((s) => [s.name, fields[s.name] ?? ''])),
    allow_sign_up: fields.allow_sign_up !== undefined,
    allowed_domains: fields.allowed_domains ?? '',
    trust_mfa: fields.trust_mfa !== undefined,
    position: fields.position ?? '',
  };
}

/** A stored provider as the edit form's values (never its secret). */
function valuesOf(row: SignInProviderRow): Record<string, string | boolean> {
  const provider = presentSignInProvider(row, 0);
  return {
    slug: provider.slug,
    name: provider.name,
    client_id: provider.clientId,
    scopes: provider.scopes.join(' '),
    allowed_domains: provider.allowedDomains.join(' '),
    allow_sign_up: provider.allowSignUp,
    trust_mfa: provider.trustMfa,
    position: String(provider.position),
    ...provider.settings,
  };
}

/** Typed values to show again after an error: everything but the secret. */
function typedValues(fields: Record<string, string>): Record<string, string | boolean> {
  const { client_secret: _secret, _csrf: _token, ...rest } = fields;
  return { ...rest, allow_sign_up: fields.allow_sign_up !== undefined, trust_mfa: fields.trust_mfa !== undefined };
}

function kindChoice(kind: ProviderKind, t: Translate = translator('en')) {
  return {
    kind: kind.kind,
    label: kind.label,
    directory: kind.signIn === 'directory',
    defaultScopes: kind.defaultScopes.join(' '),
    settings: kind.settings.map((s) => ({ name: s.name, ...settingWords(t, kind.kind, s), required: s.required, multiline: Boolean(s.multiline), maxlength: s.multiline ? MULTILINE_MAX : undefined })),
  };
}

/** The Add form's first values: each setting's default, and for a directory, new accounts allowed (its people are the site's). */
function newValues(kind: ProviderKind): Record<string, string | boolean> {
  return {
    allow_sign_up: kind.signIn === 'directory',
    trust_mfa: false,
    ...Object.fromEntries(kind.settings.filter((s) => s.defaultValue !== undefined).map((s) => [s.name, s.defaultValue!])),
  };
}

/** A typed username for Test a user, or the reason it is not one, in the page's words. */
function testUsername(typed: string | undefined, t: Translate): { username: string } | { error: string } {
  const username = (typed ?? '').trim();
  if (!username) return { error: t('admin:directory.usernameRequired') };
  // No longer than the sign-in form takes.
  if (username.length > MAX_LOGIN_LENGTH) return { error: t('admin:directory.usernameTooLong', { max: MAX_LOGIN_LENGTH }) };
  if (hasControlCharacter(username)) return { error: t('admin:directory.usernameControl') };
  return { username };
}

/** What the directory answered, for the provider's page: a failure's message in the page's language. */
function inPageWords<T extends ConnectionTest | UserTest>(ctx: Context, result: T): T {
  return result.ok ? result : { ...result, message: translateMessage(result.message, pageLanguage(ctx)) };
}

/** What the provider's page shows after one of a directory's tests or its check. */
interface DirectoryResults {
  connection?: ConnectionTest;
  user?: { username: string; filter: string; base: string; result: UserTest };
  check?: CheckResult;
  values?: Record<string, string>;
  errors?: Record<string, string>;
}

export function adminProviderRoutes(router: Router, deps: WebDeps): void {
  const { db } = deps;
  const manage = { db, cipher: deps.cipher };
  const providerUrl = (slug: string) => `${BASE}/${encodeURIComponent(slug)}`;
  const target = (ctx: Context) => requireProvider(db, String(ctx.params.slug ?? ''));

  function renderForm(ctx: Context, kind: ProviderKind, options: { row?: SignInProviderRow; values: Record<string, unknown>; errors?: Record<string, string>; status?: number }) {
    const editing = options.row;
    const t = pageT(ctx);
    render(ctx, 'admin/provider-form', {
      title: editing ? t('admin:titles.edit', { name: editing.name }) : t('admin:titles.add', { kind: kind.label }),
      tab: 'providers',
      kind: kindChoice(kind, t),
      directory: kind.signIn === 'directory',
      provider: editing ? presentSignInProvider(editing, 0) : null,
      action: editing ? `${providerUrl(editing.slug)}/edit` : BASE,
      callbackBase: callbackUrl(deps.config.issuer, ''),
      values: options.values,
      errors: options.errors ?? {},
      labels: labelsOf(kind, t),
    }, options.status ?? 200);
  }

  router.get('/providers', async (ctx) => {
    const listed = await listProviders(db);
    const t = pageT(ctx);
    render(ctx, 'admin/providers', {
      title: t('admin:titles.providers'),
      tab: 'providers',
      providers: listed.map(({ row, identities }) => ({ ...presentSignInProvider(row, identities), kindLabel: kindOf(row.kind)?.label ?? row.kind })),
      kinds: availableKinds().map((kind) => kindChoice(kind)),
      flash: notice(ctx, t),
    });
  });

  router.get('/providers/new', (ctx) => {
    const kind = kindOf(firstValue(ctx.query.kind));
    if (!kind) {
      render(ctx, 'admin/provider-kind', { title: pageT(ctx)('admin:titles.chooseKind'), tab: 'providers', kinds: availableKinds().map((kind) => kindChoice(kind)) });
      return;
    }
    renderForm(ctx, kind, { values: newValues(kind) });
  });

  router.post('/providers', async (ctx) => {
    const fields = formFields(ctx);
    const kind = kindOf(fields.kind ?? '');
    if (!kind) {
      // Only a hand-made form gets here: the kind is a hidden field of the page that chose it.
      const t = pageT(ctx);
      render(ctx, 'admin/provider-kind', { title: t('admin:titles.chooseKind'), tab: 'providers', kinds: availableKinds().map((kind) => kindChoice(kind)), error: t('admin:kind.choose') }, 400);
      return;
    }
    try {
      const row = await createProvider(manage, actorOf(ctx), inputOf(fields, kind));
      ctx.redirect(`${providerUrl(row.slug)}?notice=added`);
    } catch (err) {
      const errors = formErrors(err, labelsOf(kind));
      if (!errors) throw err;
      renderForm(ctx, kind, { values: typedValues(fields), errors, status: formStatus(err) });
    }
  });

  /** A directory provider by slug; 404 for a provider of another kind, which has nothing to test. */
  async function directoryTarget(ctx: Context): Promise<SignInProviderRow> {
    const row = await target(ctx);
    if (!directoryKindOf(row.kind)) throw new NotFoundError('Only a directory (LDAP) provider can be tested.');
    return row;
  }

  /** The provider's page; after a directory's test or check, with what it answered. */
  async function renderProvider(ctx: Context, row: SignInProviderRow, results: DirectoryResults = {}, status = 200) {
    const impact = await removalImpact(db, row);
    const t = pageT(ctx);
    const kind = kindOf(row.kind);
    const directory = kind?.signIn === 'directory';
    const provider = presentSignInProvider(row, impact.identities);
    render(ctx, 'admin/provider', {
      title: t('admin:titles.provider', { name: row.name }),
      tab: 'providers',
      provider: { ...provider, kindLabel: kind?.label ?? row.kind },
      directory,
      settings: (kind?.settings ?? []).map((s) => ({ name: s.name, label: settingWords(t, row.kind, s).label, value: provider.settings[s.name] ?? '', multiline: Boolean(s.multiline) })),
      // A directory is asked by this service: nothing comes back to a callback URL.
      callback: directory ? null : callbackUrl(deps.config.issuer, row.slug),
      flash: notice(ctx, t, directory),
      connection: results.connection ? inPageWords(ctx, results.connection) : null,
      userTest: results.user ? { ...results.user, result: inPageWords(ctx, results.user.result) } : null,
      check: results.check ?? null,
      values: results.values ?? {},
      errors: results.errors ?? {},
      labels: { username: t('admin:directory.username') },
    }, status);
  }

  router.get('/providers/:slug', async (ctx) => {
    await renderProvider(ctx, await target(ctx));
  });

  // A directory's tests and check: each asks the directory with the provider as saved, and shows the answer on its page.
  router.post('/providers/:slug/test-connection', async (ctx) => {
    const row = await directoryTarget(ctx);
    await renderProvider(ctx, row, { connection: await testConnection(openProvider(row, deps.cipher)) });
  });

  router.post('/providers/:slug/test-user', async (ctx) => {
    const row = await directoryTarget(ctx);
    const typed = formFields(ctx).username;
    const checked = testUsername(typed, pageT(ctx));
    if ('error' in checked) {
      await renderProvider(ctx, row, { values: { username: typed ?? '' }, errors: { username: checked.error } }, 400);
      return;
    }
    const provider = openProvider(row, deps.cipher);
    const result = await testUser(provider, checked.username);
    await renderProvider(ctx, row, {
      user: { username: checked.username, filter: filterSent(provider, result, checked.username), base: provider.settings.user_base ?? '', result },
      values: { username: checked.username },
    });
  });

  router.post('/providers/:slug/check', async (ctx) => {
    const row = await directoryTarget(ctx);
    if (!deps.directories) throw new AppError(503, 'unavailable', 'Directories are not checked on this instance.');
    await renderProvider(ctx, row, { check: await deps.directories.checkAccounts(openProvider(row, deps.cipher)) });
  });

  router.get('/providers/:slug/edit', async (ctx) => {
    const row = await target(ctx);
    const kind = kindOf(row.kind);
    if (!kind) return ctx.redirect(providerUrl(row.slug));
    renderForm(ctx, kind, { row, values: valuesOf(row) });
  });

  router.post('/providers/:slug/edit', async (ctx) => {
    const row = await target(ctx);
    const kind = kindOf(row.kind);
    if (!kind) return ctx.redirect(providerUrl(row.slug));
    const fields = formFields(ctx);
    try {
      const { row: saved, changed } = await updateProvider(manage, actorOf(ctx), row, { ...inputOf(fields, kind), kind: undefined });
      ctx.redirect(`${providerUrl(saved.slug)}?notice=${changed ? 'saved' : 'unchanged'}`);
    } catch (err) {
      const errors = formErrors(err, labelsOf(kind));
      if (!errors) throw err;
      renderForm(ctx, kind, { row, values: typedValues(fields), errors, status: formStatus(err) });
    }
  });

  router.post('/providers/:slug/disable', async (ctx) => {
    const row = await target(ctx);
    const changed = await setProviderDisabled(db, actorOf(ctx), row, true);
    ctx.redirect(`${providerUrl(row.slug)}?notice=${changed ? 'disabled' : 'already-disabled'}`);
  });

  router.post('/providers/:slug/enable', async (ctx) => {
    const row = await target(ctx);
    const changed = await setProviderDisabled(db, actorOf(ctx), row, false);
    ctx.redirect(`${providerUrl(row.slug)}?notice=${changed ? 'enabled' : 'already-enabled'}`);
  });

  router.get('/providers/:slug/remove', async (ctx) => {
    const row = await target(ctx);
    render(ctx, 'admin/provider-remove', {
      title: pageT(ctx)('admin:titles.remove', { name: row.name }),
      tab: 'providers',
      provider: presentSignInProvider(row, 0),
      impact: await removalImpact(db, row),
    });
  });

  router.post('/providers/:slug/remove', async (ctx) => {
    const row = await target(ctx);
    await removeProvider(db, actorOf(ctx), row);
    ctx.redirect(`${BASE}?notice=removed`);
  });
}
