import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { insertIdentity } from '../../src/db/identities.js';
import { findSignInProvider, insertSignInProvider } from '../../src/db/sign-in-providers.js';
import { keyCipher } from '../../src/key-encryption.js';
import { openClientSecret } from '../../src/services/federation/providers.js';
import { now } from '../../src/time.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { idp, json, refusal, type Run } from '../helpers/cli.js';
import { makeUser } from '../helpers/factories.js';
import { directorySettings, ldapGroups, ldapPeople, startSlapd, type Slapd } from '../helpers/slapd.js';

const KEYS_SECRET = 'a-keys-secret-of-at-least-32-characters!';
const unique = () => randomBytes(3).toString('hex');

/**
 * What `provider check` may print on stderr besides nothing: oidc-provider, which it loads (to
 * revoke what a disabled account holds), warns on a Node.js release older than the LTS it supports.
 */
const PROVIDER_RUNTIME_WARNING = (process.release.lts ?? '') >= 'Jod' ? '' : 'oidc-provider WARNING: Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.\n';
const withoutWarning = (run: Run): Run => ({ ...run, stderr: run.stderr === PROVIDER_RUNTIME_WARNING ? '' : run.stderr });

/** A run that printed its report and exited 1: what the directory's test or check said, as JSON. */
function failed(run: Run): Record<string, unknown> {
  expect(run.stderr, 'stderr').to.equal('');
  expect(run.code, `exit code (stdout: ${run.stdout})`).to.equal(1);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/**
 * `idp provider add --kind ldap`, `provider test` and `provider check`: the real CLI in a child
 * process against a real OpenLDAP (Debian's slapd, with a test CA), on both storage profiles.
 */
describeEachProfile('idp provider add --kind ldap | test | check', function (profile) {
  // Each test starts the CLI (a new Node.js process) a few times.
  this.timeout(240_000);
  const running = useIdp(profile, { KEYS_SECRET });
  const run = (args: string[], stdin = '') => idp(running.database.url, args, stdin, { ISSUER: running.url, KEYS_SECRET });
  let slapd: Slapd;
  let files: string;

  before(async function () {
    this.timeout(30_000);
    slapd = await startSlapd();
    files = mkdtempSync(join(tmpdir(), 'idp-cli-ldap-'));
  });
  after(async () => {
    await slapd?.close();
    if (files) rmSync(files, { recursive: true, force: true });
  });

  const addArgs = (slug: string, extra: string[] = []) => [
    'provider', 'add', '--kind', 'ldap', '--slug', slug, '--name', `Directory ${slug}`,
    '--url', slapd.ldapsUrl, '--user-base', `ou=people,${slapd.baseDn}`, '--group-base', `ou=groups,${slapd.baseDn}`,
    '--client-id', slapd.serviceDn, '--client-secret-stdin', '--ca-certificate-file', slapd.caFile, ...extra,
  ];
  const add = async (slug: string, extra: string[] = []) => json(await run([...addArgs(slug, extra), '--json'], `${slapd.servicePassword}\n`));

  it('adds a directory: the CA certificate from its file, the service password from standard input, settings left out at their defaults', async () => {
    const slug = `corp-${unique()}`;
    const mapping = `${ldapGroups.developers.dn} = engines member\n${ldapGroups.admins.dn} = engines maintainer`;
    const out = await add(slug, ['--group-mapping', mapping, '--allow-sign-up']);
    expect(out).to.include({ slug, kind: 'ldap', clientId: slapd.serviceDn, allowSignUp: true, trustMfa: false, callbackURL: null });
    expect(out.scopes).to.deep.equal([]);
    // The filters and the attributes were left out: the kind's defaults are OpenLDAP's, as directorySettings has them.
    expect(out.settings).to.deep.equal(directorySettings(slapd, mapping, { ca_certificate: slapd.caPem.trim() }));
    expect(JSON.stringify(out)).not.to.contain(slapd.servicePassword);
    const row = (await findSignInProvider(running.db, slug))!;
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal(slapd.servicePassword);

    // For a person: the service account, no callback URL, and what to do next.
    const text = await run(addArgs(`text-${unique()}`, ['--user-filter', '(&(objectClass=inetOrgPerson)(uid={{username}}))']), `${slapd.servicePassword}\n`);
    expect(text.code, text.stderr).to.equal(0);
    expect(text.stdout).to.match(/^service account DN: +cn=idp-service,dc=example,dc=org$/m);
    expect(text.stdout).to.match(/^CA certificate: +1 PEM certificate\(s\)$/m);
    expect(text.stdout).to.match(/^User filter: +\(&\(objectClass=inetOrgPerson\)\(uid=\{\{username\}\}\)\)$/m);
    expect(text.stdout).to.contain('Test it with: provider test');
    expect(text.stdout).not.to.contain('callback URL').and.not.to.contain('scopes').and.not.to.contain(slapd.servicePassword);
  });

  it('refuses a CA certificate given twice, a file it cannot read or that is not PEM, scopes, and bad settings, each naming its flag (exit 2)', async () => {
    const notPem = join(files, 'not.pem');
    writeFileSync(notPem, 'hello\n');
    const refused = async (extra: string[], secret = slapd.servicePassword) => refusal(await run(addArgs(`bad-${unique()}`, extra), `${secret}\n`));
    expect(await refused([`--ca-certificate=${slapd.caPem}`])).to.equal('idp: --ca-certificate and --ca-certificate-file: give one of them');
    expect(await refused([], '')).to.equal('idp: --client-secret-stdin: standard input is empty; pipe the service account\'s password in');
    const missing = refusal(await run(addArgs(`bad-${unique()}`).map((a) => (a === slapd.caFile ? join(files, 'missing.pem') : a)), `${slapd.servicePassword}\n`));
    expect(missing).to.equal(`idp: --ca-certificate-file: ${join(files, 'missing.pem')} could not be read (ENOENT)`);
    const garbage = refusal(await run(addArgs(`bad-${unique()}`).map((a) => (a === slapd.caFile ? notPem : a)), `${slapd.servicePassword}\n`));
    expect(garbage).to.equal('idp: --ca-certificate-file: the CA certificate must be PEM: -----BEGIN CERTIFICATE----- …');
    expect(await refused(['--scopes', 'openid'])).to.equal('idp: --scopes: a directory (LDAP / Active Directory) provider has no scopes');
    expect(await refused(['--trust-mfa'])).to.equal('idp: --trust-mfa: a directory (LDAP / Active Directory) provider has no two-factor of its own to trust');
    expect(await refused(['--user-filter', '(uid=alice)'])).to.equal('idp: --user-filter: the user filter must contain {{username}} where the typed username goes, such as (uid={{username}})');
    const url = refusal(await run(addArgs(`bad-${unique()}`).map((a) => (a === slapd.ldapsUrl ? 'http://x' : a)), `${slapd.servicePassword}\n`));
    expect(url).to.equal('idp: --url: the URL must start with ldaps:// or ldap:// (StartTLS is then always used)');
    // A kind without a CA certificate does not take the file.
    const oidc = refusal(await run(['provider', 'add', '--kind', 'oidc', '--slug', `o-${unique()}`, '--name', 'O', '--issuer', 'https://sso.example.com', '--client-id', 'x', '--client-secret', 'y', '--ca-certificate-file', slapd.caFile]));
    expect(oidc).to.equal('idp: --ca-certificate-file: OpenID Connect providers take no CA certificate');
  });

  it('provider test: connects (0), finds a person with their groups (0); nobody found, * among them, exits 1, and so does a directory that is down', async function () {
    this.timeout(300_000);
    const slug = `test-${unique()}`;
    await add(slug, ['--group-mapping', `${ldapGroups.admins.dn} = engines maintainer`]);

    const connected = json(await run(['provider', 'test', slug, '--json']));
    expect(connected).to.deep.equal({ slug, connection: { ok: true, userBaseFound: true } });
    const said = await run(['provider', 'test', slug]);
    expect(said.code).to.equal(0);
    expect(said.stdout).to.equal(`${slug}: connected to ${slapd.ldapsUrl} as ${slapd.serviceDn}; the user search base ou=people,${slapd.baseDn} was found\n`);

    const alice = json(await run(['provider', 'test', slug, '--user', 'alice', '--json']));
    expect(alice).to.include({ slug, username: 'alice', filter: '(uid=alice)' });
    const user = alice.user as Record<string, unknown>;
    expect(user).to.include({ ok: true, found: true, dn: ldapPeople.alice.dn, username: 'alice', email: ldapPeople.alice.mail, name: ldapPeople.alice.cn, disabled: null });
    expect((user.groups as string[]).sort()).to.deep.equal([ldapGroups.admins.dn, ldapGroups.developers.dn].sort());
    expect(user.mapped).to.deep.equal([{ group: 'engines', role: 'maintainer' }]);
    expect(JSON.stringify(alice)).not.to.contain(slapd.servicePassword);
    const aliceText = await run(['provider', 'test', slug, '--user', 'alice']);
    expect(aliceText.code).to.equal(0);
    expect(aliceText.stdout).to.match(/^DN: +uid=alice,ou=people,dc=example,dc=org$/m).and.match(/^ {2}engines: maintainer$/m);

    const nobody = failed(await run(['provider', 'test', slug, '--user', 'nobody-here', '--json']));
    expect(nobody).to.deep.equal({ slug, username: 'nobody-here', filter: '(uid=nobody-here)', user: { ok: true, found: false, filter: '(uid={{username}})' } });
    const star = failed(await run(['provider', 'test', slug, '--user', '*', '--json']));
    expect(star).to.include({ filter: '(uid=\\2a)' });
    expect((star.user as Record<string, unknown>).found).to.equal(false);
    const starText = await run(['provider', 'test', slug, '--user', '*']);
    expect(starText.code).to.equal(1);
    expect(starText.stdout).to.contain('nobody found for "*": the user filter (uid=\\2a) under ou=people,dc=example,dc=org finds nobody');

    expect(refusal(await run(['provider', 'test', slug, '--user', ' ']))).to.equal('idp: --user: a username is required, as people type it on the sign-in page');
    const other = await insertSignInProvider(running.db, {
      slug: `oidc-${unique()}`, kind: 'oidc', name: 'Some SSO', client_id: 'x', client_secret: 'y', scopes: 'openid', settings: JSON.stringify({ issuer: 'https://sso.example.com' }),
      allow_sign_up: false, allowed_domains: '', trust_mfa: false, position: 0,
    }, now());
    expect(refusal(await run(['provider', 'test', other!.slug]))).to.equal(`idp: ${other!.slug} is not a directory (LDAP) provider (its kind: OpenID Connect): only directories can be tested or checked`);

    await slapd.stop();
    try {
      const down = failed(await run(['provider', 'test', slug, '--json']));
      expect(down).to.deep.include({ slug, connection: { ok: false, reason: 'unreachable', message: `Directory ${slug} could not be reached.` } });
      const downUser = await run(['provider', 'test', slug, '--user', 'alice']);
      expect(downUser.code).to.equal(1);
      expect(downUser.stdout).to.equal(`${slug}: the directory could not be used (unreachable): Directory ${slug} could not be reached.\n`);
    } finally {
      await slapd.start();
    }
  });

  it('provider check: disables the account of a person the directory no longer has (0); changes nothing, exit 1, while the directory is down', async function () {
    this.timeout(300_000);
    const slug = `check-${unique()}`;
    const added = await add(slug);
    const subject = ((json(await run(['provider', 'test', slug, '--user', 'bob', '--json'])).user as Record<string, unknown>).subject) as string;
    const stays = await makeUser(running.db);
    const gone = await makeUser(running.db);
    await insertIdentity(running.db, { userId: stays.id, providerId: Number(added.id), subject, username: 'bob', email: stays.email, at: now() });
    await insertIdentity(running.db, { userId: gone.id, providerId: Number(added.id), subject: '00000000-0000-4000-8000-00000000dead', username: 'left', email: gone.email, at: now() });

    const checked = json(withoutWarning(await run(['provider', 'check', slug, '--json'])));
    expect(checked).to.deep.equal({ provider: slug, checked: 2, disabled: 1, enabled: 0 });
    expect((await running.db('users').where({ id: gone.id }).first()).disabled_at).not.to.equal(null);
    expect((await running.db('users').where({ id: stays.id }).first()).disabled_at).to.equal(null);
    const again = withoutWarning(await run(['provider', 'check', slug]));
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stderr).to.equal('');
    expect(again.stdout).to.equal(`${slug}: checked 2 linked account(s): 0 disabled, 0 enabled again\n`);

    await slapd.stop();
    try {
      const down = failed(withoutWarning(await run(['provider', 'check', slug, '--json'])));
      expect(down).to.deep.equal({ provider: slug, checked: 2, disabled: 0, enabled: 0, skipped: 'unavailable' });
      expect((await running.db('users').where({ id: stays.id }).first()).disabled_at).to.equal(null);
    } finally {
      await slapd.start();
    }
  });

  it('lists test and check in the help, and says what --client-id is for a directory', async () => {
    const help = await run(['--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.contain('provider test <slug> [--user USERNAME]').and.contain('provider check <slug>');
    const add = await run(['provider', 'add', '--help']);
    expect(add.stdout).to.contain('--client-id is the service account\'s DN and --client-secret-stdin its password').and.contain('--ca-certificate-file');
    expect(add.stdout).to.contain('--user-filter (default (uid={{username}}))');
  });
});
