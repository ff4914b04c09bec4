import { expect } from 'chai';
import { findSignInProvider, insertSignInProvider, updateSignInProvider } from '../../../src/db/sign-in-providers.js';
import { keyCipher } from '../../../src/key-encryption.js';
import { redirectKindOf } from '../../../src/services/federation/kinds.js';
import { openProvider, sealClientSecret } from '../../../src/services/federation/providers.js';
import { describeEachProfile, useDatabase } from '../../helpers/app.js';
import { approve, fakeGitHub, octocat } from './github-standin.js';
import { listen, signIn } from './harness.js';

/**
 * A preset provider as the service keeps it: the row in the database (dates and booleans as each
 * database gives them back), the client secret sealed with KEYS_SECRET, opened and signed in with
 * through the GitHub stand-in; an administrator's change reaches the next sign-in.
 */
describeEachProfile('A stored GitHub Enterprise Server provider', (profile) => {
  const database = useDatabase(profile);
  const cipher = keyCipher('a-keys-secret-of-at-least-32-characters!');
  const servers: Array<Awaited<ReturnType<typeof listen>>> = [];

  async function standIn() {
    const fake = fakeGitHub('/api/v3');
    const server = await listen(fake.handler);
    servers.push(server);
    fake.state.user = { ...octocat };
    fake.state.emails = [{ email: 'octocat@github.com', primary: true, verified: true, visibility: 'public' }];
    return { fake, server };
  }
  after(() => Promise.all(servers.map((s) => s.close())));

  it('signs in with the sealed secret, and follows a changed base URL at the next sign-in', async () => {
    const first = await standIn();
    const at = new Date().toISOString();
    const row = await insertSignInProvider(database.db, {
      slug: `ghes-${profile.replace(/\W/g, '')}`,
      kind: 'github',
      name: 'GitHub (Example Corp)',
      client_id: 'our-client-id',
      client_secret: sealClientSecret(cipher, 'our-client-secret'),
      scopes: 'read:user user:email',
      settings: JSON.stringify({ base_url: first.server.url }),
      allow_sign_up: true,
      allowed_domains: '',
      trust_mfa: false,
      position: 0,
    }, at);
    expect(row?.client_secret).to.match(/^enc:/);
    const kind = redirectKindOf('github')!;

    const stored = await findSignInProvider(database.db, row!.slug);
    const { profile: signedIn } = await signIn(kind, openProvider(stored!, cipher), approve);
    expect(signedIn).to.include({ subject: '583231', email: 'octocat@github.com', emailVerified: true });
    expect(first.fake.state.seen.token?.get('client_secret')).to.equal('our-client-secret');

    const second = await standIn();
    await updateSignInProvider(database.db, row!.id, { settings: JSON.stringify({ base_url: second.server.url }) }, new Date(Date.now() + 1000).toISOString());
    const changed = await findSignInProvider(database.db, row!.slug);
    const { url } = await signIn(kind, openProvider(changed!, cipher), approve);
    expect(url.origin).to.equal(second.server.url);
    expect(second.fake.state.seen.token?.get('code')).to.be.a('string');
  });
});
