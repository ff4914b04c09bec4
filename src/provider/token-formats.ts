import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { generateToken } from '../tokens.js';
import { hashedSecretComparison } from './clients.js';

/**
 * The values the provider hands out and takes in, in the service's formats (tokens.ts: a prefix,
 * 30 base62 characters and a CRC32 checksum) instead of the library's nanoids:
 * access tokens `ho_…`, refresh tokens `hr_…`, and client secrets `hs_…`, compared by digest.
 *
 * No documented option sets a token's value: `formats.bitsOfOpaqueRandomness` sets only its
 * length, `formats.customizers` shapes JWT access tokens only, `extraTokenClaims` adds to what
 * is stored, and the adapter is given the id once it is made. Nor does one replace how a client's
 * secret is compared. So each model's method is replaced on its prototype (the classes are the
 * provider's own, made per instance). Checked against oidc-provider 9.13.3; each replacement names
 * the library's method it stands in for, which a later version may move or change.
 */
export function applyTokenFormats(provider: Provider, deps: { db: Knex; onError: (err: unknown) => void }): void {
  accessTokensAsHo(provider);
  clientCredentialsAsHo(provider);
  refreshTokensAsHr(provider);
  clientSecretsByDigest(provider, deps.db, deps.onError);
}

interface TokenPrototype {
  generateTokenId(this: { format?: string }): string;
}

/**
 * Stands in for oidc-provider/lib/models/access_token.js#generateTokenId, which calls
 * lib/models/formats/index.js#generateTokenId: that one records the format on the token
 * (`opaque` unless a resource server asks for `jwt`) and returns
 * lib/models/formats/opaque.js#generateTokenId, a nanoid. Here an opaque token's value is
 * `ho_…`; a token for a resource whose format is `jwt` (resource-servers.ts) is left to the
 * library, which makes an RFC 9068 JWT of it.
 */
function accessTokensAsHo(provider: Provider): void {
  const prototype = provider.AccessToken.prototype as unknown as TokenPrototype & { resourceServer?: { accessTokenFormat?: string } };
  const libraryTokenId = prototype.generateTokenId;
  prototype.generateTokenId = function generateAccessTokenId(this: { format?: string; resourceServer?: { accessTokenFormat?: string } }) {
    if (this.resourceServer?.accessTokenFormat === 'jwt') return libraryTokenId.call(this);
    this.format = 'opaque';
    return generateToken('ho_');
  };
}

/**
 * Stands in for oidc-provider/lib/models/client_credentials.js#generateTokenId, which calls the
 * same lib/models/formats/index.js#generateTokenId as AccessToken: an application acting as itself
 * gets an `ho_…` opaque token like every other access token (a JWT for a `jwt` resource, as above).
 */
function clientCredentialsAsHo(provider: Provider): void {
  const prototype = provider.ClientCredentials.prototype as unknown as TokenPrototype;
  const libraryTokenId = prototype.generateTokenId;
  prototype.generateTokenId = function generateClientCredentialsId(this: { format?: string; resourceServer?: { accessTokenFormat?: string } }) {
    if (this.resourceServer?.accessTokenFormat === 'jwt') return libraryTokenId.call(this);
    this.format = 'opaque';
    return generateToken('ho_');
  };
}

/**
 * Stands in for the method RefreshToken inherits, oidc-provider/lib/models/base_model.js#generateTokenId,
 * which returns lib/models/formats/opaque.js#generateTokenId, a nanoid. The value is `hr_…`.
 */
function refreshTokensAsHr(provider: Provider): void {
  (provider.RefreshToken.prototype as unknown as TokenPrototype).generateTokenId = () => generateToken('hr_');
}

/**
 * Stands in for oidc-provider/lib/models/client.js#compareClientSecret (a constant-time
 * comparison with the client's plain `client_secret`, called by lib/shared/client_auth.js for
 * client_secret_basic and client_secret_post): no plain secret is stored, so the presented
 * `hs_…` secret is compared by digest with the client's `secret_digests` (clients.ts).
 */
function clientSecretsByDigest(provider: Provider, db: Knex, onError: (err: unknown) => void): void {
  (provider.Client.prototype as unknown as { compareClientSecret: unknown }).compareClientSecret = hashedSecretComparison(db, onError);
}
