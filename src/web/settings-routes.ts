import Router from '@koa/router';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { toIso } from '../time.js';
import { NotFoundError, type AppError } from '../errors.js';
import { parseId } from '../ids.js';
import { presentAccessToken } from '../presenters/access-token.js';
import { ADMIN_SCOPE, API_SCOPES, isScope, PERSONAL_TOKEN_SCOPES } from '../vocabulary.js';
import { isSiteAdmin } from '../policies/site.js';
import { accessTokensOf, createAccessToken, reportedTokensOf, revokeAccessToken, type NewAccessToken } from '../services/access-tokens.js';
import { groupsOfUser } from '../services/groups.js';
import { authorizedApplicationsOf, revokeUserGrant } from '../services/grants.js';
import { mayAddCredentials } from '../policies/account.js';
import type { AccessConfirmation } from './confirm-access.js';
import { formFields, formList, requireUser, type WebDeps } from './context.js';
import { flashBox } from './flash.js';
import { formErrors, LABELS } from './form-errors.js';
import { createOnce, issueOnceKey, keepFormForBack, sentOnceKey, submissionOf } from './one-time-key.js';
import { pageT, type Translate } from '../i18n.js';
import { render } from './render.js';
import { noticeToOwner } from './security-notice.js';
import { refuseUnverified } from './verified-address.js';

const BASE = '/account/settings';

/** The Expiration choices of the token form; the value is the number of days, or "never". */
const EXPIRATIONS = [
  { value: '7' },
  { value: '30' },
  { value: '90' },
  { value: '365' },
  { value: 'never' },
] as const;
const DEFAULT_EXPIRATION = '30';

const TOKEN_SCOPES = API_SCOPES.map((scope) => ({ value: scope, description: PERSONAL_TOKEN_SCOPES[scope] }));
/** A site administrator's choices add `admin` (the service refuses it to anyone else). */
const ADMIN_TOKEN_SCOPES = [...TOKEN_SCOPES, { value: ADMIN_SCOPE, description: PERSONAL_TOKEN_SCOPES[ADMIN_SCOPE] }];

interface TokenForm {
  name: string;
  scopes: string[];
  expiration: string;
  /** `all`: every group of mine; `selected`: only the groups checked. */
  groupAccess: string;
  groups: string[];
}

/**
 * The form as the service takes it: "never" is no expiry, anything else a number of days. Its
 * schema checks every field at once (a choice outside the lists is an error about that field).
 */
function newTokenInput(form: TokenForm): NewAccessToken {
  return {
    name: form.name,
    scopes: form.scopes as NewAccessToken['scopes'],
    expiresInDays: form.expiration === 'never' ? null : /^[0-9]{1,3}$/.test(form.expiration) ? Number(form.expiration) : NaN,
    groups: form.groupAccess === 'selected' ? form.groups.map((id) => parseId(id) ?? NaN) : 'all',
  };
}

const TOKENS_VIEW = 'account/settings/tokens';

/** The notices of the tokens page, as keys of its words (security namespace). */
const TOKEN_NOTICES: Record<string, string> = {
  'token-created': 'security:tokens.createdNotice',
  'token-repeated': 'security:tokens.repeatedNotice',
  'token-revoked': 'security:tokens.revokedNotice',
};

const CAPS_REFUSED = /^Expiration must be within the chosen groups' limits: (.+)$/s;
const CAP = /(.+?) limits tokens to (\d+) days?(?:, |$)/gs;

/**
 * The token form's errors in the page's language where the message tables cannot say them: the
 * groups whose caps refuse the expiration, each cap said again in the page's words.
 */
function tokenErrorsIn(t: Translate, errors: Record<string, string>): Record<string, string> {
  const refused = errors.expiration === undefined ? null : CAPS_REFUSED.exec(errors.expiration);
  if (!refused) return errors;
  const caps = [...refused[1]!.matchAll(CAP)].map(([, group, days]) => t(days === '1' ? 'security:tokens.capOne' : 'security:tokens.capOther', { group, days }));
  return { ...errors, expiration: t('security:tokens.capsRefused', { caps: caps.join(t('common:listSeparator')) }) };
}

/** The one-time flash that carries a new token to the tokens page. */
const TOKEN_FLASH = 'token';

/** The form field of the service's `expiresInDays`. */
const FORM_FIELDS: Record<string, string> = { expiresInDays: 'expiration' };

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
 * applications the user authorized (listed, revoked). A new token appears once, on the page the
 * POST redirects to, carried there by the one-time flash, never in a URL.
 */
export function settingsRoutes(deps: WebDeps & { provider: Provider }, access: AccessConfirmation): Router {
  const { db, provider } = deps;
  const router = new Router({ prefix: BASE });

  async function renderTokens(
    ctx: Context,
    userId: number,
    extra: { form?: TokenForm; errors?: Record<string, string>; created?: { token: string; name: string }; onceKey?: string } = {},
    status = 200,
  ) {
    const tokens = (await accessTokensOf(db, userId)).map((row) => presentAccessToken(row));
    const user = requireUser(ctx);
    const { items: myGroups } = await groupsOfUser(db, userId, { limit: 200, offset: 0 });
    const t = pageT(ctx);
    const notice = String(ctx.query.notice ?? '');
    render(ctx, TOKENS_VIEW, {
      title: t('security:tokens.title'),
      tab: 'tokens',
      tokens,
      scopeChoices: isSiteAdmin(user) ? ADMIN_TOKEN_SCOPES : TOKEN_SCOPES,
      expirations: EXPIRATIONS,
      form: extra.form ?? { name: '', scopes: [], expiration: DEFAULT_EXPIRATION, groupAccess: 'all', groups: [] },
      groupChoices: myGroups.map((g) => ({ id: String(g.id), name: g.name, path: g.path, maxLifetimeDays: g.personal_token_max_lifetime_days })),
      reported: await reportedTokensOf(db, userId),
      mayAdd: mayAddCredentials(user, deps.config.requireVerifiedEmail),
      values: { name: extra.form?.name ?? '' },
      errors: tokenErrorsIn(t, extra.errors ?? {}),
      labels: LABELS.token,
      onceKey: extra.onceKey ?? issueOnceKey(ctx),
      created: extra.created ?? null,
      flash: extra.created ? t('security:tokens.generated') : Object.hasOwn(TOKEN_NOTICES, notice) ? t(TOKEN_NOTICES[notice]!) : null,
    }, status);
  }

  // The area's address opens its first page, as the header's link does.
  router.get('/', (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${BASE}/profile`);
  });

  /** The tokens page; right after a token was made, with that token, this once. */
  router.get('/tokens', async (ctx) => {
    const user = requireUser(ctx);
    const fresh = flashBox(ctx).take(TOKEN_FLASH);
    await renderTokens(ctx, user.id, fresh ? { created: { token: fresh.secret, name: fresh.name ?? '' } } : {});
    if (!fresh) keepFormForBack(ctx);
  });

  // The form posts to an address of its own: a POST to the page's address would make the browser
  // drop the page it keeps for Back (see keepFormForBack). `/tokens` is kept for older forms.
  router.get('/tokens/new', (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${BASE}/tokens`);
  });

  // A token is a way in that outlives the session: a stolen session must not be able to mint one.
  router.post(['/tokens', '/tokens/new'], refuseUnverified(deps, 'create-token'), access.required('create-token'), async (ctx) => {
    const user = requireUser(ctx);
    const fields = formFields(ctx);
    const form: TokenForm = {
      name: fields.name ?? '',
      scopes: formList(ctx, 'scopes'),
      expiration: fields.expiration ?? '',
      groupAccess: fields.groupAccess === 'selected' ? 'selected' : 'all',
      groups: formList(ctx, 'groups'),
    };
    try {
      const outcome = await createOnce(db, () => createAccessToken(db, user.id, newTokenInput(form), submissionOf(ctx, 'token')));
      // The token goes to the next page in the one-time flash: the database keeps a digest, and nothing puts it in a URL.
      if ('created' in outcome) {
        deps.metrics.tokenIssued('personal_access_token');
        noticeToOwner(deps, ctx, user, 'personal-token-created', outcome.created.row.name);
        flashBox(ctx).put({ for: TOKEN_FLASH, secret: outcome.created.token, name: outcome.created.row.name });
      }
      ctx.redirect(`${BASE}/tokens?notice=${'created' in outcome ? 'token-created' : 'token-repeated'}`);
    } catch (err) {
      const errors = formErrors(err, LABELS.token, FORM_FIELDS);
      if (!errors) throw err;
      await renderTokens(ctx, user.id, { form, errors, onceKey: sentOnceKey(ctx) }, (err as AppError).status);
    }
  });

  router.post('/tokens/:id/revoke', async (ctx) => {
    const user = requireUser(ctx);
    await revokeAccessToken(db, user.id, tokenId(ctx));
    ctx.redirect(`${BASE}/tokens?notice=token-revoked`);
  });

  // Addresses that forms post to, opened on their own (an error page left there, then reloaded): their list.
  router.get('/tokens/:id/revoke', (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${BASE}/tokens`);
  });
  router.get('/applications/:clientId/revoke', (ctx) => {
    requireUser(ctx);
    ctx.redirect(`${BASE}/applications`);
  });

  router.get('/applications', async (ctx) => {
    const user = requireUser(ctx);
    const grants = await authorizedApplicationsOf(db, user.id);
    const t = pageT(ctx);
    render(ctx, 'account/settings/applications', {
      title: t('account:titles.applications'),
      tab: 'applications',
      applications: grants.map(authorizedApplication),
      flash: ctx.query.notice === 'app-revoked' ? t('account:notices.appRevoked') : null,
    });
  });

  router.post('/applications/:clientId/revoke', async (ctx) => {
    const user = requireUser(ctx);
    await revokeUserGrant(db, provider, user.id, String(ctx.params.clientId ?? ''));
    ctx.redirect(`${BASE}/applications?notice=app-revoked`);
  });

  return router;
}
