import { createServer, type AddressInfo, type Socket } from 'node:net';
import { expect } from 'chai';
import { findIdentity } from '../../src/db/identities.js';
import { findUserByUsername } from '../../src/db/users.js';
import { createProvider, updateProvider } from '../../src/services/federation/manage.js';
import { openProvider } from '../../src/services/federation/providers.js';
import { DirectorySignIn } from '../../src/services/directory/sign-in.js';
import { disableUser } from '../../src/services/admin.js';
import { hasPassword } from '../../src/services/passwords.js';
import { noMetrics } from '../../src/metrics.js';
import { createLogger } from '../../src/log.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, type Page } from '../helpers/browser.js';
import { groupAccess, makeClient, makeGroup, makeUser } from '../helpers/factories.js';
import { changeRole } from '../../src/services/groups.js';
import { oauthTokens } from '../helpers/oauth.js';
import { call } from '../helpers/api.js';
import { withTwoFactor } from '../helpers/totp.js';
import { directorySettings, ldapGroups, ldapPeople, startSlapd, type Slapd } from '../helpers/slapd.js';

/**
 * Signing in with a directory's username and password, against a real OpenLDAP (Debian's slapd)
 * started here with a test CA: over LDAPS and StartTLS, through the sign-in form's own fields
 * (found by their labels), on both storage profiles. The directory is changed under the service
 * as its administrators would (ldapmodify), and stopped and started again.
 */
const ADMIN = { userId: 0, ip: null, admin: true } as const;
const LOGIN = 'Username or email';
const PASSWORD = 'Password';

describeEachProfile('Sign-in with a directory (LDAP)', (profile) => {
  const idp = useIdp(profile, { RATE_LIMIT_SIGNIN_ACCOUNT_IP: '8/15m', METRICS_PORT: '0' });
  let slapd: Slapd;
  let platform: { id: number; path: string };
  let owner: { id: number };
  let providerSlug: string;
  // Each browser comes from an address of its own: the sign-in limits count failures per address.
  let addresses = 1;
  const browser = () => {
    addresses += 1;
    return new Browser(idp.url, { from: `127.0.${Math.floor(addresses / 250)}.${(addresses % 250) + 2}` });
  };

  before(async function () {
    this.timeout(30_000);
    slapd = await startSlapd();
    owner = await makeUser(idp.db);
    platform = await makeGroup(idp.db, owner.id, { path: `platform-${profile.replace(/\W/g, '')}` });
    const row = await createProvider({ db: idp.db, cipher: undefined }, ADMIN, {
      kind: 'ldap',
      slug: 'corp',
      name: 'Corp Directory',
      client_id: slapd.serviceDn,
      client_secret: slapd.servicePassword,
      settings: directorySettings(slapd, `${ldapGroups.developers.dn} = ${platform.path} member\n${ldapGroups.admins.dn} = ${platform.path} maintainer`),
      allow_sign_up: true,
    });
    providerSlug = row.slug;
  });

  after(async () => {
    await slapd?.close();
  });

  async function signInPage(b: Browser, login: string, password: string): Promise<Page> {
    const page = await b.get('/login').expect(200);
    return b.fill(page, '/login', { [LOGIN]: login, [PASSWORD]: password });
  }

  async function signedIn(login: string, password: string): Promise<Browser> {
    const b = browser();
    const page = await signInPage(b, login, password);
    expect(page.status, page.text.slice(0, 400)).to.equal(302);
    expect(page.headers.get('location')).to.equal('/groups');
    return b;
  }

  async function roleIn(username: string): Promise<string | undefined> {
    const user = await findUserByUsername(idp.db, username);
    const row = user && (await idp.db('memberships').where({ group_id: platform.id, user_id: user.id }).first('role'));
    return row?.role;
  }

  function directoryService(): DirectorySignIn {
    return new DirectorySignIn({ db: idp.db, cipher: undefined, provider: idp.idp.provider, metrics: noMetrics, log: createLogger('silent') });
  }

  async function provider() {
    const row = await idp.db('sign_in_providers').where({ slug: providerSlug }).first();
    return openProvider(row, undefined);
  }

  it('says on the sign-in form that the directory\'s usernames and passwords work there, and offers no button for it', async () => {
    const page = await browser().get('/login').expect(200);
    expect(page.text).to.include('Your Corp Directory username and password work here too.');
    expect(page.text).to.not.include('/login/upstream/corp');
  });

  it('makes the account at a first sign-in: the directory username, name and verified address, no password of its own, and the mapped group role', async () => {
    const b = browser();
    const page = await signInPage(b, 'alice', ldapPeople.alice.password);
    expect(page.status, page.text.slice(0, 400)).to.equal(302);
    expect(page.headers.get('location')).to.equal('/groups');
    const groups = await b.get('/groups').expect(200);
    expect(groups.text).to.include(platform.path);

    const alice = await findUserByUsername(idp.db, 'alice');
    expect(alice).to.include({ email: 'alice@example.org', name: 'Alice Liddell' });
    expect(alice!.email_verified_at).to.not.equal(null);
    expect(hasPassword(alice!.password_hash)).to.equal(false);
    // In developers (member) and admins (maintainer): the higher role.
    expect(await roleIn('alice')).to.equal('maintainer');
    const audit = await idp.db('audit_events').where({ group_id: platform.id, action: 'member.add', target: 'alice' }).first();
    expect(JSON.parse(audit.details)).to.include({ via: 'directory', provider: providerSlug, role: 'maintainer' });
  });

  it('signs the same account in again, and follows the directory groups at each sign-in', async () => {
    const before = await idp.db('users').count({ n: '*' }).first();
    await slapd.modify(`dn: ${ldapGroups.admins.dn}\nchangetype: modify\nreplace: member\nmember: ${ldapPeople.bob.dn}\n`);
    await signedIn('alice', ldapPeople.alice.password);
    expect(await roleIn('alice')).to.equal('member');
    await slapd.modify(`dn: ${ldapGroups.developers.dn}\nchangetype: modify\ndelete: member\nmember: ${ldapPeople.alice.dn}\n`);
    await signedIn('alice', ldapPeople.alice.password);
    expect(await roleIn('alice')).to.equal(undefined);
    const after = await idp.db('users').count({ n: '*' }).first();
    expect(Number(after!.n)).to.equal(Number(before!.n));
    // Given back, for the tests that follow.
    await slapd.modify(`dn: ${ldapGroups.developers.dn}\nchangetype: modify\nadd: member\nmember: ${ldapPeople.alice.dn}\n`);
    await slapd.modify(`dn: ${ldapGroups.admins.dn}\nchangetype: modify\nreplace: member\nmember: ${ldapPeople.alice.dn}\n`);
  });

  it('signs a directory person in within an application\'s authorization flow, whose token is theirs', async () => {
    const client = await makeClient(idp.db);
    const { accessToken } = await oauthTokens(idp.url, client, { username: 'alice', password: ldapPeople.alice.password }, 'openid groups:read-only');
    const me = await call(idp, '/apis/v2/user', { token: accessToken });
    expect(me.status, me.text).to.equal(200);
    expect((me.body as { data: Record<string, unknown> }).data).to.include({ username: 'alice' });
  });

  it('never touches a membership a person gave', async () => {
    const bob = await signedIn('bob', ldapPeople.bob.password).then(() => findUserByUsername(idp.db, 'bob'));
    expect(await roleIn('bob')).to.equal('member');
    // An owner makes bob an owner on the group's page: the membership is no longer the directory's to change.
    await changeRole(idp.db, await groupAccess(idp.db, owner.id, platform.id), bob!.id, 'owner');
    await slapd.modify(`dn: ${ldapGroups.developers.dn}\nchangetype: modify\ndelete: member\nmember: ${ldapPeople.bob.dn}\n`);
    await signedIn('bob', ldapPeople.bob.password);
    expect(await roleIn('bob')).to.equal('owner');
    await slapd.modify(`dn: ${ldapGroups.developers.dn}\nchangetype: modify\nadd: member\nmember: ${ldapPeople.bob.dn}\n`);
  });

  it('refuses a wrong password with the sign-in form\'s words, and counts it against the sign-in limits', async () => {
    const b = browser();
    for (let i = 0; i < 8; i += 1) {
      const page = await signInPage(b, 'alice', 'not-her-password');
      expect(page.status).to.equal(401);
      expect(page.text).to.include('Incorrect username, email or password.');
    }
    // Past the limit, even the right password waits.
    const blocked = await signInPage(b, 'alice', ldapPeople.alice.password);
    expect(blocked.status).to.equal(429);
    expect(blocked.headers.get('retry-after')).to.match(/^\d+$/);
  });

  it('never sends an empty password to the directory (LDAP would take it as an anonymous bind)', async () => {
    const b = browser();
    const page = await b.get('/login').expect(200);
    const answer = await b.fill(page, '/login', { [LOGIN]: 'alice', [PASSWORD]: '' });
    expect(answer.status).to.equal(401);
  });

  for (const typed of ['*', 'alice)(uid=*', '*)(|(uid=*', 'al*', '\\00', 'alice\\00']) {
    it(`finds nobody for ${JSON.stringify(typed)}: the username is escaped in the filter`, async () => {
      const users = await idp.db('users').count({ n: '*' }).first();
      const page = await signInPage(browser(), typed, ldapPeople.alice.password);
      expect(page.status).to.equal(401);
      expect(page.text).to.include('Incorrect username, email or password.');
      expect(Number((await idp.db('users').count({ n: '*' }).first())!.n)).to.equal(Number(users!.n));
    });
  }

  it('signs in a username with a filter character in it, matched as written (star*man)', async () => {
    await signedIn(ldapPeople.starman.uid, ldapPeople.starman.password);
    const identity = await idp.db('user_identities as i').join('users as u', 'u.id', 'i.user_id').where('i.username', 'star*man').first('u.email');
    expect(identity?.email).to.equal('star@example.org');
  });

  it('refuses a locked entry (pwdAccountLockedTime), even with its right password', async () => {
    const page = await signInPage(browser(), 'carol', ldapPeople.carol.password);
    expect(page.status).to.equal(401);
    expect(await findUserByUsername(idp.db, 'carol')).to.equal(undefined);
  });

  it('refuses a person without an address, which an account needs, saying so', async () => {
    const page = await signInPage(browser(), 'dave', ldapPeople.dave.password);
    expect(page.status).to.equal(403);
    expect(page.text).to.include('has no e-mail address for you');
  });

  it('asks the account\'s own second factor after the directory password', async () => {
    const alice = await findUserByUsername(idp.db, 'alice');
    const { codes } = await withTwoFactor(idp.db, { ...alice!, password: '' } as never);
    try {
      const b = browser();
      const page = await signInPage(b, 'alice', ldapPeople.alice.password);
      expect(page.status).to.equal(302);
      expect(page.headers.get('location')).to.match(/^\/login\/two-factor/);
      // Not signed in yet: only the second factor (here a recovery code) finishes it.
      await b.get('/account/settings').expect(302);
      const challenge = await b.get(page.headers.get('location')!).expect(200);
      const done = await b.fill(challenge, 'two-factor', { 'Authentication code': codes[0]! });
      expect(done.status, done.text.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").slice(-1500)).to.equal(302);
      await b.get('/account/settings/profile').expect(200);
    } finally {
      await idp.db('user_totp').where({ user_id: alice!.id }).delete();
      await idp.db('recovery_codes').where({ user_id: alice!.id }).delete();
    }
  });

  it('links a first sign-in to an account here with the same verified address', async () => {
    await slapd.modify(`dn: uid=erin,ou=people,${slapd.baseDn}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: erin\ncn: Erin Local\nsn: Local\nmail: erin@example.org\nuserPassword: erin-pass-1\n`);
    const local = await makeUser(idp.db, { username: 'erin-here', email: 'erin@example.org' });
    await signedIn('erin', 'erin-pass-1');
    const provider = await idp.db('sign_in_providers').where({ slug: providerSlug }).first();
    const linked = await idp.db('user_identities').where({ provider_id: provider.id, user_id: local.id }).first();
    expect(linked?.username).to.equal('erin');
    // Its own password still signs in too.
    await signedIn('erin-here', local.password);
  });

  it('makes one account for sixteen first sign-ins of one person at once', async () => {
    await slapd.modify(`dn: uid=frank,ou=people,${slapd.baseDn}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: frank\ncn: Frank Parallel\nsn: Parallel\nmail: frank@example.org\nuserPassword: frank-pass-1\n`);
    const pages = await Promise.all(Array.from({ length: 16 }, () => signInPage(browser(), 'frank', 'frank-pass-1')));
    expect(pages.map((p) => p.status)).to.deep.equal(Array(16).fill(302));
    const made = await idp.db('users').where('email_key', 'frank@example.org').select('id');
    expect(made).to.have.length(1);
  });

  it('signs in over StartTLS (ldap://) with the same CA', async () => {
    const row = await idp.db('sign_in_providers').where({ slug: providerSlug }).first();
    await updateProvider({ db: idp.db, cipher: undefined }, ADMIN, row, { settings: { url: slapd.ldapUrl } });
    try {
      await signedIn('alice', ldapPeople.alice.password);
    } finally {
      const changed = await idp.db('sign_in_providers').where({ slug: providerSlug }).first();
      await updateProvider({ db: idp.db, cipher: undefined }, ADMIN, changed, { settings: { url: slapd.ldapsUrl } });
    }
  });

  it('says so on the sign-in page when the directory is down, with no 5xx, and signs in again once it is back', async function () {
    this.timeout(30_000);
    const metric = async (pattern: string) => Number(new RegExp(`${pattern} (\\d+)`).exec(await (await fetch(idp.metricsUrl!)).text())?.[1] ?? 0);
    const unavailable = 'idp_sign_ins_total\\{outcome="directory_unavailable"\\}';
    const unreachable = 'idp_upstream_sign_ins_total\\{provider="corp",result="unreachable"\\}';
    const [before, beforeUnreachable] = [await metric(unavailable), await metric(unreachable)];
    await slapd.stop();
    try {
      const page = await signInPage(browser(), 'alice', ldapPeople.alice.password);
      expect(page.status).to.equal(424);
      expect(await metric(unavailable)).to.equal(before + 1);
      expect(await metric(unreachable)).to.equal(beforeUnreachable + 1);
      expect(page.text).to.include('Corp Directory could not be reached');
      expect(page.headers.get('retry-after')).to.match(/^\d+$/);
      // A person of this service's own still signs in meanwhile.
      const local = await makeUser(idp.db);
      await signedIn(local.username, local.password);
    } finally {
      await slapd.start();
    }
    await signedIn('alice', ldapPeople.alice.password);
  });

  it('gives up on a directory that takes the connection and never answers, within its timeout, with the same clear page', async function () {
    this.timeout(30_000);
    const held: Socket[] = [];
    const silent = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const row = await idp.db('sign_in_providers').where({ slug: providerSlug }).first();
    const { row: hanging } = await updateProvider({ db: idp.db, cipher: undefined }, ADMIN, row, { settings: { url: `ldaps://127.0.0.1:${(silent.address() as AddressInfo).port}` } });
    try {
      const page = await signInPage(browser(), 'alice', ldapPeople.alice.password);
      expect(page.status).to.equal(424);
      expect(page.text).to.include('Corp Directory could not be reached');
    } finally {
      await updateProvider({ db: idp.db, cipher: undefined }, ADMIN, hanging, { settings: { url: slapd.ldapsUrl } });
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });

  it('ends the sessions of a person the directory disables, at their next sign-in and at the check, and lets them back once enabled', async () => {
    const session = await signedIn('bob', ldapPeople.bob.password);
    await session.get('/groups').expect(200);
    await slapd.modify(`dn: ${ldapPeople.bob.dn}\nchangetype: modify\nadd: pwdAccountLockedTime\npwdAccountLockedTime: 000001010000Z\n`);
    const refused = await signInPage(browser(), 'bob', ldapPeople.bob.password);
    expect(refused.status).to.equal(401);
    await session.get('/groups').expect(302, '/login?return_to=%2Fgroups');
    const bob = await findUserByUsername(idp.db, 'bob');
    expect(bob!.disabled_at).to.not.equal(null);
    const audit = await idp.db('audit_events').where({ action: 'user.disable', target: 'bob' }).orderBy('id', 'desc').first();
    expect(JSON.parse(audit.details)).to.include({ via: 'directory', provider: providerSlug, reason: 'disabled' });

    await slapd.modify(`dn: ${ldapPeople.bob.dn}\nchangetype: modify\ndelete: pwdAccountLockedTime\n`);
    await signedIn('bob', ldapPeople.bob.password);
    expect((await findUserByUsername(idp.db, 'bob'))!.disabled_at).to.equal(null);
  });

  it('disables, at the check, the account of a person deleted from the directory, and leaves an administrator\'s disabled account alone', async () => {
    const session = await signedIn('frank', 'frank-pass-1');
    await slapd.modify(`dn: uid=frank,ou=people,${slapd.baseDn}\nchangetype: delete\n`);
    const directories = directoryService();
    try {
      const result = await directories.checkAccounts(await provider());
      expect(result).to.include({ disabled: 1 });
      expect(result.skipped).to.equal(undefined);
    } finally {
      await directories.close();
    }
    await session.get('/groups').expect(302, '/login?return_to=%2Fgroups');
    const frank = await idp.db('users').where('email_key', 'frank@example.org').first();
    expect(frank.disabled_at).to.not.equal(null);
    const identity = await findIdentity(idp.db, (await provider()).id, (await idp.db('user_identities').where({ user_id: frank.id }).first()).subject);
    expect(identity?.user_id).to.equal(frank.id);

    // An account an administrator disabled stays disabled, however active the directory says its person is.
    const erin = await findUserByUsername(idp.db, 'erin-here');
    await disableUser({ db: idp.db, provider: idp.idp.provider }, ADMIN, erin!);
    const checker = directoryService();
    try {
      expect(await checker.checkAccounts(await provider())).to.include({ enabled: 0 });
    } finally {
      await checker.close();
    }
    const refused = await signInPage(browser(), 'erin', 'erin-pass-1');
    expect(refused.status).to.equal(403);
    expect(refused.text).to.include('This account is disabled.');
    expect((await findUserByUsername(idp.db, 'erin-here'))!.disabled_at).to.not.equal(null);
  });

  it('checks a directory once an interval, whichever of 16 instances asks at the same moment, and again once the interval has passed', async () => {
    const due = (checkedAt: string | null) => idp.db('sign_in_providers').where({ slug: providerSlug }).update({ checked_at: checkedAt });
    const checked = (results: Array<{ provider: string }>) => results.map((r) => r.provider);
    await due(null);
    const instances = Array.from({ length: 16 }, () => directoryService());
    try {
      expect(checked((await Promise.all(instances.map((instance) => instance.checkDue(900)))).flat())).to.deep.equal([providerSlug]);
      expect(checked(await instances[0]!.checkDue(900))).to.deep.equal([]);
      await due(new Date(Date.now() - 899_000).toISOString());
      expect(checked(await instances[1]!.checkDue(900))).to.deep.equal([]);
      await due(new Date(Date.now() - 901_000).toISOString());
      expect(checked(await instances[2]!.checkDue(900))).to.deep.equal([providerSlug]);
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
    }
  });

  it('changes nothing at the check while the directory is down, nor when it finds none of its people (a wrong search base)', async () => {
    const directories = directoryService();
    try {
      await slapd.stop();
      const down = await directories.checkAccounts(await provider());
      expect(down).to.include({ skipped: 'unavailable', disabled: 0 });
      await slapd.start();
      const row = await idp.db('sign_in_providers').where({ slug: providerSlug }).first();
      const { row: wrong } = await updateProvider({ db: idp.db, cipher: undefined }, ADMIN, row, { settings: { user_base: `ou=groups,${slapd.baseDn}` } });
      try {
        const none = await directories.checkAccounts(openProvider(wrong, undefined));
        expect(none).to.include({ skipped: 'nobody-found', disabled: 0 });
      } finally {
        await updateProvider({ db: idp.db, cipher: undefined }, ADMIN, wrong, { settings: { user_base: `ou=people,${slapd.baseDn}` } });
      }
    } finally {
      await slapd.start();
      await directories.close();
    }
    expect((await findUserByUsername(idp.db, 'alice'))!.disabled_at).to.equal(null);
  });
});
