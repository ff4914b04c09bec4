import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { sendLogoutTokens } from '../services/backchannel-logout.js';
import type { SessionIndex } from '../services/sessions.js';
import { acrOf, TTL } from '../vocabulary.js';

/**
 * The site's sign-in is oidc-provider's own session: signing in on the site means the
 * authorization flow does not ask again, and signing in during a flow signs in on the site.
 * Every session signed in here is recorded in Account settings → Sessions, and seen again on
 * each page it reads.
 */
type StoredSession = InstanceType<Provider['Session']> & { new?: boolean; id: string };

export class SiteSessions {
  /** The session a request's cookie names, read from the store once per request. */
  private readonly read = new WeakMap<Context, Promise<StoredSession | undefined>>();

  constructor(private readonly provider: Provider, private readonly secure: boolean, private readonly index: SessionIndex) {}

  private cookies(ctx: Context) {
    return this.provider.createContext(ctx.req, ctx.res).cookies;
  }

  private get cookieOptions() {
    return { httpOnly: true, sameSite: 'lax' as const, secure: this.secure, overwrite: true, signed: true };
  }

  private session(ctx: Context): Promise<StoredSession | undefined> {
    let found = this.read.get(ctx);
    if (!found) {
      const name = this.provider.cookieName('session');
      found = ctx.cookies.get(name) ? (this.provider.Session.get(ctx as never) as Promise<StoredSession>) : Promise.resolve(undefined);
      this.read.set(ctx, found);
    }
    return found;
  }

  private seen(ctx: Context, session: StoredSession): Promise<void> {
    return this.index.seen(session, { ip: ctx.ip, userAgent: ctx.get('user-agent') });
  }

  async accountId(ctx: Context): Promise<number | undefined> {
    const session = await this.session(ctx);
    if (!session?.accountId) return undefined;
    await this.seen(ctx, session);
    return Number(session.accountId);
  }

  /**
   * Whether the request's session signed in through a sign-in provider trusted for two-factor
   * whose own second factor counted (`amr` fed and mfa): such a session counts as two-factor for
   * groups that require it, as the account's own second factor does.
   */
  async upstreamSecondFactor(ctx: Context): Promise<boolean> {
    const session = await this.session(ctx);
    const amr = (session as { amr?: unknown } | undefined)?.amr;
    return Boolean(session?.accountId) && Array.isArray(amr) && amr.includes('fed') && amr.includes('mfa');
  }

  /** The uid of the request's signed-in session (how Account settings → Sessions names it). */
  async uid(ctx: Context): Promise<string | undefined> {
    const session = await this.session(ctx);
    return session?.accountId ? session.uid : undefined;
  }

  /**
   * When the person of the request's session last proved who they are, in milliseconds since the
   * epoch: its sign-in (the provider's own record of it, whichever page signed in), or a
   * confirmation since (recorded in the session's row of Account settings → Sessions). Undefined
   * when signed out. Per session: a proof given in one browser says nothing about another.
   */
  async lastProof(ctx: Context): Promise<number | undefined> {
    const session = await this.session(ctx);
    if (!session?.accountId) return undefined;
    const confirmed = await this.index.confirmedAt(session);
    const signedIn = typeof session.loginTs === 'number' ? session.loginTs * 1000 : undefined;
    const proofs = [signedIn, confirmed?.getTime()].filter((t): t is number => t !== undefined);
    return proofs.length ? Math.max(...proofs) : undefined;
  }

  /** The person of the request's session has just proved who they are again (password, second factor, passkey). */
  async confirmed(ctx: Context): Promise<void> {
    const session = await this.session(ctx);
    if (session?.accountId) await this.index.confirmed(session, { ip: ctx.ip, userAgent: ctx.get('user-agent') });
  }

  /**
   * A new session (new id) on every sign-in: no session fixation, no grants of a previous user.
   * `amr` says how the person signed in; ID tokens of the session carry it (and `acr`, when asked).
   */
  async signIn(ctx: Context, userId: number, amr: string[] = ['pwd']): Promise<void> {
    this.read.delete(ctx);
    const previous = (await this.provider.Session.get(ctx as never)) as StoredSession;
    if (!previous.new) await this.destroy(previous);
    const session = new this.provider.Session() as StoredSession;
    session.loginAccount({ accountId: String(userId), amr, acr: acrOf(amr) });
    await session.save(TTL.Session);
    await this.seen(ctx, session);
    this.cookies(ctx).set(this.provider.cookieName('session'), session.id, {
      ...this.cookieOptions,
      maxAge: TTL.Session * 1000,
    });
  }

  async signOut(ctx: Context): Promise<void> {
    this.read.delete(ctx);
    const session = (await this.provider.Session.get(ctx as never)) as StoredSession;
    if (!session.new) await this.destroy(session);
    this.cookies(ctx).set(this.provider.cookieName('session'), null, this.cookieOptions);
  }

  /** Ends a session, then tells the applications it signed in to, in the background (back-channel logout). */
  private async destroy(session: StoredSession): Promise<void> {
    await session.destroy();
    await this.index.forget(session.uid);
    void sendLogoutTokens(this.provider, session);
  }
}
