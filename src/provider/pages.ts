import type { Knex } from 'knex';
import type { Context, Next } from 'koa';
import type { ErrorOut, KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import { findUserById, type UserRow } from '../db/users.js';
import { isDisabled } from '../policies/site.js';
import { consentSubject } from '../services/apps.js';
import { describeScopes } from '../vocabulary.js';
import { pageT } from '../i18n.js';
import { errorsInEnglish as en } from '../error-page.js';

/** Renders `views/<view>.ejs` in the site's layout as the response; `currentUser` fills the header. */
export type RenderPage = (
  ctx: KoaContextWithOIDC,
  view: string,
  locals: { title: string; currentUser?: UserRow | null; [key: string]: unknown },
  status: number,
) => void;

/** The library's own logout form (`<form id="op.logoutForm">` with its xsrf field), submitted by our buttons. */
export const LIBRARY_LOGOUT_FORM_ID = 'op.logoutForm';

/**
 * The pages oidc-provider renders itself (its errors, RP-initiated logout's confirmation and
 * success pages), in the site's look and with the site's header: a signed-in person sees who
 * they are, not "Sign in". None carries inline script: the site's Content-Security-Policy
 * allows scripts from /static only.
 */
export function providerPages(deps: { db: Knex; provider: () => Provider; render: RenderPage }) {
  const { db, render } = deps;

  /**
   * The signed-in user of the request. On routes where the library loaded the session, that
   * session (reading it again would swap the library's own copy); elsewhere, the session cookie.
   * A lookup that fails (storage away) leaves the header signed out rather than failing the page.
   */
  async function signedInUser(ctx: KoaContextWithOIDC): Promise<UserRow | null> {
    try {
      const loaded = ctx.oidc?.entities.Session as { accountId?: string } | undefined;
      let accountId = loaded?.accountId;
      if (!loaded) {
        const provider = deps.provider();
        if (!ctx.cookies.get(provider.cookieName('session'))) return null;
        // Without `oidc`, Session.get reads the cookie on a context of its own and touches no entity.
        const session = await provider.Session.get({ req: ctx.req, res: ctx.res, secure: ctx.secure } as never);
        accountId = session.accountId;
      }
      if (!accountId || !/^[1-9][0-9]{0,15}$/.test(accountId)) return null;
      const user = await findUserById(db, Number(accountId));
      if (!user || isDisabled(user)) return null;
      // The pages follow the account's chosen language (i18n.ts readerLanguage) as the site's do.
      ctx.state.accountLanguage = user.language;
      return user;
    } catch {
      return null;
    }
  }

  function clientName(ctx: KoaContextWithOIDC): string | null {
    const client = ctx.oidc?.client;
    return client ? (client.clientName ?? client.clientId) : null;
  }

  return {
    signedInUser,

    async error(ctx: KoaContextWithOIDC, status: number, title: string, message: string): Promise<void> {
      render(ctx, 'error', { title, message, status, currentUser: await signedInUser(ctx) }, status);
    },

    /**
     * An authorize request whose redirect_uri is not the application's callback: the page names
     * the application and the redirect_uri received, so its developer sees what to fix. The
     * registered callback is not shown: anyone can send this request, and the callback of
     * someone else's application is theirs to tell.
     */
    async redirectMismatch(ctx: KoaContextWithOIDC, status: number): Promise<void> {
      const received = ctx.oidc?.params?.redirect_uri;
      render(ctx, 'error', {
        title: en('wrongRedirectUri'),
        message: clientName(ctx) ? en('redirectMismatch', { app: clientName(ctx) }) : en('redirectMismatchUnnamed'),
        status,
        currentUser: await signedInUser(ctx),
        details: [
          { label: en('application'), value: clientName(ctx) ?? '' },
          { label: en('redirectUriReceived'), value: typeof received === 'string' ? received : null, code: true },
        ],
        hint: en('redirectHint'),
      }, status);
    },

    /**
     * A request naming a client_id no application has (never registered, or deleted since): said
     * in words, with the client_id received, rather than the library's "invalid_client".
     */
    async unknownClient(ctx: KoaContextWithOIDC, status: number): Promise<void> {
      const received = ctx.oidc?.params?.client_id;
      render(ctx, 'error', {
        title: en('unknownApp'),
        message: en('unknownAppMessage'),
        status,
        currentUser: await signedInUser(ctx),
        details: [{ label: en('clientIdReceived'), value: typeof received === 'string' ? received : null, code: true }],
        hint: en('unknownAppHint'),
      }, status);
    },

    /** "Sign out of Horizon ID?" for a signed-in person: the library's form, our words and buttons. */
    async logoutSource(ctx: KoaContextWithOIDC, form: string): Promise<void> {
      const currentUser = await signedInUser(ctx);
      render(ctx, 'logout/confirm', {
        title: pageT(ctx)('logout:titleConfirm'),
        currentUser,
        libraryForm: form,
        formId: LIBRARY_LOGOUT_FORM_ID,
        clientName: clientName(ctx),
      }, 200);
    },

    /** Where a sign-out without a registered return address ends. */
    async postLogoutSuccessSource(ctx: KoaContextWithOIDC): Promise<void> {
      const currentUser = await signedInUser(ctx);
      const t = pageT(ctx);
      render(ctx, 'logout/done', { title: t(currentUser ? 'logout:titleDoneApp' : 'logout:titleDone'), currentUser, clientName: clientName(ctx) }, 200);
    },

    /**
     * The device flow's code-entry page at /login/device (`deviceFlow.userCodeInputSource`), and
     * where the library sends every error of that flow. A code that is wrong, expired or used is
     * said beside the field, with the code kept; a flow the person cancelled (at the confirmation
     * or the consent page) or that failed ends on a page of its own. The form is the library's
     * (its address, its one-time `xsrf`), without its inline script.
     */
    async userCodeInputSource(ctx: KoaContextWithOIDC, _form: string, out?: ErrorOut, err?: Error & { userCode?: string }): Promise<void> {
      const currentUser = await signedInUser(ctx);
      const action = ctx.oidc.urlFor('code_verification');
      // The code page and the result page share their words (device.json): one language for both.
      const t = pageT(ctx);
      const problemOf = (name: string) => (CODE_PROBLEMS.has(name) ? t(`device:problems.${name}`) : undefined);
      if (err && neverStored(ctx)) {
        // An error of the resume address in a session the library never stored (a browser that
        // came back signed out): the code form's one-time value could not be kept, and storing
        // the session now fails in the library. The problem is said on a page without a form.
        (ctx.oidc.session as { touched?: boolean }).touched = false;
        render(ctx, 'device/result', {
          title: t('device:titleNotConnected'),
          currentUser,
          outcome: 'failed',
          action,
          message: problemOf(err.name) ?? t('device:cannotComplete'),
        }, ctx.status >= 400 ? ctx.status : 400);
        return;
      }
      if (err && !CODE_PROBLEMS.has(err.name)) {
        const aborted = err.name === 'AbortedError';
        render(ctx, 'device/result', {
          title: t('device:titleNotConnected'),
          currentUser,
          outcome: 'failed',
          action,
          // The library's description is for the application's developer: it stays as the library wrote it.
          message: aborted ? t('device:cancelled') : t('device:failed', { reason: String(out?.error_description ?? out?.error ?? 'the request failed') }),
        }, aborted ? 200 : ctx.status >= 400 ? ctx.status : 400);
        return;
      }
      render(ctx, 'device/code', {
        title: t('device:titleCode'),
        currentUser,
        action,
        xsrf: sessionSecret(ctx),
        userCode: err?.userCode ?? '',
        problem: err ? problemOf(err.name) : null,
      }, 200);
    },

    /**
     * "Connect <application>?": the code, the application with its group, what it asks for (in
     * the consent page's words) and where the request came from, before sign-in and consent.
     * Anyone can ask for a device code: the person must see whom a click here would serve.
     */
    async userCodeConfirmSource(ctx: KoaContextWithOIDC, _form: string, client: { clientName?: string; clientId: string }, deviceInfo: { ip?: string; ua?: string } | undefined, userCode: string): Promise<void> {
      const { groupName } = await consentSubject(db, client.clientId);
      const requested = ctx.oidc.entities.DeviceCode as { params?: Record<string, unknown> } | undefined;
      const currentUser = await signedInUser(ctx);
      render(ctx, 'device/confirm', {
        title: pageT(ctx)('device:titleConfirm', { app: client.clientName ?? client.clientId }),
        currentUser,
        appName: client.clientName ?? client.clientId,
        groupName,
        scopes: describeScopes(String(requested?.params?.scope ?? '')),
        device: { ip: deviceInfo?.ip ?? '', ua: deviceInfo?.ua ?? '' },
        userCode,
        action: ctx.oidc.urlFor('code_verification'),
        xsrf: sessionSecret(ctx),
      }, 200);
    },

    /** The device flow's end, once the person consented: the device's next poll gets its tokens. */
    async deviceSuccessSource(ctx: KoaContextWithOIDC): Promise<void> {
      const currentUser = await signedInUser(ctx);
      render(ctx, 'device/result', {
        title: pageT(ctx)('device:titleConnected'),
        currentUser,
        outcome: 'success',
        appName: clientName(ctx) ?? '',
        action: ctx.oidc.urlFor('code_verification'),
      }, 200);
    },

    /**
     * With nobody signed in, the library answers the logout request with a page whose inline
     * script submits its form at once. The same form here, submitted by /static/site.js (and by
     * its Continue button without scripts), so the person still goes straight back to the client.
     */
    signedOutLogout(ctx: KoaContextWithOIDC): void {
      const secret = (ctx.oidc.session?.state as { secret?: string } | undefined)?.secret ?? '';
      render(ctx, 'logout/continue', {
        title: pageT(ctx)('logout:titleDone'),
        currentUser: null,
        action: ctx.oidc.urlFor('end_session_confirm'),
        xsrf: secret,
      }, 200);
    },
  };
}

export type ProviderPages = ReturnType<typeof providerPages>;

/**
 * The library's errors about the code entered (lib/helpers/re_render_errors.js), said beside the
 * field in the words of `device:problems.<name>` (locales/<language>/device.json).
 */
const CODE_PROBLEMS: ReadonlySet<string> = new Set(['NoCodeError', 'NotFoundError', 'ExpiredError', 'AlreadyUsedError']);

/** A session the library made for this request and has not saved: it has no expiry yet. */
function neverStored(ctx: KoaContextWithOIDC): boolean {
  const session = ctx.oidc.session as { exp?: unknown } | undefined;
  return Boolean(session) && typeof session!.exp !== 'number';
}

/** The one-time value the library's device forms carry (`xsrf`), kept in the session's state. */
function sessionSecret(ctx: KoaContextWithOIDC): string {
  return (ctx.oidc.session?.state as { secret?: string } | undefined)?.secret ?? '';
}

/**
 * The logout request of a person who is not signed in: the library answers it with a page that
 * submits its form by inline script (lib/actions/end_session.js), which the site's CSP refuses.
 * That answer is replaced with pages.signedOutLogout, the same form without inline script.
 */
export function scriptlessSignedOutLogout(pages: ProviderPages) {
  return async function replaceSignedOutLogoutPage(ctx: Context, next: Next): Promise<void> {
    await next();
    const { oidc } = ctx as KoaContextWithOIDC;
    if (oidc?.route === 'end_session' && ctx.status === 200 && !oidc.session?.accountId) pages.signedOutLogout(ctx as KoaContextWithOIDC);
  };
}
