import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, waitFor } from './app.js';
import { stopChild } from './processes.js';

/** Debian's pgbouncer (`apt-get install pgbouncer`). */
const PGBOUNCER = '/usr/sbin/pgbouncer';

/**
 * pgbouncer's configuration: every database name is forwarded to `server`'s host and port (so a
 * database created there a moment ago is reachable at once), trust authentication for the user of
 * `server`, who may also read the admin console (SHOW POOLS, SHOW STATS).
 */
export function pgbouncerIni(o: { dir: string; port: number; server: string; poolMode: 'session' | 'transaction' }): string {
  const server = new URL(o.server);
  return [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '',
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${o.port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(o.dir, 'userlist.txt')}`,
    `admin_users = ${decodeURIComponent(server.username) || 'postgres'}`,
    `pool_mode = ${o.poolMode}`,
    'max_client_conn = 1000',
    'default_pool_size = 10',
    // The server is shared: all pools together open at most this many connections to it, and
    // let idle ones go soon.
    'max_user_connections = 40',
    'server_idle_timeout = 10',
    // Sent by psql and JDBC, not by pg; pgbouncer refuses what it does not know.
    'ignore_startup_parameters = extra_float_digits',
    '',
  ].join('\n');
}

/**
 * A pgbouncer of its own, on a free loopback port, in front of the PostgreSQL `server`, run as a
 * child process with its configuration in a temporary directory that `stop` removes. As root it
 * runs as the `postgres` user (pgbouncer refuses to run as root).
 */
export async function startPgBouncer(server: string, poolMode: 'session' | 'transaction' = 'transaction') {
  if (spawnSync(PGBOUNCER, ['--version']).status !== 0) throw new Error(`${PGBOUNCER} is missing: apt-get install pgbouncer`);
  const dir = mkdtempSync(join(tmpdir(), 'idp-pgbouncer-'));
  chmodSync(dir, 0o755); // read by the postgres user when run as root
  const port = await freePort();
  const user = decodeURIComponent(new URL(server).username) || 'postgres';
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(join(dir, 'pgbouncer.ini'), pgbouncerIni({ dir, port, server, poolMode }), { mode: 0o644 });
  const asRoot = process.getuid?.() === 0 ? ['-u', 'postgres'] : [];
  const child = spawn(PGBOUNCER, [...asRoot, join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString('utf8')));

  /** `url` (any database on the server) reached through pgbouncer instead. */
  const urlFor = (url: string) => {
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(port);
    return through.toString();
  };
  /** The admin console's answer to `command` (SHOW POOLS, SHOW STATS…), one object per row. */
  const admin = async (command: string): Promise<Array<Record<string, string>>> => {
    const url = new URL(urlFor(server));
    url.pathname = '/pgbouncer';
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      return (await client.query(command)).rows as Array<Record<string, string>>;
    } finally {
      await client.end();
    }
  };

  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${output}`);
        return admin('SHOW VERSION').then(() => true, () => false);
      },
      () => `pgbouncer did not listen on ${port}: ${output}`,
    );
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    port,
    urlFor,
    admin,
    /** What pgbouncer logged so far, for failure messages. */
    log: () => output,
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type PgBouncer = Awaited<ReturnType<typeof startPgBouncer>>;
