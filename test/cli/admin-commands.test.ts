import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { findUserByUsername } from '../../src/db/users.js';
import { call, expectInvalidToken } from '../helpers/api.js';
import { describeEachProfile, startIdp, useHooks, type RunningIdp } from '../helpers/app.js';
import { signIn, visit } from '../helpers/browser.js';
import { idp as cli, json, refusal, type Run } from '../helpers/cli.js';
import { TEST_REDIS_URL } from '../helpers/db.js';
import { makeClient, makeUser, personalToken, type Client } from '../helpers/factories.js';
import { fieldError } from '../helpers/html.js';
import { oauthTokens, refresh } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

const unique = () => randomBytes(4).toString('hex');

/**
 * What `user disable` may print on stderr besides nothing: oidc-provider, which only that command
 * loads, warns on a Node.js release older than the LTS it supports (22, "Jod").
 */
const PROVIDER_RUNTIME_WARNING = (process.release.lts ?? '') >= 'Jod' ? '' : 'oidc-provider WARNING: Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.\n';

/** A successful `--json` run of a command that loads oidc-provider. */
function jsonWithProvider(run: Run): Record<string, unknown> {
  return json({ ...run, stderr: run.stderr === PROVIDER_RUNTIME_WARNING ? '' : run.stderr });
}

/** The site audit events (of no group) about `username`, oldest first, as "action via". */
async function siteEvents(running: RunningIdp, username: string): Promise<string[]> {
  const rows = await running.db('audit_events').whereNull('group_id').where({ target: username }).orderBy('id').select('action', 'actor_id', 'details');
  return rows.map((row: { action: string; actor_id: number | null; details: string }) =>
    `${row.action} ${row.actor_id === null ? JSON.parse(row.details).via : row.actor_id}`);
}

describeEachProfile('idp CLI: site administrators and disabled accounts', function (profile) {
  // Each test starts the CLI (a new Node.js process) up to four times.
  this.timeout(90_000);

  const smtp = useMailServer();
  /** The CLI reaches the same storage as the running service (Redis under its default key prefix). */
  const running = useHooks(
    () => startIdp(profile, { SMTP_URL: smtp.url }, undefined, profile === 'sqlite' ? undefined : 'idp:'),
    (server) => server.stop(),
  );
  let client: Client;
  let env: Record<string, string>;

  before(async () => {
    client = await makeClient(running.db);
    env = {
      ISSUER: running.url,
      SMTP_URL: smtp.url,
      ...(profile === 'sqlite' ? {} : { REDIS_URL: TEST_REDIS_URL! }),
    };
  });

  const run = (args: string[], stdin = '') => cli(running.database.url, args, stdin, env);
  const db = () => running.db;

  it('user create --admin makes a site administrator who sees the Admin area', async () => {
    const username = `admin-${unique()}`;
    const password = 'an administrator passphrase';
    const created = json(await run(['user', 'create', '--username', username, '--email', `${username}@example.test`, '--admin', '--password-stdin', '--json'], `${password}\n`));
    expect(created).to.include({ username, admin: true });
    expect(Boolean((await findUserByUsername(db(), username))!.is_admin)).to.equal(true);
    expect(await siteEvents(running, username)).to.deep.equal(['user.admin.grant cli']);
    const site = await signIn(running.url, { username, password });
    await site.get('/admin/users').expect(200);
  });

  it('user create without --admin prints the user, and whether its address is verified', async () => {
    const username = `plain-${unique()}`;
    const created = json(await run(['user', 'create', '--username', username, '--email', `${username}@example.test`, '--password-stdin', '--json'], 'a plain passphrase\n'));
    expect(created).to.have.all.keys('id', 'username', 'email', 'name', 'createdAt', 'emailVerified');
    expect(created.emailVerified).to.equal(true);
    expect(Boolean((await findUserByUsername(db(), username))!.is_admin)).to.equal(false);
  });

  it('user create makes an account whose address is verified: the operator vouches for it, so no banner asks for a link never sent', async () => {
    const username = `vouched-${unique()}`;
    const password = 'a vouched-for passphrase';
    const out = await run(['user', 'create', '--username', username, '--email', `${username}@example.test`, '--password-stdin'], `${password}\n`);
    expect(out.stdout).to.match(new RegExp(`^created user ${username} \\(id \\d+\\)\\n$`));
    expect((await findUserByUsername(db(), username))!.email_verified_at).to.not.equal(null);
    const site = await signIn(running.url, { username, password });
    expect((await site.get('/groups').expect(200)).text).not.to.include('data-testid="verify-banner"');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(smtp.countTo(`${username}@example.test`)).to.equal(0);
  });

  it('user create --unverified leaves the address unverified and mails the link that verifies it', async () => {
    const username = `unvouched-${unique()}`;
    const email = `${username}@example.test`;
    const password = 'an unvouched passphrase';
    const created = json(await run(['user', 'create', '--username', username, '--email', email, '--unverified', '--password-stdin', '--json'], `${password}\n`));
    expect(created.emailVerified).to.equal(false);
    expect((await findUserByUsername(db(), username))!.email_verified_at).to.equal(null);
    const mail = await smtp.next(email);
    expect(mail.subject).to.equal('Verify your e-mail address');
    const site = await signIn(running.url, { username, password });
    expect((await site.get('/groups').expect(200)).text).to.include('data-testid="verify-banner"');
    await site.get(linkIn(mail, running.url)).expect(302, '/verify-email/done');
    expect((await findUserByUsername(db(), username))!.email_verified_at).to.not.equal(null);
    const text = await run(['user', 'create', '--username', `${username}-2`, '--email', `2-${email}`, '--unverified', '--password-stdin'], `${password}\n`);
    expect(text.stdout).to.match(/; a link to verify the address went to /);
  });

  it('user set-admin grants and (with --off) takes back the Admin area, saying when nothing changed', async () => {
    const user = await makeUser(db());
    const on = await run(['user', 'set-admin', user.username]);
    expect(on).to.deep.equal({ code: 0, stderr: '', stdout: `${user.username} is now a site administrator\n` });
    const site = await signIn(running.url, user);
    await site.get('/admin').expect(302, '/admin/users');
    expect(json(await run(['user', 'set-admin', user.username, '--json']))).to.deep.equal({ username: user.username, admin: true, changed: false });
    expect(json(await run(['user', 'set-admin', '--off', user.username, '--json']))).to.deep.equal({ username: user.username, admin: false, changed: true });
    await site.get('/admin').expect(404);
    expect(await siteEvents(running, user.username)).to.deep.equal(['user.admin.grant cli', 'user.admin.revoke cli']);
  });

  it('user set-admin with a Redis that does not answer says so, exits 1 and changes nothing', async () => {
    const user = await makeUser(db());
    // A port where nothing listens: the instances' caches could not be told of the change.
    const away = await cli(running.database.url, ['user', 'set-admin', user.username], '', { ...env, REDIS_URL: 'redis://127.0.0.1:1' });
    expect(away.code).to.equal(1);
    expect(away.stdout).to.equal('');
    expect(away.stderr.replace(PROVIDER_RUNTIME_WARNING, '')).to.match(/^idp: failed: Redis did not answer \(REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS\): .* check that it is running and reachable from here \(.+\)\n$/);
    expect(Boolean((await findUserByUsername(db(), user.username))!.is_admin)).to.equal(false);
  });

  it('refuses a missing, extra or unknown username', async () => {
    expect(refusal(await run(['user', 'disable']))).to.equal('idp: <username> is required');
    expect(refusal(await run(['user', 'enable', 'one', 'two']))).to.equal('idp: unexpected argument "two"; flags take the form --name value');
    expect(refusal(await run(['user', 'set-admin', `nobody-${unique()}`]))).to.match(/^idp: no user "nobody-/);
    expect(refusal(await run(['user', 'reset-password', '--off', 'x']))).to.equal('idp: --off: unknown flag; see --help');
  });

  it('user disable signs out everywhere and revokes grants and tokens; user enable lets the person sign in again', async () => {
    const user = await makeUser(db());
    const theirs = await signIn(running.url, user);
    const pat = await personalToken(running.db, user.id);
    const { accessToken, refreshToken } = await oauthTokens(running.url, client, user);

    const disabled = jsonWithProvider(await run(['user', 'disable', user.username, '--json']));
    expect(disabled).to.deep.equal({ username: user.username, disabled: true, changed: true, grants: 1, accessTokens: 1 });
    expectInvalidToken(running, await call(running, '/apis/v2/user', { token: pat }));
    expectInvalidToken(running, await call(running, '/apis/v2/user', { token: accessToken }));
    const refused = await (await visit(running.url)).submit('/login', { login: user.username, password: user.password }).expect(403);
    expect(fieldError(refused.text, 'login')).to.equal('This account is disabled. Contact the site administrator.');

    const again = await run(['user', 'disable', user.username]);
    expect(again).to.deep.equal({
      code: 0,
      stderr: PROVIDER_RUNTIME_WARNING,
      stdout: `${user.username} was already disabled\nsigned out everywhere; revoked 0 authorized application(s) and 0 personal access token(s)\n`,
    });

    const enabled = await run(['user', 'enable', user.username]);
    expect(enabled).to.deep.equal({ code: 0, stderr: '', stdout: `enabled ${user.username}: they can sign in again\n` });
    // The old session was destroyed, not merely refused; the tokens stay revoked.
    await theirs.get('/groups').expect(302);
    expectInvalidToken(running, await call(running, '/apis/v2/user', { token: pat }));
    expectInvalidToken(running, await call(running, '/apis/v2/user', { token: accessToken }));
    expect((await refresh(running.url, client, refreshToken)).body.error).to.equal('invalid_grant');
    await (await signIn(running.url, user)).get('/groups').expect(200);
    expect(await siteEvents(running, user.username)).to.deep.equal(['user.disable cli', 'user.enable cli']);
  });

  it('user reset-password mails the link and prints only the masked address', async () => {
    const user = await makeUser(db(), { username: `reset-${unique()}`, email: `reset-${unique()}@example.test` });
    const sent = await run(['user', 'reset-password', user.username]);
    expect(sent).to.deep.equal({ code: 0, stderr: '', stdout: 'sent to r***@e***.test\n' });
    const link = linkIn(await smtp.next(user.email), running.url);
    const token = link.searchParams.get('token')!;
    expect(sent.stdout).not.to.contain(token);
    const person = await visit(running.url, '/forgot-password');
    await person.submit('/reset-password', { token, password: 'the reset passphrase 7', password_confirmation: 'the reset passphrase 7' }).expect(302);
    await (await visit(running.url)).submit('/login', { login: user.username, password: 'the reset passphrase 7' }).expect(302);
    expect(await siteEvents(running, user.username)).to.deep.equal(['user.password_reset.send cli']);
  });

  it('user reset-password fails with one line when the mail cannot be sent', async () => {
    const user = await makeUser(db());
    const failed = await cli(running.database.url, ['user', 'reset-password', user.username], '', { ...env, SMTP_URL: 'smtp://127.0.0.1:9' });
    expect(failed.code).to.equal(1);
    expect(failed.stdout).to.equal('');
    expect(failed.stderr).to.equal('idp: failed: The e-mail could not be sent right now. Try again in a few minutes.\n');
    expect(await siteEvents(running, user.username)).to.deep.equal([]);
  });
});
