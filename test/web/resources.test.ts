import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { createResource } from '../../src/services/resources/manage.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, visit, type Page } from '../helpers/browser.js';
import { groupAccess, joinGroup, makeGroup, signedInOwner, type TestUser } from '../helpers/factories.js';
import { fieldError, formAction, inputValue, unescapeHtml } from '../helpers/html.js';
import { formsIn } from '../helpers/forms.js';

/** The labels of the Register form's boxes, as a person reads them. */
const L = {
  identifier: 'Identifier',
  name: 'Name',
  opaque: 'Opaque (ho_…)',
  jwt: 'JWT (RFC 9068)',
  scope: (n: number) => `Scope ${n}`,
  description: (n: number) => `Description of scope ${n}`,
};

/** The rows of a table, as plain text, tags removed. */
function rows(html: string, testId: string): string[] {
  return [...html.matchAll(new RegExp(`<tr data-testid="${testId}"[^>]*>([\\s\\S]*?)</tr>`, 'g'))].map((m) =>
    unescapeHtml(m[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()),
  );
}

function notice(page: Page): string | undefined {
  const found = /data-testid="notice">([^<]*)</.exec(page.text)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

function testText(page: Page, testId: string): string | undefined {
  const found = new RegExp(`data-testid="${testId}"[^>]*>([^<]*)<`).exec(page.text)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/** What the introspection endpoint answers a resource's server that authenticates as `clientId:secret`. */
async function introspect(issuer: string, clientId: string, secret: string): Promise<number> {
  const res = await fetch(`${issuer}/login/oauth/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}` },
    body: new URLSearchParams({ token: 'ho_not-a-token-of-anyone' }),
  });
  await res.arrayBuffer();
  return res.status;
}

describeEachProfile('Group settings → Resources', (profile) => {
  const idp = useIdp(profile);
  const resources = (group: GroupRow) => `/groups/${group.path}/settings/resources`;
  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
  let served = 0;
  /** An identifier no other test of the suite uses (identifiers are unique on the site). */
  const identifier = (name = 'mcp') => `https://tools-${profile.replace(/\W/g, '-')}-${(served += 1)}.example.test/${name}`;

  /** Opens Register resource from the Resources page's button and fills it in by its labels. */
  async function registerThroughForm(client: Browser, group: GroupRow, byLabel: Record<string, string>) {
    const list = await client.get(resources(group)).expect(200);
    const href = /<a class="button primary" href="([^"]+)" data-testid="add-resource">/.exec(list.text)?.[1];
    expect(href).to.equal(`${resources(group)}/new`);
    const form = await client.get(href!).expect(200);
    return { form, sent: client.fill(form, '/resources/new', byLabel) };
  }

  /** Registers a resource through the form; its page as first shown (with the secret), and its address. */
  async function register(client: Browser, group: GroupRow, byLabel: Record<string, string> = {}) {
    const id0 = byLabel[L.identifier] ?? identifier();
    const { sent } = await registerThroughForm(client, group, {
      [L.identifier]: id0, [L.name]: 'Tools API', [L.scope(1)]: 'tools:read', [L.description(1)]: 'Read your tools', ...byLabel,
    });
    const created = await sent.expect(302, new RegExp(`^${resources(group)}/\\d+\\?notice=created$`));
    const page = await client.follow(created).expect(200);
    const href = created.headers.get('location')!.replace(/\?.*$/, '');
    return { page, href, identifier: id0, id: Number(/\/(\d+)$/.exec(href)![1]) };
  }

  describe('the Resources page', () => {
    it('says in one line what a resource is when the group has none, with a Register resource button', async () => {
      const { group, client } = await signedInOwner(idp);
      const page = await client.get(resources(group)).expect(200);
      expect(testText(page, 'no-resources')).to.equal('A resource is an API you run, such as an MCP server, that applications get tokens for. This group has none yet.');
      expect(page.text).to.include(`href="${resources(group)}/new"`);
    });

    it('is a tab of the group settings for an owner, after Webhooks', async () => {
      const { group, client } = await signedInOwner(idp);
      const general = await client.get(`/groups/${group.path}/settings`).expect(200);
      const tabs = [...general.text.matchAll(new RegExp(`href="/groups/${group.path}/settings(/[a-z]+)?"`, 'g'))].map((m) => m[1] ?? '');
      expect(tabs.indexOf('/resources')).to.equal(tabs.indexOf('/webhooks') + 1);
      const page = await client.get(resources(group)).expect(200);
      expect(page.text).to.match(new RegExp(`href="${resources(group)}" aria-current="page"`));
    });

    it('lists each resource with its name, identifier, token format and number of scopes', async () => {
      const { group, client } = await signedInOwner(idp);
      const first = await register(client, group, { [L.scope(2)]: 'tools:write', [L.description(2)]: 'Change your tools' });
      const second = await register(client, group, { [L.name]: 'Billing', [L.jwt]: 'checked' });
      const list = await client.get(resources(group)).expect(200);
      const [one, two] = rows(list.text, 'resource-row');
      expect(one).to.equal(`Tools API ${first.identifier} Opaque 2 scopes`);
      expect(two).to.equal(`Billing ${second.identifier} JWT 1 scope`);
    });
  });

  describe('Register resource', () => {
    it('starts with an empty identifier and name, Opaque checked, and three empty scope rows', async () => {
      const { group, client } = await signedInOwner(idp);
      const form = await client.get(`${resources(group)}/new`).expect(200);
      expect(inputValue(form.text, 'identifier')).to.equal('');
      expect(form.text).to.match(/<input type="radio" id="tokenFormat-opaque" name="tokenFormat" value="opaque"[^>]* checked>/);
      expect(form.text).not.to.match(/id="tokenFormat-jwt"[^>]* checked/);
      const [fields] = formsIn(form.text, form.url).filter((f) => f.action.pathname.endsWith('/resources/new'));
      expect(fields).to.not.equal(undefined);
      expect((form.text.match(/name="scopeName" value=""/g) ?? []).length).to.equal(3);
      expect((form.text.match(/name="scopeDescription" value=""/g) ?? []).length).to.equal(3);
      expect(fields!.fields.map((f) => f.name)).to.include.members(['_csrf', '_once', 'identifier', 'name', 'tokenFormat', 'scopeName', 'scopeDescription']);
    });

    it('registers the resource, ignoring blank rows, and shows its introspection secret once: it works, and a reload shows it no more', async () => {
      const { group, client } = await signedInOwner(idp);
      const { page, href, identifier: id0, id } = await register(client, group, { [L.scope(3)]: 'tools:admin', [L.description(3)]: 'Manage your tools' });
      expect(notice(page)).to.equal('Resource registered. Copy its introspection secret now: it is not shown again.');
      const secret = testText(page, 'introspection-secret')!;
      const clientId = testText(page, 'introspection-client-id')!;
      expect(secret).to.match(/^hs_/);
      expect(clientId).to.match(/^rs_/);
      expect(testText(page, 'secret-last-four')).to.equal(`hs_••••••••${secret.slice(-4)}`);
      const row = (await idp.db('resources').where({ id }).first()) as { scopes: string; identifier: string; token_format: string };
      expect(JSON.parse(row.scopes)).to.deep.equal([{ name: 'tools:read', description: 'Read your tools' }, { name: 'tools:admin', description: 'Manage your tools' }]);
      expect(row).to.include({ identifier: id0, token_format: 'opaque' });
      // The secret shown is the server's: the introspection endpoint takes it.
      expect(await introspect(idp.url, clientId, secret)).to.equal(200);
      expect(await introspect(idp.url, clientId, `${secret}x`)).to.equal(401);
      const again = await client.get(href).expect(200);
      expect(again.text).not.to.include(secret);
      expect(again.text).not.to.include('data-testid="new-secret-box"');
      const audit = await client.get(`/groups/${group.path}/settings/audit`).expect(200);
      expect(unescapeHtml(audit.text)).to.include('Resource registered').and.include(id0);
    });

    it('shows the introspection endpoint, the metadata URL and the RFC 9728 document to copy', async () => {
      const { group, client } = await signedInOwner(idp);
      const { page, identifier: id0 } = await register(client, group, { [L.identifier]: identifier('mcp/v1') });
      expect(testText(page, 'introspection-url')).to.equal(`${idp.url}/login/oauth/introspect`);
      const metadataUrl = testText(page, 'metadata-url')!;
      expect(metadataUrl).to.equal(`${idp.url}/login/oauth/resource-metadata?${new URLSearchParams({ resource: id0 })}`);
      const shown = JSON.parse(testText(page, 'metadata-json')!) as unknown;
      expect(shown).to.deep.equal({ resource: id0, authorization_servers: [idp.url], scopes_supported: ['tools:read'], bearer_methods_supported: ['header'], resource_name: 'Tools API' });
      // The document shown is the one published.
      expect(await (await fetch(metadataUrl)).json()).to.deep.equal(shown);
      expect(unescapeHtml(page.text)).to.include(`${new URL(id0).origin}/.well-known/oauth-protected-resource/mcp/v1`);
    });

    it('keeps what was typed, each scope row in place, when it refuses the form, with the error beside the row', async () => {
      const { group, client } = await signedInOwner(idp);
      const { sent } = await registerThroughForm(client, group, {
        [L.identifier]: 'https://tools.example.test/mcp?x=1', [L.name]: 'Typed name', [L.jwt]: 'checked',
        [L.scope(1)]: 'tools:read', [L.description(1)]: 'Read your tools', [L.scope(3)]: 'bad scope!', [L.description(3)]: 'Broken',
      });
      const page = await sent.expect(400);
      expect(fieldError(page.text, 'identifier')).to.equal('Identifier must not contain a query (?…)');
      expect(fieldError(page.text, 'scope-2')).to.equal('Scope name must be 1 to 64 letters, digits or _ . : / - (starting with a letter or digit)');
      expect(fieldError(page.text, 'scope-0')).to.equal(undefined);
      expect(inputValue(page.text, 'identifier')).to.equal('https://tools.example.test/mcp?x=1');
      expect(inputValue(page.text, 'name')).to.equal('Typed name');
      expect(page.text).to.match(/id="tokenFormat-jwt"[^>]* checked/);
      expect(page.text).to.match(/<input type="text" id="scope-name-0" name="scopeName" value="tools:read"/);
      expect(page.text).to.match(/<input type="text" id="scope-name-1" name="scopeName" value=""/);
      expect(page.text).to.match(/<input type="text" id="scope-name-2" name="scopeName" value="bad scope!"[^>]* aria-invalid=true/);
      expect(page.text).to.match(/<input type="text" id="scope-description-2" name="scopeDescription" value="Broken"/);
      expect(await count('resources', { group_id: group.id })).to.equal(0);
    });

    const refusals: Array<{ what: string; byLabel: Record<string, string>; field: string; error: string }> = [
      { what: 'an empty identifier', byLabel: { [L.identifier]: '' }, field: 'identifier', error: 'Identifier is required' },
      { what: 'an identifier that is not a URL', byLabel: { [L.identifier]: 'tools' }, field: 'identifier', error: 'Identifier must be an absolute URL, such as https://tools.example.com/mcp' },
      { what: 'a plain http:// identifier', byLabel: { [L.identifier]: 'http://tools.example.test/mcp' }, field: 'identifier', error: 'Identifier must be an https:// URL (http:// only on localhost, 127.0.0.1 or [::1])' },
      { what: 'an identifier with a fragment', byLabel: { [L.identifier]: 'https://tools.example.test/mcp#x' }, field: 'identifier', error: 'Identifier must not contain a fragment (#…)' },
      { what: 'an empty name', byLabel: { [L.name]: '   ' }, field: 'name', error: 'Name is required' },
      { what: 'no scope at all', byLabel: { [L.scope(1)]: '', [L.description(1)]: '' }, field: 'scopes', error: 'Scopes must name at least one scope' },
      { what: 'a scope without a description', byLabel: { [L.scope(2)]: 'tools:write' }, field: 'scope-1', error: 'Scope description is required' },
      { what: 'a description without a scope name', byLabel: { [L.description(2)]: 'Change things' }, field: 'scope-1', error: 'Scope name must be 1 to 64 letters, digits or _ . : / - (starting with a letter or digit)' },
      { what: 'one of the service\'s own scopes', byLabel: { [L.scope(1)]: 'openid' }, field: 'scope-0', error: 'Scope name must not be one of the service\'s own scopes (openid, profile, email, groups:…)' },
      { what: 'a scope named twice', byLabel: { [L.scope(3)]: 'tools:read', [L.description(3)]: 'Again' }, field: 'scopes', error: 'Scopes name tools:read twice: list each scope once' },
    ];
    for (const { what, byLabel, field, error } of refusals) {
      it(`refuses ${what} beside its field and registers nothing`, async () => {
        const { group, client } = await signedInOwner(idp);
        const audit = await count('audit_events', { group_id: group.id });
        const { sent } = await registerThroughForm(client, group, {
          [L.identifier]: identifier(), [L.name]: 'Tools API', [L.scope(1)]: 'tools:read', [L.description(1)]: 'Read your tools', ...byLabel,
        });
        const page = await sent.expect(400);
        expect(fieldError(page.text, field)).to.equal(error);
        expect(await count('resources', { group_id: group.id })).to.equal(0);
        expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
      });
    }

    it('refuses an identifier another resource of the site has, beside the field, keeping what was typed', async () => {
      const { group, client } = await signedInOwner(idp);
      const { identifier: taken } = await register(client, group);
      const other = await signedInOwner(idp);
      const { sent } = await registerThroughForm(other.client, other.group, { [L.identifier]: taken, [L.name]: 'Mine too', [L.scope(1)]: 'a', [L.description(1)]: 'b' });
      const page = await sent.expect(409);
      expect(fieldError(page.text, 'identifier')).to.equal('Identifier is already registered on this site: a resource indicator names one resource');
      expect(inputValue(page.text, 'name')).to.equal('Mine too');
      expect(await count('resources', { group_id: other.group.id })).to.equal(0);
    });

    it('refuses an address of this service as the identifier', async () => {
      const { group, client } = await signedInOwner(idp);
      const page = await (await registerThroughForm(client, group, { [L.identifier]: `${idp.url}/apis/v2`, [L.name]: 'Sneaky', [L.scope(1)]: 'a', [L.description(1)]: 'b' })).sent.expect(400);
      expect(fieldError(page.text, 'identifier')).to.equal('Identifier must not be an address of this service: its API is a resource of its own');
    });

    it('registers one resource when the same form is sent twice, and shows it on the second', async () => {
      const { group, client } = await signedInOwner(idp);
      const byLabel = { [L.identifier]: identifier(), [L.name]: 'Once', [L.scope(1)]: 'a', [L.description(1)]: 'b' };
      const { form, sent } = await registerThroughForm(client, group, byLabel);
      const first = await sent.expect(302, /\?notice=created$/);
      const again = await client.fill(form, '/resources/new', byLabel).expect(302, /\?notice=repeated$/);
      expect(again.headers.get('location')).to.equal(first.headers.get('location')!.replace('created', 'repeated'));
      const page = await client.follow(again).expect(200);
      expect(notice(page)).to.equal('Resource registered. Copy its introspection secret now: it is not shown again.');
      expect(await count('resources', { group_id: group.id })).to.equal(1);
    });
  });

  describe('a resource\'s page', () => {
    it('saves the name, identifier, token format and scopes; a bad edit is refused beside its field and changes nothing', async () => {
      const { group, client } = await signedInOwner(idp);
      const { page, href, id } = await register(client, group);
      expect(inputValue(page.text, 'name')).to.equal('Tools API');
      const before = await idp.db('resources').where({ id }).first();
      const refused = await client.fill(page, href, { [L.identifier]: 'ftp://tools.example.test/', [L.description(1)]: '' }).expect(400);
      expect(fieldError(refused.text, 'identifier')).to.equal('Identifier must be an https:// URL (http:// only on localhost, 127.0.0.1 or [::1])');
      expect(fieldError(refused.text, 'scope-0')).to.equal('Scope description is required');
      expect(inputValue(refused.text, 'identifier')).to.equal('ftp://tools.example.test/');
      expect(await idp.db('resources').where({ id }).first()).to.deep.equal(before);
      const moved = identifier('v2');
      const saved = await client.fill(refused, href, {
        [L.identifier]: moved, [L.name]: 'Tools API v2', [L.jwt]: 'checked', [L.description(1)]: 'Read tools', [L.scope(2)]: 'tools:write', [L.description(2)]: 'Write tools',
      }).expect(302, `${href}?notice=saved`);
      const shown = await client.follow(saved).expect(200);
      expect(notice(shown)).to.equal('Resource saved.');
      expect(testText(shown, 'resource-name')).to.equal('Tools API v2');
      expect(testText(shown, 'resource-identifier')).to.equal(moved);
      expect(testText(shown, 'resource-format')).to.equal('JWT (RFC 9068)');
      expect(testText(shown, 'jwks-url')).to.equal(`${idp.url}/login/oauth/jwks`);
      const row = (await idp.db('resources').where({ id }).first()) as { scopes: string; token_format: string };
      expect(row.token_format).to.equal('jwt');
      expect(JSON.parse(row.scopes)).to.deep.equal([{ name: 'tools:read', description: 'Read tools' }, { name: 'tools:write', description: 'Write tools' }]);
    });

    it('keeps more than twenty scopes in their order when the form is saved, and adds the one typed into a blank row', async () => {
      const { owner, group, client } = await signedInOwner(idp);
      const scopes = Array.from({ length: 24 }, (_, i) => ({ name: `s${i + 1}`, description: `Scope number ${i + 1}` }));
      const { resource } = await createResource({ db: idp.db, issuer: idp.url }, await groupAccess(idp.db, owner.id, group.id), { identifier: identifier(), name: 'Many', scopes });
      const href = `${resources(group)}/${resource.id}`;
      const page = await client.get(href).expect(200);
      expect((page.text.match(/name="scopeName"/g) ?? []).length).to.equal(27);
      await client.fill(page, href, { [L.scope(26)]: 'extra', [L.description(26)]: 'One more' }).expect(302, `${href}?notice=saved`);
      const row = (await idp.db('resources').where({ id: resource.id }).first()) as { scopes: string };
      expect(JSON.parse(row.scopes)).to.deep.equal([...scopes, { name: 'extra', description: 'One more' }]);
    });

    it('generates a new secret that replaces the old one and is shown once', async () => {
      const { group, client } = await signedInOwner(idp);
      const { page, href } = await register(client, group);
      const old = testText(page, 'introspection-secret')!;
      const clientId = testText(page, 'introspection-client-id')!;
      const action = formAction(page.text, '/secret');
      expect(page.text).to.match(/data-confirm="Replace the secret ending in/);
      const sent = await client.submit(action).expect(302, `${href}?notice=secret`);
      const shown = await client.follow(sent).expect(200);
      expect(notice(shown)).to.equal('A new introspection secret replaced the old one, which no longer works. Copy it now: it is not shown again.');
      const fresh = testText(shown, 'introspection-secret')!;
      expect(fresh).to.match(/^hs_/).and.not.equal(old);
      expect(testText(shown, 'secret-last-four')).to.equal(`hs_••••••••${fresh.slice(-4)}`);
      expect(await introspect(idp.url, clientId, fresh)).to.equal(200);
      expect(await introspect(idp.url, clientId, old)).to.equal(401);
      expect((await client.get(href).expect(200)).text).not.to.include(fresh);
      // The address the button posts to, opened on its own, is the resource.
      await client.get(action).expect(302, href);
    });

    it('deletes the resource after a page that asks first, and lists it no more', async () => {
      const { group, client } = await signedInOwner(idp);
      const { page, href, id, identifier: id0 } = await register(client, group);
      const clientId = testText(page, 'introspection-client-id')!;
      const secret = testText(page, 'introspection-secret')!;
      expect(formAction(page.text, `${href}/delete`)).to.equal(`${href}/delete`);
      const ask = await client.get(`${href}/delete`).expect(200);
      expect(unescapeHtml(ask.text)).to.include(id0).and.include('Tools API');
      expect(await count('resources', { id })).to.equal(1);
      const deleted = await client.fill(ask, `${href}/delete`).expect(302, `${resources(group)}?notice=deleted`);
      const list = await client.follow(deleted).expect(200);
      expect(notice(list)).to.equal('Resource deleted.');
      expect(list.text).to.include('data-testid="no-resources"');
      expect(await count('resources', { id })).to.equal(0);
      expect(await introspect(idp.url, clientId, secret)).to.equal(401);
      await client.get(href).expect(404);
    });

    it('answers an unknown resource, and one of another group under this group\'s address, with 404', async () => {
      const { owner, group, client } = await signedInOwner(idp);
      const other = await makeGroup(idp.db, owner.id);
      const { resource: theirs } = await createResource({ db: idp.db, issuer: idp.url }, await groupAccess(idp.db, owner.id, other.id), {
        identifier: identifier(), name: 'Theirs', scopes: [{ name: 'a', description: 'b' }],
      });
      for (const url of [`${resources(group)}/2147483647`, `${resources(group)}/abc`, `${resources(group)}/${theirs.id}`, `${resources(group)}/${theirs.id}/delete`]) {
        const res = await client.get(url).expect(404);
        expect(unescapeHtml(res.text), url).to.include('This group has no resource at this address.');
      }
      for (const url of [`${resources(group)}/${theirs.id}/delete`, `${resources(group)}/${theirs.id}/secret`, `${resources(group)}/${theirs.id}`]) {
        await client.submit(url, { name: 'Mine now' }).expect(404);
      }
      expect(await idp.db('resources').where({ id: theirs.id }).first()).to.include({ name: 'Theirs', secret_last_four: theirs.secretLastFour });
    });
  });

  describe('who may', () => {
    const join = (group: GroupRow, owner: TestUser, role: 'maintainer' | 'member') => joinGroup(idp.db, group, owner, role);

    for (const role of ['maintainer', 'member'] as const) {
      it(`shows a ${role} no Resources tab, and answers every Resources page and form with 403, changing nothing`, async () => {
        const { owner, group, client } = await signedInOwner(idp);
        const { href, id } = await register(client, group);
        const user = await signIn(idp.url, await join(group, owner, role));
        expect((await user.get(`/groups/${group.path}`).expect(200)).text).not.to.include(resources(group));
        if (role === 'maintainer') expect((await user.get(`/groups/${group.path}/settings/members`).expect(200)).text).not.to.include(resources(group));
        for (const url of [resources(group), `${resources(group)}/new`, href, `${href}/delete`]) {
          const res = await user.get(url);
          expect(res.status, url).to.equal(403);
          expect(res.text, url).not.to.include('Tools API');
        }
        const before = await idp.db('resources').where({ id }).first();
        // What the owner's own forms send, by their field names: the refusal must hold for the real forms.
        const ownForm = async (url: string) => {
          const page = await client.get(url).expect(200);
          const form = formsIn(page.text, new URL(url, idp.url)).find((f) => f.fields.some((field) => field.name === 'identifier'))!;
          const fields = new URLSearchParams();
          for (const field of form.fields) if (field.value !== undefined && !['_csrf', '_once'].includes(field.name)) fields.append(field.name, field.value);
          return Object.fromEntries(fields);
        };
        const posts: Array<[string, Record<string, string>]> = [
          [`${resources(group)}/new`, { ...(await ownForm(`${resources(group)}/new`)), identifier: identifier(), name: 'Theirs', scopeName: 'a', scopeDescription: 'b' }],
          [href, { ...(await ownForm(href)), name: 'Renamed' }],
          [`${href}/secret`, {}],
          [`${href}/delete`, {}],
        ];
        for (const [url, fields] of posts) expect((await user.submit(url, fields)).status, url).to.equal(403);
        expect(await idp.db('resources').where({ id }).first()).to.deep.equal(before);
        expect(await count('resources', { group_id: group.id })).to.equal(1);
      });
    }

    it('sends a signed-out visitor to the sign-in page', async () => {
      const { group, client } = await signedInOwner(idp);
      const { href } = await register(client, group);
      for (const url of [resources(group), `${resources(group)}/new`, href]) {
        await new Browser(idp.url).get(url).expect(302, `/login?return_to=${encodeURIComponent(url)}`);
      }
      const anonymous = await visit(idp.url);
      await anonymous.submit(`${href}/delete`).expect(302);
      expect(await count('resources', { group_id: group.id })).to.equal(1);
    });
  });
});
