import type { Context, Next } from 'koa';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { SessionIndex } from '../services/sessions.js';

/**
 * Keeps Account settings → Sessions in step with the sessions the provider's own routes handle
 * (the authorization flow signs in and resumes, logout signs out): after the route, a signed-in
 * session is recorded as seen, and a session the route destroyed is forgotten.
 */
export function indexProviderSessions(index: SessionIndex, onError: (err: unknown) => void) {
  return async function indexSession(ctx: Context, next: Next): Promise<void> {
    await next();
    const session = (ctx as KoaContextWithOIDC).oidc?.session as (KoaContextWithOIDC['oidc']['session'] & { destroyed?: boolean }) | undefined;
    if (!session) return;
    if (session.destroyed) await index.forget(session.uid).catch(onError);
    else if (session.accountId) await index.seen(session, { ip: ctx.ip, userAgent: ctx.get('user-agent') });
  };
}
