import { expect } from 'chai';
import { findSignInProvider } from '../../src/db/sign-in-providers.js';
import { ConflictError, ValidationError } from '../../src/errors.js';
import { insertIdentity } from '../../src/db/identities.js';
import { createProvider, normalizeDomain, removalImpact, setProviderDisabled, updateProvider } from '../../src/services/federation/manage.js';
import { noPasswordHash } from '../../src/services/passwords.js';
import { makeUser } from '../helpers/factories.js';
import { describeEachProfile, useDatabase } from '../helpers/app.js';
import { TEST_KIND, useTestKind } from './admin-test-kind.js';

const CLI = { userId: 0, ip: null, admin: true };

describe('allowed e-mail domains', () => {
  it('keeps a domain lowercase, international names as punycode, without a leading @ or trailing dot', () => {
    expect(normalizeDomain('Example.COM')).to.equal('example.com');
    expect(normalizeDomain('@corp.example.')).to.equal('corp.example');
    expect(normalizeDomain('BÜCHER.example')).to.equal('xn--bcher-kva.example');
    expect(normalizeDomain('sub.mail.example.co.uk')).to.equal('sub.mail.example.co.uk');
  });

  it('refuses what is not an e-mail domain', () => {
    for (const bad of ['localhost', '1.2.3.4', 'a..example', '-a.example', 'a-.example', 'user@example.com', 'http://example.com', 'exa mple.com', 'a\u0000.example', `${'a'.repeat(64)}.example`, '[::1]', '']) {
      expect(normalizeDomain(bad), JSON.stringify(bad)).to.equal(undefined);
    }
  });
});

describeEachProfile('managing sign-in providers', (profile) => {
  useTestKind();
  const database = useDatabase(profile);
  const deps = () => ({ db: database.db, cipher: undefined });
  const input = (slug: string) => ({ kind: TEST_KIND.kind, slug, name: `P ${slug}`, client_id: 'c', client_secret: 's', settings: { issuer: 'https://p.example' } });

  it('keeps the kind: changing it is refused by name', async () => {
    const row = await createProvider(deps(), CLI, input('keep-kind'));
    const err = await updateProvider(deps(), CLI, row, { kind: 'other' }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ValidationError);
    expect((err as ValidationError).problems.map((p) => p.field)).to.deep.equal(['kind']);
  });

  it('refuses renaming to a slug another provider has, and changes nothing', async () => {
    await createProvider(deps(), CLI, input('first-one'));
    const second = await createProvider(deps(), CLI, input('second-one'));
    const err = await updateProvider(deps(), CLI, second, { slug: 'first-one', name: 'Changed' }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ConflictError);
    expect((err as ConflictError).field).to.equal('slug');
    expect((await findSignInProvider(database.db, 'second-one'))!.name).to.equal('P second-one');
  });

  it('reports every bad field at once, the kind\'s settings by their own checks', async () => {
    const err = await createProvider(deps(), CLI, { kind: TEST_KIND.kind, slug: 'x', name: '', client_id: 'tab\there', client_secret: '', scopes: 'a\\b', settings: { issuer: 'ftp://x' }, position: '99999' }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ValidationError);
    expect((err as ValidationError).problems.map((p) => p.field).sort()).to.deep.equal(['client_id', 'client_secret', 'issuer', 'name', 'position', 'scopes', 'slug']);
    expect(await database.db('sign_in_providers').where({ slug: 'x' })).to.have.length(0);
  });

  it('disabling twice changes once, and records once', async () => {
    const row = await createProvider(deps(), CLI, input('twice'));
    expect(await setProviderDisabled(database.db, CLI, row, true)).to.equal(true);
    expect(await setProviderDisabled(database.db, CLI, row, true)).to.equal(false);
    expect(await database.db('audit_events').where({ target: 'twice', action: 'sign-in_provider.disable' })).to.have.length(1);
  });

  it('counts an account with a passkey as having a way in when its provider is removed', async () => {
    const row = await createProvider(deps(), CLI, input('passkey-way'));
    const at = new Date().toISOString();
    const [withPasskey, without] = [await makeUser(database.db), await makeUser(database.db)];
    for (const [i, user] of [withPasskey, without].entries()) {
      await database.db('users').where({ id: user.id }).update({ password_hash: noPasswordHash() });
      await insertIdentity(database.db, { userId: user.id, providerId: row.id, subject: `pk-${i}`, username: `pk${i}`, email: '', at });
    }
    await database.db('webauthn_credentials').insert({ user_id: withPasskey.id, credential_id: 'cred-1', public_key: 'pk', name: 'Laptop', created_at: at });
    expect(await removalImpact(database.db, row)).to.deep.equal({ identities: 2, onlyThroughIt: 1 });
  });
});
