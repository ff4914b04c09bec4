import { expect } from 'chai';
import { returnToQuery, safeReturnTo } from '../../src/web/context.js';

describe('Return targets after sign-in, sign-up and mailed links', () => {
  it('keeps same-site paths as given', () => {
    for (const path of ['/groups', '/login/oauth/authorize?client_id=abc&scope=groups%3Aread-only', '/.//evil.example', '/a/b?c=%2F%2Fd#e']) {
      expect(safeReturnTo(path)).to.equal(path);
    }
  });

  it('refuses anything a browser could read as another origin', () => {
    const refused = ['//evil.example', '/\\evil.example', '\\\\evil.example', 'https://evil.example', 'http:/evil.example', 'javascript:alert(1)',
      '/\t/evil.example', '/\n/evil.example', ' //evil.example', '', 'groups', `/${'a'.repeat(5000)}`];
    for (const target of refused) expect(safeReturnTo(target), JSON.stringify(target)).to.equal('/groups');
    expect(safeReturnTo(['/groups', '//evil.example'])).to.equal('/groups');
    expect(safeReturnTo(undefined, '')).to.equal('');
  });

  it('carries a safe target on as a query, and nothing else', () => {
    expect(returnToQuery('/login/oauth/authorize?a=1&b=2')).to.equal('?return_to=%2Flogin%2Foauth%2Fauthorize%3Fa%3D1%26b%3D2');
    expect(returnToQuery('//evil.example')).to.equal('');
    expect(returnToQuery(undefined)).to.equal('');
  });
});
