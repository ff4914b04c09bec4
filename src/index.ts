import { ConfigError, loadConfig } from './config.js';
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
const server = idp.app.listen(config.port, config.host, () => {
  logger.info({ url: config.issuer, listen: `${config.host}:${config.port}`, storage: config.redisUrl ? 'sql+redis' : 'sql' }, 'identity provider started');
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close();
    idp.close().finally(() => process.exit(0));
  });
}
