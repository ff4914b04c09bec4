import type { KoaContextWithOIDC } from 'oidc-provider';
import { renderPage } from '../web/render.js';

/**
 * The pages of RP-initiated logout in the site's own layout. The library's defaults carry inline
 * styles and a web font from another origin, which the Content-Security-Policy refuses.
 * `form` is the library's own hidden form (its action and xsrf value), placed as it is.
 */
export async function logoutSource(ctx: KoaContextWithOIDC, form: string): Promise<void> {
  ctx.type = 'html';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = renderPage('logout', { title: 'Sign out', form });
}

export async function postLogoutSuccessSource(ctx: KoaContextWithOIDC): Promise<void> {
  ctx.type = 'html';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = renderPage('logout-success', { title: 'Signed out', appName: ctx.oidc.client?.clientName ?? '' });
}
