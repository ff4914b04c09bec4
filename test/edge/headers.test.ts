import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn } from '../helpers/browser.js';
import { CALLBACK, makeClient, type Client, type TestUser } from '../helpers/factories.js';
import { formAction } from '../helpers/html.js';
import { authorizeUrl } from '../helpers/oauth.js';

function directives(csp: string | null): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const directive of (csp ?? '').split(';')) {
    const [name, ...values] = directive.trim().split(/\s+/);
    if (name) map.set(name, values);
  }
  return map;
}

/**
 * Every page template under views/, for the static checks. Mail templates (views/mail/) are not
 * pages: no CSP applies to them, and mail programs honour only inline styles.
 */
function viewFiles(dir = join(process.cwd(), 'views')): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (path === join(process.cwd(), 'views', 'mail')) return [];
    return statSync(path).isDirectory() ? viewFiles(path) : name.endsWith('.ejs') ? [path] : [];
  });
}

describe('templates', () => {
  it('hold no inline script, inline style or event-handler attribute', () => {
    const offending = viewFiles().filter((file) => {
      const text = readFileSync(file, 'utf8');
      return /<script(?![^>]*\ssrc=)[^>]*>/i.test(text) || /<style/i.test(text) || /\sstyle=/i.test(text) || /\son[a-z]+=/i.test(text);
    });
    expect(offending).to.deep.equal([]);
  });
});

describeEachProfile('security headers', (profile) => {
  const server = useIdp(profile);
  let owner: TestUser;
  let app: Client;

  before(async () => {
    app = await makeClient(server.db);
    owner = app.user;
  });

  it('sends the Content-Security-Policy on every page, without inline script', async () => {
    const browser = await signIn(server.url, owner);
    for (const path of ['/login', '/signup', '/groups', '/account/settings/tokens', '/no-such-page']) {
      const res = await browser.get(path);
      const csp = directives(res.headers.get('content-security-policy'));
      expect(csp.get('default-src'), path).to.deep.equal(["'self'"]);
      expect(csp.get('script-src'), path).to.deep.equal(["'self'"]);
      expect(csp.get('style-src'), path).to.deep.equal(["'self'"]);
      expect(csp.get('frame-ancestors'), path).to.deep.equal(["'none'"]);
      expect(csp.get('object-src'), path).to.deep.equal(["'none'"]);
      expect(csp.get('base-uri'), path).to.deep.equal(["'none'"]);
      expect(csp.get('form-action'), path).to.deep.equal(["'self'"]);
    }
  });

  it('serves pages whose scripts and styles all come from files', async () => {
    const browser = await signIn(server.url, owner);
    for (const path of ['/login', '/groups', '/account/settings/tokens']) {
      const html = (await browser.get(path)).text;
      expect(html, path).to.not.match(/<script(?![^>]*\ssrc=)[^>]*>|<style|\sstyle=/i);
    }
  });

  it('sends X-Content-Type-Options and Referrer-Policy on pages, the API and the OAuth endpoints', async () => {
    for (const path of ['/login', '/apis/v2/user', '/.well-known/openid-configuration']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.headers.get('x-content-type-options'), path).to.equal('nosniff');
      expect(res.headers.get('referrer-policy'), path).to.equal('no-referrer');
    }
  });

  it('renders the sign-out confirmation of RP-initiated logout in the site\'s layout, and it signs out', async () => {
    const browser = await signIn(server.url, owner);
    const page = await browser.get('/login/oauth/logout');
    const html = page.text;
    expect(page.status).to.equal(200);
    expect(html).to.include('id="op.logoutForm"').and.include('/static/site.css').and.not.match(/<style|\sstyle=/i);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)![1]!;
    const done = await browser.postForm(formAction(html, '/logout/confirm'), { xsrf, logout: 'yes' });
    const success = await browser.follow(done);
    expect(success.text).to.include('Signed out');
    expect((await browser.get('/groups')).status).to.equal(302);
  });

  it('sends no Strict-Transport-Security under an http ISSUER', async () => {
    const res = await fetch(`${server.url}/login`);
    expect(res.headers.get('strict-transport-security')).to.equal(null);
  });

  it('lets the sign-in and consent pages of a flow reach the application\'s callback origin, and nothing else', async () => {
    const browser = new Browser(server.url);
    const res = await browser.follow(authorizeUrl(server.url, app));
    expect(res.status).to.equal(200);
    expect(directives(res.headers.get('content-security-policy')).get('form-action')).to.deep.equal(["'self'", 'http://127.0.0.1:9999']);
  });

  it('adds the digest of the form_post page\'s one inline script to its script-src', async () => {
    const browser = new Browser(server.url);
    let res = await browser.follow(authorizeUrl(server.url, { ...app, extra: { response_mode: 'form_post' } }));
    let html = res.text;
    for (let step = 0; step < 3 && !html.includes(`action="${CALLBACK}"`); step += 1) {
      const fields: Record<string, string> = html.includes('name="password"') ? { login: owner.username, password: owner.password } : {};
      res = await browser.follow(await browser.submit(formAction(html, html.includes('name="password"') ? '/login' : '/confirm'), fields));
      html = res.text;
    }
    expect(html).to.include(`action="${CALLBACK}"`);
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!;
    const digest = `'sha256-${createHash('sha256').update(script).digest('base64')}'`;
    const csp = directives(res.headers.get('content-security-policy'));
    expect(csp.get('script-src')).to.deep.equal(["'self'", digest]);
    expect(csp.get('frame-ancestors')).to.deep.equal(["'none'"]);
  });
});

describeEachProfile('security headers under an https ISSUER', (profile) => {
  const server = useIdp(profile, { ISSUER: 'https://idp.example' });

  it('sends Strict-Transport-Security', async () => {
    const res = await new Browser(server.local).request('/login', { headers: { host: 'idp.example' } });
    expect(res.headers.get('strict-transport-security')).to.equal('max-age=31536000');
  });
});
