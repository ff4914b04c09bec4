import { expect } from 'chai';
import { openIdConnect, parseIssuer } from '../../src/services/federation/oidc.js';
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
    expect(() => parseIssuer('')).to.throw('the issuer must be a URL');
    expect(() => parseIssuer('sso.example.com')).to.throw('the issuer must be an absolute URL');
    expect(() => parseIssuer('ftp://sso.example.com')).to.throw('must use https');
    expect(() => parseIssuer('https://sso.example.com/?tenant=1')).to.throw('query');
    expect(() => parseIssuer('https://user:pw@sso.example.com')).to.throw('user name or password');
  });

  it('takes plain http only for an upstream on this machine', () => {
    expect(() => parseIssuer('http://sso.example.com')).to.throw('must use https');
    expect(parseIssuer('http://127.0.0.1:4000/')).to.equal('http://127.0.0.1:4000');
    expect(parseIssuer('http://localhost:4000/realms/x')).to.equal('http://localhost:4000/realms/x');
  });
});
