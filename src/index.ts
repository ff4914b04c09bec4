import type { Server } from 'node:http';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createIdp } from './app.js';
import { createLogger } from './log.js';
import { KeysSecretError } from './key-encryption.js';
import { drainable } from './edge/drain.js';
import { answerUnreadableRequests } from './edge/unreadable-request.js';

let config: Config;
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
  logger.info({ url: config.issuer, listen: `${config.host}:${config.port}`, storage: !config.redis ? 'sql' : config.redis.kind === 'single' ? 'sql+redis' : `sql+redis-${config.redis.kind}` }, 'identity provider started');
  // The JSON line is for machines; a newcomer needs to know which address to open (on stderr, so stdout stays JSON).
  if (config.env !== 'production') {
    const mail = config.mail.smtpUrl ? '' : `No SMTP_URL is set: mail (sign-up and reset links) is written under ${config.mail.dir}, and each link is in the log.\n`;
    process.stderr.write(`\nOpen ${config.issuer} in a browser to sign up or sign in (Ctrl-C stops the server).\n${mail}\n`);
  }
});

answerUnreadableRequests(server);

// A port in use or an address this machine does not have: one line saying so, not a stack trace.
server.once('error', (err: NodeJS.ErrnoException) => {
  process.stderr.write(`idp: cannot listen on ${config.host}:${config.port}: ${listenProblem(err, config)}\n`);
  idp.close().finally(() => process.exit(1));
});

/** Once requests are drained, how long closing the pools may take. */
const CLOSE_TIMEOUT_MS = 5000;

const requests = drainable(server);
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (!stopping) {
      stopping = true;
      void stop(signal);
      return;
    }
    // The operator means it: whatever is still in flight is dropped.
    logger.warn({ signal }, 'second signal while draining: stopping at once, requests in flight are cut');
    process.exit(1);
  });
}

/**
 * A graceful stop: /readyz turns 503 so a load balancer sends nothing new; for SHUTDOWN_DELAY_S
 * every request is still accepted and answered, each closing its connection (a load balancer, or
 * Kubernetes' endpoints, may take that long to stop sending here; a client may have written a
 * request on a kept-alive connection already); then no new connection is accepted, idle ones
 * close, requests in flight finish (for up to SHUTDOWN_TIMEOUT_S), and the pools close.
 * Exit 0 when nothing was cut, 1 when the deadline cut requests.
 */
async function stop(signal: NodeJS.Signals): Promise<void> {
  const started = performance.now();
  idp.startDraining();
  if (config.shutdownDelayS > 0) {
    requests.closeAfterAnswers();
    logger.info({ signal, delayS: config.shutdownDelayS }, `stopping: /readyz answers 503; requests are still answered for SHUTDOWN_DELAY_S (${config.shutdownDelayS} s), each closing its connection`);
    await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayS * 1000));
  }
  const drained = await requests.drain(config.shutdownTimeoutS * 1000);
  const closed = await closeWithin(CLOSE_TIMEOUT_MS);
  const ms = Math.round(performance.now() - started);
  if (!closed) {
    logger.error({ signal, ms }, `stopped: the database, Redis or the hashing workers did not close within ${CLOSE_TIMEOUT_MS / 1000} s`);
    process.exit(1);
  }
  if (drained.timedOut) {
    logger.error({ signal, inFlight: drained.inFlight, cut: drained.cut, ms }, `stopped: SHUTDOWN_TIMEOUT_S (${config.shutdownTimeoutS} s) passed, ${drained.cut} request(s) in flight were cut`);
    process.exit(1);
  }
  logger.info({ signal, inFlight: drained.inFlight, ms }, 'stopped: every request in flight was answered');
  process.exit(0);
}

/** Whether the pools closed in time (a store that hangs must not keep a stopping process alive). */
async function closeWithin(ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const closing = idp.close().then(
    () => true,
    (err: unknown) => (logger.warn({ err }, 'closing storage connections failed'), true),
  );
  const closed = await Promise.race([closing, late]);
  clearTimeout(timer);
  return closed;
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
