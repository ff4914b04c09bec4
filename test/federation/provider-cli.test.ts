import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { insertIdentity } from '../../src/db/identities.js';
import { findSignInProvider } from '../../src/db/sign-in-providers.js';
import { keyCipher } from '../../src/key-encryption.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { openClientSecret } from '../../src/services/federation/providers.js';
import { noPasswordHash } from '../../src/services/passwords.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn } from '../helpers/browser.js';
import { json, refusal, type Run } from '../helpers/cli.js';
import { TEST_DATABASE_POOLING } from '../helpers/db.js';
import { makeUser } from '../helpers/factories.js';
import { TEST_KIND, useTestKind } from './admin-test-kind.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const REGISTER_KIND = new URL('./register-admin-test-kind.ts', import.meta.url).href;
const KEYS_SECRET = 'a-keys-secret-of-at-least-32-characters!';
const unique = () => randomBytes(3).toString('hex');

/**
 * The real CLI in a child process (as test/helpers/cli.ts runs it), with the managing tests' kind
 * registered before it starts (`node --import`), so that its settings become flags as any kind's do.
 */
function idp(url: string, args: string[], stdin = '', env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', '--import', REGISTER_KIND, 'src/cli/index.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, ...(url.startsWith('sqlite:') ? {} : { DATABASE_POOLING: TEST_DATABASE_POOLING }), ...env },
    }, (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }));
    child.stdin!.on('error', () => {});
    child.stdin!.end(stdin);
  });
}

describeEachProfile('idp provider add | list | update | disable | enable | remove', function (profile) {
  // Each test starts the CLI (a new Node.js process) a few times.
  this.timeout(240_000);
  useTestKind();
  const running = useIdp(profile, { KEYS_SECRET });
  const run = (args: string[], stdin = '') => idp(running.database.url, args, stdin, { ISSUER: running.url, KEYS_SECRET });
  const db = () => running.db;

  const addArgs = (slug: string, extra: string[] = []) => [
    'provider', 'add', '--kind', TEST_KIND.kind, '--slug', slug, '--name', `Corp ${slug}`, '--client-id', `client-${slug}`,
    '--issuer', 'https://sso.example.com/', '--client-secret-stdin', ...extra,
  ];

  it('adds a provider with the secret from standard input: sealed, never printed, the callback URL printed', async () => {
    const slug = `corp-${unique()}`;
    const secret = `piped-secret-${unique()}`;
    const out = json(await run([...addArgs(slug, ['--allow-sign-up', '--allowed-domains', 'Example.com,bücher.example', '--trust-mfa', '--tenant-id', 'ACME']), '--json'], `${secret}\n`));
    expect(out).to.include({ slug, kind: TEST_KIND.kind, name: `Corp ${slug}`, clientId: `client-${slug}`, allowSignUp: true, trustMfa: true, disabled: false });
    expect(out.callbackURL).to.equal(`${running.url}/login/callback/${slug}`);
    expect(out.allowedDomains).to.deep.equal(['example.com', 'xn--bcher-kva.example']);
    expect(out.settings).to.deep.equal({ issuer: 'https://sso.example.com', tenant_id: 'acme' });
    expect(out.scopes).to.deep.equal(TEST_KIND.defaultScopes);
    expect(JSON.stringify(out)).not.to.contain(secret);
    const row = (await findSignInProvider(db(), slug))!;
    expect(row.client_secret).to.match(/^enc:v1:/);
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal(secret);
    const audit = await db()('audit_events').where({ target: slug }).select('action', 'actor_id', 'details');
    expect(audit).to.have.length(1);
    expect(audit[0]).to.include({ action: 'sign-in_provider.add', actor_id: null });
    expect(JSON.parse(audit[0].details as string)).to.include({ via: 'cli', kind: TEST_KIND.kind });
    expect(audit[0].details).not.to.contain(secret);
    // What the CLI added is what Admin → Sign-in providers shows.
    const admin = await makeUser(db());
    await setSiteAdmin(db(), { userId: 0, ip: null, admin: true }, admin, true);
    const page = await (await signIn(running.url, admin)).get(`/admin/providers/${slug}`).expect(200);
    expect(page.text).to.contain(`value="${running.url}/login/callback/${slug}"`);
    expect(page.text).not.to.contain(secret);
  });

  it('takes the secret as --client-secret for scripts, and prints a readable summary', async () => {
    const slug = `argv-${unique()}`;
    const args = addArgs(slug).filter((a) => a !== '--client-secret-stdin');
    const done = await run([...args, '--client-secret', 'argv-secret-value']);
    expect(done.code, done.stderr).to.equal(0);
    expect(done.stdout).to.contain(`added sign-in provider ${slug}`);
    expect(done.stdout).to.contain(`callback URL:           ${running.url}/login/callback/${slug}`);
    expect(done.stdout).not.to.contain('argv-secret-value');
    const both = refusal(await run([...addArgs(`x-${unique()}`), '--client-secret', 'x'], 'y\n'));
    expect(both).to.equal('idp: --client-secret and --client-secret-stdin: give one of them (standard input is preferred)');
    const none = refusal(await run(args.map((a) => (a === slug ? `n-${unique()}` : a))));
    expect(none).to.match(/^idp: --client-secret-stdin is required/);
  });

  it('names the flag of every bad value, and changes nothing', async () => {
    const bad = refusal(await run(['provider', 'add', '--kind', TEST_KIND.kind, '--slug', 'Bad Slug', '--name', 'x', '--client-id', 'c', '--issuer', 'http://plain.example', '--allowed-domains', 'not a@domain', '--position', '3x', '--client-secret-stdin'], 'sec\n'));
    expect(bad).to.match(/^idp: --slug must be 2 to 40 characters/);
    expect(bad).to.contain('--issuer: Issuer URL must be an absolute https URL');
    expect(bad).to.contain('--allowed-domains must be e-mail domains');
    expect(bad).to.contain('--position must be a whole number');
    expect(refusal(await run(['provider', 'add', '--kind', 'nonesuch', '--slug', 'abc'])).startsWith('idp: --kind must be one of ')).to.equal(true);
    expect(refusal(await run(['provider', 'add', '--slug', 'abc']))).to.equal('idp: --kind is required');
    expect(refusal(await run([...addArgs(`u-${unique()}`), '--bogus', 'x'], 's\n'))).to.equal('idp: --bogus: unknown flag; see --help');
    expect(refusal(await run([...addArgs('new')], 's\n'))).to.match(/^idp: --slug "new" is reserved/);
    const slug = `dup-${unique()}`;
    json(await run([...addArgs(slug), '--json'], 's\n'));
    expect(refusal(await run([...addArgs(slug)], 's\n'))).to.equal(`idp: --slug "${slug}" is taken by another sign-in provider`);
    expect(await db()('sign_in_providers').where({ slug })).to.have.length(1);
  });

  it('updates only what is named: the secret stays unless a new one is piped', async () => {
    const slug = `upd-${unique()}`;
    json(await run([...addArgs(slug, ['--allow-sign-up']), '--json'], 'first-secret\n'));
    const out = json(await run(['provider', 'update', slug, '--name', 'Renamed', '--no-allow-sign-up', '--scopes', 'openid profile', '--json']));
    expect(out).to.include({ name: 'Renamed', allowSignUp: false, changed: true });
    expect(out.scopes).to.deep.equal(['openid', 'profile']);
    let row = (await findSignInProvider(db(), slug))!;
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal('first-secret');
    expect(JSON.parse(row.settings)).to.deep.equal({ issuer: 'https://sso.example.com' });
    json(await run(['provider', 'update', slug, '--client-secret-stdin', '--json'], 'second-secret\n'));
    row = (await findSignInProvider(db(), slug))!;
    expect(openClientSecret(keyCipher(KEYS_SECRET), row.client_secret)).to.equal('second-secret');
    expect(refusal(await run(['provider', 'update', slug]))).to.equal('idp: nothing to change: give at least one flag to change (see --help)');
    expect(refusal(await run(['provider', 'update', 'no-such-provider', '--name', 'x']))).to.equal('idp: There is no such sign-in provider.');
    expect(refusal(await run(['provider', 'update', slug, '--issuer', 'ftp://x']))).to.equal('idp: --issuer: Issuer URL must be an absolute https URL');
    const actions = (await db()('audit_events').where({ target: slug }).orderBy('id').select('action', 'details')) as { action: string; details: string }[];
    expect(actions.map((a) => a.action)).to.deep.equal(['sign-in_provider.add', 'sign-in_provider.update', 'sign-in_provider.update']);
    expect(JSON.parse(actions[2]!.details)).to.include({ client_secret: 'replaced', via: 'cli' });
    expect(actions.map((a) => a.details).join()).not.to.match(/first-secret|second-secret/);
  });

  it('lists providers as a table and as JSON, never with a secret', async () => {
    const slug = `list-${unique()}`;
    json(await run([...addArgs(slug), '--json'], 'listed-secret\n'));
    const table = await run(['provider', 'list']);
    expect(table.code, table.stderr).to.equal(0);
    const [header, ...lines] = table.stdout.trimEnd().split('\n');
    expect(header).to.match(/^SLUG\s+KIND\s+NAME\s+STATUS\s+IDENTITIES\s+CALLBACK URL$/);
    const line = lines.find((l) => l.startsWith(`${slug} `));
    expect(line).to.match(new RegExp(`^${slug}\\s+${TEST_KIND.kind}\\s+Corp ${slug}\\s+enabled\\s+0\\s+${running.url}/login/callback/${slug}$`));
    const listed = json(await run(['provider', 'list', '--json'])) as { providers: { slug: string }[] };
    expect(listed.providers.map((p) => p.slug)).to.include(slug);
    expect(table.stdout + JSON.stringify(listed)).not.to.contain('listed-secret');
  });

  it('disables, enables and removes, saying how many accounts are left with no way to sign in', async () => {
    const slug = `life-${unique()}`;
    json(await run([...addArgs(slug), '--json'], 's\n'));
    const disabled = await run(['provider', 'disable', slug]);
    expect(disabled.stdout).to.match(new RegExp(`^disabled sign-in provider ${slug}`));
    expect((await findSignInProvider(db(), slug))!.disabled_at).not.to.equal(null);
    expect(json(await run(['provider', 'disable', slug, '--json']))).to.deep.equal({ slug, disabled: true, changed: false });
    expect(json(await run(['provider', 'enable', slug, '--json']))).to.deep.equal({ slug, disabled: false, changed: true });
    const row = (await findSignInProvider(db(), slug))!;
    const stranded = await makeUser(db());
    await db()('users').where({ id: stranded.id }).update({ password_hash: noPasswordHash() });
    await insertIdentity(db(), { userId: stranded.id, providerId: row.id, subject: 'only', username: 'o', email: '', at: new Date().toISOString() });
    const removed = await run(['provider', 'remove', slug]);
    expect(removed.code, removed.stderr).to.equal(0);
    expect(removed.stdout).to.equal(`removed sign-in provider ${slug}; unlinked 1 identity\n1 account(s) had no other way to sign in: send each a password reset (user reset-password <username>)\n`);
    expect(await findSignInProvider(db(), slug)).to.equal(undefined);
    expect(refusal(await run(['provider', 'remove', slug]))).to.equal('idp: There is no such sign-in provider.');
    expect(refusal(await run(['provider', 'disable']))).to.equal('idp: <slug> is required');
    const actions = (await db()('audit_events').where({ target: slug }).orderBy('id').select('action')).map((a: { action: string }) => a.action);
    expect(actions).to.deep.equal(['sign-in_provider.add', 'sign-in_provider.disable', 'sign-in_provider.enable', 'sign-in_provider.remove']);
  });

  it('says in its help that standard input is the way to give the secret, and lists the kind\'s settings as flags', async () => {
    const help = await run(['provider', 'add', '--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.contain('--client-secret-stdin');
    expect(help.stdout).to.match(/Pipe the client secret on standard input/);
    expect(help.stdout).to.contain(`${TEST_KIND.kind}: --issuer (required), --tenant-id`);
    const usage = await run(['--help']);
    for (const command of ['provider add', 'provider list', 'provider update', 'provider disable', 'provider enable', 'provider remove']) expect(usage.stdout).to.contain(command);
  });
});
