import { hash } from 'node:crypto';
import { calculateJwkThumbprint, EmbeddedJWK, errors as joseErrors, jwtVerify } from 'jose';
import { DPOP_SIGNING_ALGS } from '../provider/configuration.js';

/**
 * How far a proof's `iat` may be from now, either way, in seconds: the window oidc-provider
 * allows at its own endpoints (lib/helpers/challenge.js#CHALLENGE_OK_WINDOW, five minutes), and
 * so how long an accepted proof is remembered against replay.
 */
export const DPOP_IAT_WINDOW_S = 300;

/** A proof is a few hundred characters; anything far longer is refused before it is parsed. */
const MAX_PROOF_LENGTH = 4096;

/** Why a DPoP proof was refused; the message is safe to send back. */
export class DpopProofError extends Error {}

/** What a valid proof says: the thumbprint of the key that signed it, its `jti`, and its `iat`. */
export interface DpopProof {
  jkt: string;
  jti: string;
  iat: number;
}

/**
 * Checks an RFC 9449 proof of possession sent to a resource (§4.3, §7.1) as oidc-provider checks
 * one at its own endpoints (lib/helpers/validate_dpop.js), with no nonces (the provider issues
 * none): a JWT of `typ` dpop+jwt signed with one of DPOP_SIGNING_ALGS by the public key in its
 * `jwk` header, `htm` the request's method, `htu` the request's URL (query and fragment aside),
 * `ath` the access token's SHA-256, a string `jti`, and an `iat` within DPOP_IAT_WINDOW_S of now.
 * Whether the key is the token's, and whether the proof was seen before, are the caller's.
 */
export async function verifyDpopProof(proof: string, expected: { method: string; url: string; accessToken: string }): Promise<DpopProof> {
  if (!proof) throw new DpopProofError('send a DPoP proof in the DPoP header with "Authorization: DPoP"');
  if (proof.length > MAX_PROOF_LENGTH) throw new DpopProofError('the DPoP proof is too long');
  let verified;
  try {
    verified = await jwtVerify(proof, EmbeddedJWK, { algorithms: [...DPOP_SIGNING_ALGS], typ: 'dpop+jwt' });
  } catch (err) {
    // jose's messages name the header or claim that failed; nothing else of the proof is echoed.
    if (err instanceof joseErrors.JOSEError) throw new DpopProofError(`invalid DPoP proof: ${err.message}`);
    throw new DpopProofError('invalid DPoP proof');
  }
  const { payload, protectedHeader } = verified;
  if (typeof payload.iat !== 'number' || !Number.isFinite(payload.iat)) throw new DpopProofError('the DPoP proof must have a numeric iat');
  if (typeof payload.jti !== 'string' || !payload.jti || payload.jti.length > 256) throw new DpopProofError('the DPoP proof must have a jti string');
  if (payload.nonce !== undefined) throw new DpopProofError('DPoP nonces are not supported');
  if (Math.abs(Date.now() / 1000 - payload.iat) > DPOP_IAT_WINDOW_S) throw new DpopProofError('the DPoP proof iat is not recent enough');
  if (payload.htm !== expected.method) throw new DpopProofError('the DPoP proof htm does not match the request method');
  const htu = typeof payload.htu === 'string' ? URL.parse(payload.htu) : null;
  if (htu) {
    htu.search = '';
    htu.hash = '';
  }
  if (!htu || htu.href !== new URL(expected.url).href) throw new DpopProofError('the DPoP proof htu does not match the request URL');
  if (payload.ath !== hash('sha256', expected.accessToken, 'base64url')) {
    throw new DpopProofError('the DPoP proof ath does not match the access token');
  }
  const jkt = await calculateJwkThumbprint(protectedHeader.jwk!);
  return { jkt, jti: payload.jti, iat: payload.iat };
}
