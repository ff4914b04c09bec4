import type Koa from 'koa';
import type Provider from 'oidc-provider';

/**
 * Every URL the service writes is built from ISSUER, never from request headers. Koa derives a
 * request's protocol from the socket or X-Forwarded-Proto; here it is the issuer's, so
 * `ctx.secure` (which decides whether Secure cookies may be sent) says what the public side
 * of the connection is. The Host is the issuer's already (see host.ts).
 */
export function protocolOfIssuer(app: Koa, issuer: string): void {
  const protocol = new URL(issuer).protocol.replace(/:$/, '');
  Object.defineProperty(app.request, 'protocol', { get: () => protocol, configurable: true });
}

/**
 * oidc-provider builds endpoint URLs (discovery, redirects to its own routes) from the request
 * (`ctx.href`); its provider-level `urlFor` uses the issuer. Every request context uses that one.
 */
export function providerUrlsFromIssuer(provider: Provider): void {
  const OIDCContext = (provider as unknown as { OIDCContext: { prototype: { urlFor(name: string, opt?: unknown): string } } }).OIDCContext;
  OIDCContext.prototype.urlFor = function urlFor(name: string, opt?: unknown): string {
    return provider.urlFor(name, opt as never);
  };
}
