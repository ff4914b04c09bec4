import Router from '@koa/router';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { toIso } from '../time.js';
import { AppError, NotFoundError, ValidationError } from '../errors.js';
import { parseId } from '../ids.js';
import { presentAccessToken } from '../presenters/access-token.js';
import { API_SCOPES, isScope, SCOPES } from '../vocabulary.js';
import { accessTokensOf, createAccessToken, revokeAccessToken, type NewAccessToken } from '../services/access-tokens.js';
import { authorizedApplicationsOf, revokeUserGrant } from '../services/grants.js';
import { formFields, requireUser, type WebDeps } from './context.js';
import { render } from './render.js';

const BASE = '/account/settings';

/** The Expiration choices of the token form; the value is the number of days, or "never". */
const EXPIRATIONS = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '365', label: '365 days' },
  { value: 'never', label: 'No expiration' },
] as const;
const DEFAULT_EXPIRATION = '30';

const TOKEN_SCOPES = API_SCOPES.map((scope) => ({ value: scope, description: SCOPES[scope] }));

const NOTICES: Record<string, string> = {
  'token-revoked': 'Access token revoked.',
  'app-revoked': 'Access revoked. The application’s tokens no longer work.',
};

interface TokenForm {
  name: string;
  scopes: string[];
  expiration: string;
}

/** A form field that may be repeated (checkboxes): every string value, in order. */
function formList(ctx: Context, name: string): string[] {
  const value = ((ctx.request as { body?: Record<string, unknown> }).body ?? {})[name];
  const values = Array.isArray(value) ? value : [value];
  return values.filter((v): v is string => typeof v === 'string');
}

/** The form as the service takes it: "never" is no expiry, anything else a number of days. */
function newTokenInput(form: TokenForm): NewAccessToken {
  if (form.expiration !== 'never' && !/^[0-9]{1,3}$/.test(form.expiration)) {
    throw new ValidationError('expiresInDays', 'Choose when the token expires, or No expiration.');
  }
  return {
    name: form.name,
    // Checked by the service's schema, which names a scope outside the list.
    scopes: form.scopes as NewAccessToken['scopes'],
    expiresInDays: form.expiration === 'never' ? null : Number(form.expiration),
  };
}

/** Which form field a service error belongs to ("scopes.0" is the scopes checkboxes). */
const FORM_FIELDS: Record<string, string> = { name: 'name', scopes: 'scopes', expiresInDays: 'expiration' };

/** An authorized application as the Authorized applications page shows it. */
function authorizedApplication(row: Record<string, unknown>) {
  return {
    clientId: String(row.client_id),
    name: String(row.app_name),
    groupName: String(row.group_name),
    homepageURL: String(row.homepage_url),
    scopes: String(row.scopes).split(' ').filter(isScope),
    authorizedAt: toIso(row.created_at as string | Date),
    lastUsedAt: toIso(row.last_used_at as string | Date | null),
  };
}

/** A path segment that cannot be a token id is the same as an unknown token. */
function tokenId(ctx: Context): number {
  const id = parseId(ctx.params.id);
  if (id === undefined) throw new NotFoundError('no such access token');
  return id;
}

/**
 * Account settings of the signed-in user: personal access tokens (made, listed, revoked) and the
 * applications the user authorized (listed, revoked). Secrets appear once, in the POST response
 * that made them, never in a URL or a redirect.
 */
export function settingsRoutes(deps: WebDeps & { provider: Provider }): Router {
  const { db, provider } = deps;
  const router = new Router({ prefix: BASE });

  function notice(ctx: Context): string | null {
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    return NOTICES[key] ?? null;
  }

  async function renderTokens(
    ctx: Context,
    userId: number,
    extra: { form?: TokenForm; errors?: Record<string, string>; created?: { token: string; name: string } } = {},
    status = 200,
  ) {
    const tokens = (await accessTokensOf(db, userId)).map((row) => presentAccessToken(row));
    render(ctx, 'account/settings/tokens', {
      title: 'Access tokens · Account settings',
      tab: 'tokens',
      tokens,
      scopeChoices: TOKEN_SCOPES,
      expirations: EXPIRATIONS,
      form: extra.form ?? { name: '', scopes: [], expiration: DEFAULT_EXPIRATION },
      values: { name: extra.form?.name ?? '' },
      errors: extra.errors ?? {},
      created: extra.created ?? null,
      flash: notice(ctx),
    }, status);
  }

  router.get('/', (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${BASE}/tokens`);
  });

  router.get('/tokens', async (ctx) => {
    const user = requireUser(ctx);
    await renderTokens(ctx, user.id);
  });

  router.post('/tokens', async (ctx) => {
    const user = requireUser(ctx);
    const fields = formFields(ctx);
    const form: TokenForm = { name: fields.name ?? '', scopes: formList(ctx, 'scopes'), expiration: fields.expiration ?? '' };
    try {
      const { token, row } = await createAccessToken(db, user.id, newTokenInput(form));
      // Shown in this response only: the database keeps a digest, and nothing puts it in a URL.
      await renderTokens(ctx, user.id, { created: { token, name: row.name } });
    } catch (err) {
      if (!(err instanceof AppError && err.field)) throw err;
      const field = FORM_FIELDS[err.field.split('.')[0]!] ?? 'name';
      await renderTokens(ctx, user.id, { form, errors: { [field]: err.message } }, err.status);
    }
  });

  router.post('/tokens/:id/revoke', async (ctx) => {
    const user = requireUser(ctx);
    await revokeAccessToken(db, user.id, tokenId(ctx));
    ctx.redirect(`${BASE}/tokens?notice=token-revoked`);
  });

  router.get('/applications', async (ctx) => {
    const user = requireUser(ctx);
    const grants = await authorizedApplicationsOf(db, user.id);
    render(ctx, 'account/settings/applications', {
      title: 'Authorized applications · Account settings',
      tab: 'applications',
      applications: grants.map(authorizedApplication),
      flash: notice(ctx),
    });
  });

  router.post('/applications/:clientId/revoke', async (ctx) => {
    const user = requireUser(ctx);
    await revokeUserGrant(db, provider, user.id, String(ctx.params.clientId ?? ''));
    ctx.redirect(`${BASE}/applications?notice=app-revoked`);
  });

  return router;
}
