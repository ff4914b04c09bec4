/**
 * `npm run demo`: the whole flow in a browser within a minute of `npm install`.
 *
 * Starts the identity provider as `npm start` does (the embedded default: SQLite in ./data/) and
 * the example third-party server (examples/third-party-server) in this one process, after
 * making a demo user, a group and the example's OAuth application through the same services the
 * pages, the API and the CLI use. On later runs the user and group are reused; the application
 * gets a fresh client secret (secrets are stored hashed, so the old one cannot be shown again)
 * and its older secrets are revoked. Ctrl-C stops both servers.
 *
 * Environment: everything `npm start` reads (PORT, ISSUER, DATABASE_URL, …), and EXAMPLE_PORT
 * (default 4000) for the example server.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { createExampleApp } from '../examples/third-party-server/server.js';
import { createIdp } from '../src/app.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { findUserByUsername } from '../src/db/users.js';
import { NotFoundError } from '../src/errors.js';
import { createLogger } from '../src/log.js';
import {
  accessApplication,
  applicationsOf,
  createApplication,
  generateClientSecret,
  revokeClientSecret,
  secretsOf,
  updateApplication,
} from '../src/services/apps.js';
import type { Actor } from '../src/services/context.js';
import { accessGroup, createGroup, type GroupAccess } from '../src/services/groups.js';
import { verifyPassword } from '../src/services/passwords.js';
import { createUser } from '../src/services/users.js';

const DEMO_USER = { username: 'demo', email: 'demo@example.com', name: 'Demo User', password: 'demo-password' };
const DEMO_GROUP = { name: 'Demo group', path: 'demo', description: 'Made by npm run demo' };
const DEMO_APP_NAME = 'Example third-party server';

/** The demo user: created on the first run, found on later ones. */
async function ensureUser(db: Knex): Promise<{ id: number; note: string }> {
  const existing = await findUserByUsername(db, DEMO_USER.username);
  if (!existing) {
    // The demo vouches for its address, as an operator's `idp user create` does.
    const user = await createUser(db, DEMO_USER, { emailVerified: true });
    return { id: user.id, note: 'created' };
  }
  const passwordStillWorks = await verifyPassword(DEMO_USER.password, existing.password_hash);
  return { id: existing.id, note: passwordStillWorks ? 'already there' : 'already there, BUT ITS PASSWORD WAS CHANGED since the first demo run' };
}

/** The demo group, owned by the demo user, as the demo user reaches it. */
async function ensureGroup(db: Knex, actor: Actor): Promise<{ access: GroupAccess; note: string }> {
  const owned = () => accessGroup(db, actor, { path: DEMO_GROUP.path }, 'manage-apps', 'forbidden');
  try {
    return { access: await owned(), note: 'already there' };
  } catch (err) {
    if (!(err instanceof NotFoundError)) {
      throw new Error(`a group at path "${DEMO_GROUP.path}" exists and the demo user is not its owner; use another DATABASE_URL`, { cause: err });
    }
  }
  await createGroup(db, actor, DEMO_GROUP);
  return { access: await owned(), note: 'created' };
}

/** The example's application, registered with its callback, and a client secret this run can use. */
async function ensureApplication(db: Knex, provider: Provider, group: GroupAccess, exampleUrl: string) {
  const fields = { name: DEMO_APP_NAME, homepageURL: `${exampleUrl}/`, description: 'The example server of examples/third-party-server', callbackURL: `${exampleUrl}/callback` };
  const { items } = await applicationsOf(db, group, { limit: 50, offset: 0 });
  const existing = items.find((a) => a.name === DEMO_APP_NAME);
  if (!existing) {
    const { app, secret } = await createApplication(db, group, fields);
    return { clientId: app.client_id, clientSecret: secret!.secret, note: 'created' };
  }
  // The secret of the last run exists only as a hash: revoke it and make a new one.
  const access = await accessApplication(db, group.actor, existing.client_id);
  await updateApplication(db, provider, access, fields);
  const old = await secretsOf(db, access);
  for (const secret of old) await revokeClientSecret(db, access, secret.id);
  const secret = await generateClientSecret(db, access);
  return {
    clientId: existing.client_id,
    clientSecret: secret.secret,
    note: `already there: made a new client secret for this run and revoked the ${old.length} older one(s), which are stored only as hashes`,
  };
}

/** A storage URL fit to print: sqlite:<file> as it is, a password in a server URL masked. */
function withoutPassword(url: string): string {
  if (url.startsWith('sqlite:')) return url;
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

async function listen(server: Server, port: number, host: string, what: string, hint: string): Promise<void> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'EADDRINUSE' ? `${what}: port ${port} is in use (${hint})` : `${what}: ${(err as Error).message}`, { cause: err });
  }
}

const USAGE = `Usage: npm run demo [-- --help]

Starts the identity provider (as npm start does) and the example third-party server in one
process, makes a demo user, group and OAuth application (reused on later runs; the application
gets a fresh client secret each run), and prints the URL to open and the credentials.
Ctrl-C stops both.

Environment:
  PORT, HOST, ISSUER, DATABASE_URL, REDIS_URL, …   as for npm start (see docs/configuration.md)
  EXAMPLE_PORT   the example third-party server's port (default 4000)
  LOG_LEVEL      the identity provider's log level (default warn here)
`;

async function main(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const unknown = args.filter((arg) => arg.startsWith('-'));
  if (unknown.length) throw new Error(`unknown option ${unknown[0]} (npm run demo -- --help lists what there is)`);
  const config = loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' });
  const examplePort = Number(process.env.EXAMPLE_PORT ?? 4000);
  if (!Number.isInteger(examplePort) || examplePort < 1 || examplePort > 65535) throw new Error(`EXAMPLE_PORT="${process.env.EXAMPLE_PORT}" is invalid: must be a port number (1–65535)`);
  const exampleUrl = `http://localhost:${examplePort}`;

  const idp = await createIdp(config, { logger: createLogger(config.logLevel) });
  const servers: Server[] = [];
  const stop = async () => {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
    await idp.close();
  };
  try {
    const user = await ensureUser(idp.db);
    const actor: Actor = { userId: user.id, ip: null };
    const group = await ensureGroup(idp.db, actor);
    const app = await ensureApplication(idp.db, idp.provider, group.access, exampleUrl);

    const idpServer = createServer(idp.app.callback());
    servers.push(idpServer);
    await listen(idpServer, config.port, config.host, 'identity provider', 'is `npm start` running? stop it, or set PORT');
    const example = await createExampleApp({ issuer: config.issuer, clientId: app.clientId, clientSecret: app.clientSecret, redirectUri: `${exampleUrl}/callback` });
    const exampleServer = createServer(example.callback());
    servers.push(exampleServer);
    await listen(exampleServer, examplePort, '127.0.0.1', 'example server', 'set EXAMPLE_PORT');

    console.log(`
Horizon ID demo: the identity provider and a third-party server that signs in with it.

  Open ${exampleUrl}   (the example third-party server)
  It sends you to ${config.issuer} (the identity provider) to sign in and authorize.

  Sign in as   ${DEMO_USER.username}  (or ${DEMO_USER.email})   user ${user.note}
  Password     ${DEMO_USER.password}

  Group        ${DEMO_GROUP.name} (${config.issuer}/groups/${DEMO_GROUP.path})   ${group.note}
  Application  ${DEMO_APP_NAME}, clientID ${app.clientId}
               ${app.note}

  Then revoke it in ${config.issuer}/account/settings/applications and reload the example:
  it sends you back to authorize. Storage: ${withoutPassword(config.databaseUrl)}${config.redis ? ` + ${config.redis.kind === 'single' ? withoutPassword(config.redis.url) : `Redis ${config.redis.kind}`}` : ''}

Stop with Ctrl-C.`);
  } catch (err) {
    await stop();
    throw err;
  }

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.log('\nstopping the demo');
      stop().finally(() => process.exit(0));
    });
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`demo: ${err instanceof ConfigError ? err.message : (err as Error).message}\n`);
  process.exit(1);
});
