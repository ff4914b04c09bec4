import type { Context } from 'koa';

/**
 * A short-lived, signed, HttpOnly cookie holding a few fields, for state between two requests
 * of one person (a sign-in waiting for its second factor, a passkey challenge). It is signed with
 * the cookie keys, so it cannot be made or altered, and it carries its own expiry, so an old copy
 * is worth nothing after `lifetimeMs`.
 */
export class SignedCookie {
  constructor(
    private readonly name: string,
    private readonly lifetimeMs: number,
    private readonly secure: boolean,
  ) {}

  private get options() {
    return { httpOnly: true, sameSite: 'lax' as const, secure: this.secure, signed: true, overwrite: true };
  }

  /** Fields may not contain a dot. */
  set(ctx: Context, fields: string[]): void {
    ctx.cookies.set(this.name, [Date.now() + this.lifetimeMs, ...fields].join('.'), { ...this.options, maxAge: this.lifetimeMs });
  }

  /** The fields, if the cookie is there, genuine and not expired. */
  read(ctx: Context): string[] | undefined {
    const value = ctx.cookies.get(this.name, { signed: true });
    if (!value) return undefined;
    const [until, ...fields] = value.split('.');
    return Number(until) > Date.now() ? fields : undefined;
  }

  clear(ctx: Context): void {
    ctx.cookies.set(this.name, null, this.options);
  }
}
