import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { TTL } from '../vocabulary.js';

/**
 * The site's sign-in is oidc-provider's own session: signing in on the site means the
 * authorization flow does not ask again, and signing in during a flow signs in on the site.
 */
type StoredSession = InstanceType<Provider['Session']> & { new?: boolean; id: string };

export class SiteSessions {
  constructor(private readonly provider: Provider, private readonly secure: boolean) {}

  private cookies(ctx: Context) {
    return this.provider.createContext(ctx.req, ctx.res).cookies;
  }

  private get cookieOptions() {
    return { httpOnly: true, sameSite: 'lax' as const, secure: this.secure, overwrite: true, signed: true };
  }

  async accountId(ctx: Context): Promise<number | undefined> {
    const name = this.provider.cookieName('session');
    if (!ctx.cookies.get(name)) return undefined;
    const session = await this.provider.Session.get(ctx as never);
    return session.accountId ? Number(session.accountId) : undefined;
  }

  /** A new session (new id) on every sign-in: no session fixation, no grants of a previous user. */
  async signIn(ctx: Context, userId: number): Promise<void> {
    const previous = (await this.provider.Session.get(ctx as never)) as StoredSession;
    if (!previous.new) await previous.destroy();
    const session = new this.provider.Session() as StoredSession;
    session.loginAccount({ accountId: String(userId) });
    await session.save(TTL.Session);
    this.cookies(ctx).set(this.provider.cookieName('session'), session.id, {
      ...this.cookieOptions,
      maxAge: TTL.Session * 1000,
    });
  }

  async signOut(ctx: Context): Promise<void> {
    const session = (await this.provider.Session.get(ctx as never)) as StoredSession;
    if (!session.new) await session.destroy();
    this.cookies(ctx).set(this.provider.cookieName('session'), null, this.cookieOptions);
  }
}
