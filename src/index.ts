import type { Server } from 'node:http';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createIdp } from './app.js';
import { createLogger } from './log.js';
import { KeysSecretError } from './key-encryption.js';

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`idp: ${err.message}\n`);
    process.exit(2);
  }
  throw err;
}

const logger = createLogger(config.logLevel);
const idp = await createIdp(config, { logger }).catch((err: unknown) => {
  process.stderr.write(`idp: cannot start: ${(err as Error).message}\n`);
  // A KEYS_SECRET that does not fit the stored keys is a bad environment, like a bad variable.
  process.exit(err instanceof KeysSecretError ? 2 : 1);
});

const server: Server = idp.app.listen(config.port, config.host, () => {
  logger.info({ url: config.issuer, listen: `${config.host}:${config.port}`, storage: config.redisUrl ? 'sql+redis' : 'sql' }, 'identity provider started');
  // The JSON line is for machines; a newcomer needs to know which address to open (on stderr, so stdout stays JSON).
  if (config.env !== 'production') process.stderr.write(`\nOpen ${config.issuer} in a browser to sign up or sign in (Ctrl-C stops the server).\n\n`);
});

// A port in use or an address this machine does not have: one line saying so, not a stack trace.
server.once('error', (err: NodeJS.ErrnoException) => {
  process.stderr.write(`idp: cannot listen on ${config.host}:${config.port}: ${listenProblem(err, config)}\n`);
  idp.close().finally(() => process.exit(1));
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close();
    idp.close().finally(() => process.exit(0));
  });
}

function listenProblem(err: NodeJS.ErrnoException, { port }: Config): string {
  switch (err.code) {
    case 'EADDRINUSE': return `port ${port} is in use (another server, or an earlier npm start, is running: stop it, or set PORT)`;
    case 'EACCES': return `not allowed to listen on port ${port} (ports below 1024 need privileges: set PORT)`;
    case 'EADDRNOTAVAIL': return 'this machine has no such address (set HOST to one of its addresses, e.g. 127.0.0.1 or 0.0.0.0)';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'HOST is not an address or a name this machine can resolve (e.g. 127.0.0.1 or 0.0.0.0)';
    default: return err.message;
  }
}
