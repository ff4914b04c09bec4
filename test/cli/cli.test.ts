import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { findAccessTokenByDigest } from '../../src/db/access-tokens.js';
import { createDb } from '../../src/db/knex.js';
import { migrationSource } from '../../src/db/migrations/index.js';
import { findUserByUsername } from '../../src/db/users.js';
import { verifyPassword } from '../../src/services/passwords.js';
import { describeEachProfile, useDatabase } from '../helpers/app.js';
import { idp, json, refusal } from '../helpers/cli.js';
import { makeGroup, makeUser } from '../helpers/factories.js';

const SECRET_SHAPE = /^hs_[0-9A-Za-z]{36}$/;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const unique = () => randomBytes(4).toString('hex');

function tmpSqliteUrl(): { url: string; remove(): void } {
  const file = join(tmpdir(), `idp-cli-${process.pid}-${unique()}.sqlite3`);
  return {
    url: `sqlite:${file}`,
    remove: () => {
      for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    },
  };
}

describeEachProfile('idp CLI', (profile) => {
  const t = useDatabase(profile);

  it('migrate reports nothing to apply on an up-to-date database', async () => {
    expect(json(await idp(t.url, ['migrate', '--json']))).to.deep.equal({ applied: [] });
  });

  it('user create prints the new user and takes the password from stdin', async () => {
    const username = `cli-${unique()}`;
    const password = 'pass word from stdin';
    const user = json(
      await idp(t.url, ['user', 'create', '--username', username, '--email', `${username}@example.test`, '--name', 'Cli User', '--password-stdin', '--json'], `${password}\r\n`),
    );
    expect(user).to.have.all.keys('id', 'username', 'email', 'name', 'createdAt', 'emailVerified');
    expect(user).to.include({ username, email: `${username}@example.test`, name: 'Cli User', emailVerified: true });
    expect(user.id).to.be.a('number');
    expect(user.createdAt).to.match(ISO_TIME);
    const row = (await findUserByUsername(t.db, username))!;
    expect(row.id).to.equal(user.id);
    expect(await verifyPassword(password, row.password_hash)).to.equal(true);
    expect(await verifyPassword(`${password}\r`, row.password_hash)).to.equal(false);
  });

  it('user create refuses a username taken in another case, naming username', async () => {
    const taken = await makeUser(t.db);
    const line = refusal(
      await idp(t.url, ['user', 'create', '--username', taken.username.toUpperCase(), '--email', `${unique()}@example.test`, '--password-stdin'], 'long enough\n'),
    );
    expect(line).to.equal(`idp: username "${taken.username.toUpperCase()}" is already taken`);
  });

  it('group create makes the group with its owner', async () => {
    const owner = await makeUser(t.db);
    const path = `team-${unique()}`;
    const group = json(
      await idp(t.url, ['group', 'create', '--name', 'Team', '--path', path, '--owner', owner.username, '--visibility', 'internal', '--description', 'The team', '--json']),
    );
    expect(group).to.have.all.keys('id', 'name', 'path', 'description', 'visibilityLevel', 'requireTwoFactor', 'personalTokenMaxLifetimeDays', 'createdAt', 'updatedAt');
    expect(group).to.include({ name: 'Team', path, description: 'The team', visibilityLevel: 'internal' });
    expect(group.createdAt).to.match(ISO_TIME);
    const membership = await t.db('memberships').where({ group_id: group.id, user_id: owner.id }).first('role');
    expect(membership).to.deep.equal({ role: 'owner' });
  });

  it('group add-member gives a user a role', async () => {
    const owner = await makeUser(t.db);
    const newcomer = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const member = json(
      await idp(t.url, ['group', 'add-member', '--group', group.path, '--user', newcomer.username, '--role', 'maintainer', '--json']),
    );
    expect(member).to.deep.equal({ groupId: group.id, userId: newcomer.id, username: newcomer.username, role: 'maintainer' });
    const membership = await t.db('memberships').where({ group_id: group.id, user_id: newcomer.id }).first('role');
    expect(membership).to.deep.equal({ role: 'maintainer' });
  });

  it('app create --public makes a public application: no secret, PKCE required', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const app = json(
      await idp(t.url, [
        'app', 'create', '--group', group.path, '--name', 'Phone App', '--public',
        '--homepage-url', 'https://app.example.test', '--callback-url', 'http://127.0.0.1:8080/cb', '--json',
      ]),
    );
    expect(app).to.not.have.property('clientSecret');
    expect(app.type).to.equal('public');
    const row = await t.db('oauth_apps').where({ client_id: String(app.clientID) }).first();
    expect(await t.db('oauth_app_secrets').where({ app_id: row.id })).to.have.length(0);
    const text = await idp(t.url, ['app', 'create', '--group', group.path, '--name', 'Another', '--public', '--homepage-url', 'https://app.example.test', '--callback-url', 'http://127.0.0.1:8080/cb']);
    expect(text.stdout).to.include('A public application has no client secret').and.not.include('clientSecret:');
  });

  it('app create prints the client secret once and stores only its digest', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const app = json(
      await idp(t.url, [
        'app', 'create', '--group', group.path, '--name', 'CLI App',
        '--homepage-url', 'https://app.example.test', '--callback-url', 'http://127.0.0.1:8080/cb', '--json',
      ]),
    );
    expect(app).to.have.all.keys('clientID', 'clientSecret', 'name', 'homepageURL', 'description', 'callbackURL', 'signOutRedirectURLs', 'type', 'deviceFlow', 'requirePushedAuthorizationRequests', 'clientCredentials', 'backchannelLogoutURL', 'groupId', 'registeredAutomatically', 'createdAt', 'updatedAt');
    expect(app.type).to.equal('confidential');
    expect(app).to.include({ deviceFlow: false, requirePushedAuthorizationRequests: false });
    expect(app).to.include({ name: 'CLI App', homepageURL: 'https://app.example.test', callbackURL: 'http://127.0.0.1:8080/cb', description: '', groupId: group.id });
    expect(app.signOutRedirectURLs).to.deep.equal([]);
    const secret = String(app.clientSecret);
    expect(secret).to.match(SECRET_SHAPE);

    const stored = await t.db('oauth_app_secrets as s')
      .join('oauth_apps as a', 'a.id', 's.app_id')
      .where('a.client_id', String(app.clientID))
      .select('s.*');
    expect(stored).to.have.length(1);
    expect(stored[0].digest).to.equal(createHash('sha256').update(secret).digest('base64url'));
    const everything = JSON.stringify([
      await t.db('oauth_app_secrets').select(),
      await t.db('oauth_apps').select(),
      await t.db('audit_events').select(),
    ]);
    expect(everything).to.not.include(secret);
    expect(everything).to.not.include(secret.slice(3, 33));
    if (t.kind === 'sqlite') {
      const file = t.url.slice('sqlite:'.length);
      for (const f of [file, `${file}-wal`]) {
        if (existsSync(f)) expect(readFileSync(f).includes(secret.slice(3, 33)), f).to.equal(false);
      }
    }
  });

  it('app create takes --sign-out-url once for each sign-out redirect URL', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const app = json(
      await idp(t.url, [
        'app', 'create', '--group', group.path, '--name', 'Signs out', '--homepage-url', 'https://so.example.test',
        '--callback-url', 'https://so.example.test/cb', '--sign-out-url', 'https://so.example.test/bye', '--sign-out-url', 'http://localhost:8080/bye', '--json',
      ]),
    );
    expect(app.signOutRedirectURLs).to.deep.equal(['https://so.example.test/bye', 'http://localhost:8080/bye']);
    const row = await t.db('oauth_apps').where({ client_id: String(app.clientID) }).first('sign_out_urls');
    expect(JSON.parse(row.sign_out_urls)).to.deep.equal(['https://so.example.test/bye', 'http://localhost:8080/bye']);
  });

  it('app create refuses a bad --sign-out-url, naming the flag', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const line = refusal(await idp(t.url, [
      'app', 'create', '--group', group.path, '--name', 'Bad', '--homepage-url', 'https://b.example.test',
      '--callback-url', 'https://b.example.test/cb', '--sign-out-url', 'http://b.example.test/bye',
    ]));
    expect(line).to.equal('idp: --sign-out-url: signOutRedirectURLs[0] must use https (http only for localhost, 127.0.0.1 or [::1])');
  });

  it('app create --device-flow --require-par turns both switches on; without them both are off', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const base = ['app', 'create', '--group', group.path, '--homepage-url', 'https://tv.example.test', '--callback-url', 'https://tv.example.test/cb'];
    const both = json(await idp(t.url, [...base, '--name', 'TV', '--device-flow', '--require-par', '--json']));
    expect(both).to.include({ deviceFlow: true, requirePushedAuthorizationRequests: true });
    const row = await t.db('oauth_apps').where({ client_id: String(both.clientID) }).first();
    expect(Boolean(row.device_flow)).to.equal(true);
    expect(Boolean(row.require_pushed_authorization_requests)).to.equal(true);
    const plain = json(await idp(t.url, [...base, '--name', 'Plain', '--json']));
    expect(plain).to.include({ deviceFlow: false, requirePushedAuthorizationRequests: false });
    const text = await idp(t.url, [...base, '--name', 'Device only', '--device-flow']);
    expect(text.stdout).to.match(/device flow:\s+enabled/).and.to.match(/pushed authorization requests:\s+not required/);
  });

  it('app update <client-id> turns each switch on or off, leaving the other as it is, and records the change', async function () {
    // Five runs of the CLI, each a process of its own.
    this.timeout(60_000);
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const created = json(await idp(t.url, [
      'app', 'create', '--group', group.path, '--name', 'Switches', '--homepage-url', 'https://s.example.test', '--callback-url', 'https://s.example.test/cb', '--json',
    ]));
    const clientId = String(created.clientID);
    const on = json(await idp(t.url, ['app', 'update', clientId, '--device-flow', '--json']));
    expect(on).to.include({ clientID: clientId, deviceFlow: true, requirePushedAuthorizationRequests: false });
    expect(on).to.not.have.property('clientSecret');
    const par = json(await idp(t.url, ['app', 'update', clientId, '--require-par', '--json']));
    expect(par).to.include({ deviceFlow: true, requirePushedAuthorizationRequests: true });
    const off = await idp(t.url, ['app', 'update', clientId, '--no-device-flow']);
    expect(off.code, off.stderr).to.equal(0);
    expect(off.stdout).to.include(`updated application "Switches" (${clientId})`).and.to.match(/device flow:\s+disabled/).and.to.match(/pushed authorization requests:\s+required/);
    const row = await t.db('oauth_apps').where({ client_id: clientId }).first();
    expect(Boolean(row.device_flow)).to.equal(false);
    expect(Boolean(row.require_pushed_authorization_requests)).to.equal(true);
    const same = await idp(t.url, ['app', 'update', clientId, '--no-device-flow']);
    expect(same.code, same.stderr).to.equal(0);
    expect(same.stdout).to.include(`nothing changed on application "Switches" (${clientId})`);
    const audit = await t.db('audit_events').where({ action: 'app.update', target: clientId }).select('details');
    expect(audit).to.have.length(3);
  });

  it('app update refuses nothing to change, both --x and --no-x, and an unknown client ID', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const created = json(await idp(t.url, [
      'app', 'create', '--group', group.path, '--name', 'Refusals', '--homepage-url', 'https://r.example.test', '--callback-url', 'https://r.example.test/cb', '--json',
    ]));
    const clientId = String(created.clientID);
    expect(refusal(await idp(t.url, ['app', 'update', clientId]))).to.match(/nothing to change/);
    expect(refusal(await idp(t.url, ['app', 'update', clientId, '--device-flow', '--no-device-flow']))).to.equal('idp: --device-flow and --no-device-flow: give one of them');
    const unknown = await idp(t.url, ['app', 'update', 'ffffffffffffffffffff', '--device-flow']);
    expect(unknown.code).to.not.equal(0);
    expect(unknown.stderr).to.match(/no such application/);
  });

  it('token create prints an ha_ token once, stores only its digest, and the bearer lookup finds it as its user', async () => {
    const user = await makeUser(t.db);
    const created = json(
      await idp(t.url, ['token', 'create', '--user', user.username, '--name', 'ci', '--scope', 'groups:read-only groups:read-write', '--expires-in-days', '30', '--json']),
    );
    expect(created).to.have.all.keys('id', 'name', 'token', 'scopes', 'createdAt', 'lastUsedAt', 'expiresAt', 'groups');
    expect(created.groups).to.equal('all');
    expect(created).to.include({ name: 'ci', lastUsedAt: null });
    expect(created.scopes).to.deep.equal(['groups:read-only', 'groups:read-write']);
    const token = String(created.token);
    expect(token).to.match(/^ha_[0-9A-Za-z]{36}$/);
    const days = (Date.parse(String(created.expiresAt)) - Date.now()) / 86_400_000;
    expect(days).to.be.within(29.9, 30.1);
    const rows = await t.db('personal_access_tokens').select();
    expect(JSON.stringify(rows)).to.not.include(token.slice(3, 33));
    const found = await findAccessTokenByDigest(t.db, createHash('sha256').update(token).digest('base64url'));
    expect(found?.user_id, 'the bearer check finds it as its user').to.equal(user.id);
  });

  it('token create --group limits the token to those groups of the user, and refuses a group they are not in', async () => {
    const user = await makeUser(t.db);
    const mine = await makeGroup(t.db, user.id);
    await makeGroup(t.db, user.id);
    const created = json(await idp(t.url, ['token', 'create', '--user', user.username, '--name', 'one-group', '--scope', 'groups:read-only', '--group', mine.path, '--json']));
    expect(created.groups).to.deep.equal([{ id: mine.id, name: mine.name, path: mine.path }]);
    const stored = await t.db('personal_token_groups').where({ token_id: created.id }).select('group_id');
    expect(stored.map((r) => Number(r.group_id))).to.deep.equal([mine.id]);
    const foreign = await makeGroup(t.db, (await makeUser(t.db)).id);
    expect(refusal(await idp(t.url, ['token', 'create', '--user', user.username, '--name', 'x', '--scope', 'groups:read-only', '--group', foreign.path]))).to.match(/^idp: .*groups must be groups you are a member of/);
  });

  // Each refusal is a process of its own (tsx start-up: seconds on a loaded machine), so they run
  // side by side rather than one after another.
  it('token create refuses an unknown scope and an expiry out of range, naming the flag', async () => {
    const user = await makeUser(t.db);
    const create = (...flags: string[]) => idp(t.url, ['token', 'create', '--user', user.username, '--name', 'x', ...flags]);
    const [scope, tooLong, notWhole] = await Promise.all([
      create('--scope', 'admin'),
      create('--scope', 'groups:read-only', '--expires-in-days', '400'),
      create('--scope', 'groups:read-only', '--expires-in-days', '1e2'),
    ]);
    expect(refusal(scope)).to.match(/^idp: --scope: /);
    expect(refusal(tooLong)).to.match(/^idp: --expires-in-days: /);
    expect(refusal(notWhole)).to.equal('idp: --expires-in-days: must be a whole number of days from 1 to 365 (leave it out for a token that never expires)');
  });

  it('token create names a user that does not exist', async () => {
    expect(refusal(await idp(t.url, ['token', 'create', '--user', 'nobody-here', '--name', 'x', '--scope', 'groups:read-only']))).to.equal('idp: no user "nobody-here"');
  });

  it('keys rotate adds a signing key', async () => {
    const count = async () => Number(((await t.db('keys').where({ kind: 'signing' }).count({ n: '*' }).first()) as { n: number | string }).n);
    const before = await count();
    const { kid } = json(await idp(t.url, ['keys', 'rotate', '--json']));
    expect(kid).to.be.a('string').and.not.equal('');
    expect(await count()).to.equal(before + 1);
    const newest = await t.db('keys').where({ kind: 'signing' }).orderBy('id', 'desc').first('material');
    expect(JSON.parse(newest.material)).to.include({ kid, use: 'sig', alg: 'RS256' });
  });
});

describe('idp CLI: command line and environment', () => {
  const t = useDatabase('sqlite');

  it('migrate applies every migration to a new database, then nothing', async () => {
    const fresh = tmpSqliteUrl();
    try {
      const all = await migrationSource.getMigrations([]);
      expect(json(await idp(fresh.url, ['migrate', '--json']))).to.deep.equal({ applied: all });
      const again = await idp(fresh.url, ['migrate']);
      expect(again).to.deep.include({ code: 0, stderr: '', stdout: 'the database is up to date\n' });
      const db = createDb(fresh.url);
      try {
        expect(await db.schema.hasTable('oauth_app_secrets')).to.equal(true);
      } finally {
        await db.destroy();
      }
    } finally {
      fresh.remove();
    }
  });

  it('user create refuses an invalid username, naming --username', async () => {
    const line = refusal(await idp(t.url, ['user', 'create', '--username', 'has space', '--email', 'x@example.test', '--password-stdin'], 'long enough\n'));
    expect(line).to.equal('idp: --username: username may contain only ASCII letters, digits, "-", "_" and "."');
  });

  it('user create requires --password-stdin', async () => {
    const line = refusal(await idp(t.url, ['user', 'create', '--username', `u-${unique()}`, '--email', `${unique()}@example.test`]));
    expect(line).to.match(/^idp: --password-stdin is required/);
  });

  it('refuses a password given on the command line without echoing it', async () => {
    const line = refusal(await idp(t.url, ['user', 'create', '--username', 'someone', '--email', 's@example.test', '--password', 'hunter2hunter2']));
    expect(line).to.match(/^idp: --password: .*--password-stdin/);
    expect(line).to.not.include('hunter2hunter2');
  });

  it('group create refuses an unknown owner', async () => {
    const line = refusal(await idp(t.url, ['group', 'create', '--name', 'Team', '--path', `team-${unique()}`, '--owner', 'nobody-here']));
    expect(line).to.equal('idp: no user "nobody-here"');
  });

  it('group add-member refuses an unknown role, naming role', async () => {
    const owner = await makeUser(t.db);
    const other = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const line = refusal(await idp(t.url, ['group', 'add-member', '--group', group.path, '--user', other.username, '--role', 'boss']));
    expect(line).to.match(/^idp: (--role: )?role must be owner, maintainer or member$/);
  });

  it('app create tells a person the secret will not be shown again', async () => {
    const owner = await makeUser(t.db);
    const group = await makeGroup(t.db, owner.id);
    const run = await idp(t.url, ['app', 'create', '--group', group.path, '--name', 'Human', '--homepage-url', 'https://h.example.test', '--callback-url', 'https://h.example.test/cb']);
    expect(run).to.include({ code: 0, stderr: '' });
    const secret = /clientSecret:\s+(\S+)/.exec(run.stdout)?.[1];
    expect(secret).to.match(SECRET_SHAPE);
    expect(run.stdout).to.match(/clientID:\s+\S+/);
    expect(run.stdout).to.match(/will not be shown again/);
  });

  it('refuses an unknown command and lists the commands', async () => {
    const line = refusal(await idp(t.url, ['frob']));
    expect(line).to.match(/^idp: unknown command "frob"; try: migrate, user create, /);
  });

  it('refuses a malformed DATABASE_URL, naming it', async () => {
    const line = refusal(await idp('mysql://db.example.test/idp', ['migrate']));
    expect(line).to.match(/^idp: DATABASE_URL=/);
  });

  it('names the database when it does not answer, in one line, exit 1', async () => {
    // A port where nothing listens.
    const run = await idp('postgres://postgres@127.0.0.1:1/idp', ['migrate']);
    expect(run).to.include({ code: 1, stdout: '' });
    expect(run.stderr).to.match(/^idp: failed: the database did not answer \(DATABASE_URL\); check that it is running and reachable from here \([^\n]*ECONNREFUSED[^\n]*\)\n$/);
  });

  it('prints its usage on --help', async () => {
    const run = await idp(t.url, ['--help']);
    expect(run).to.include({ code: 0, stderr: '' });
    for (const command of ['migrate', 'user create', 'group create', 'group add-member', 'app create', 'app update', 'resource create', 'resource list', 'resource delete', 'keys rotate']) {
      expect(run.stdout).to.include(`  ${command}`);
    }
  });
});
