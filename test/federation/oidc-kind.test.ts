import { rejects } from 'node:assert/strict';
import { expect } from 'chai';
import { discover, openIdConnect, parseIssuer } from '../../src/services/federation/oidc.js';
import { kindOf } from '../../src/services/federation/kinds.js';

/** The generic OpenID Connect kind's setting and its rule for plain http, without a network. */
describe('The OpenID Connect sign-in provider kind', () => {
  it('is registered as oidc, asks for openid email profile, and expects an ID token', () => {
    expect(kindOf('oidc')).to.equal(openIdConnect);
    expect(openIdConnect.defaultScopes).to.deep.equal(['openid', 'email', 'profile']);
    expect(openIdConnect.usesIdToken).to.equal(true);
    expect(openIdConnect.settings.map((s) => [s.name, s.required])).to.deep.equal([['issuer', true]]);
  });

  it('takes an issuer URL without its trailing slash, and refuses what is not one', () => {
    expect(parseIssuer(' https://sso.example.com/ ')).to.equal('https://sso.example.com');
    expect(parseIssuer('https://sso.example.com/realms/corp')).to.equal('https://sso.example.com/realms/corp');
    expect(() => parseIssuer('sso.example.com')).to.throw('the issuer must be a URL');
    expect(() => parseIssuer('ftp://sso.example.com')).to.throw('https URL');
    expect(() => parseIssuer('https://sso.example.com/?tenant=1')).to.throw('query');
    expect(() => parseIssuer('https://user:pw@sso.example.com')).to.throw('credentials');
  });

  it('refuses a plain http issuer on another host unless http is allowed (outside production), before any request', async () => {
    const provider = { clientId: 'id', clientSecret: 'secret' };
    await rejects(discover('http://sso.example.com', provider, { timeoutMs: 100 }), /only an https issuer may be used in production/);
  });
});
