import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { expect } from 'chai';
import { CONFIG_VARIABLES, ConfigError, loadConfig } from '../../src/config.js';

/** The ConfigError loadConfig throws for this environment (fails the test if it throws none). */
function configError(env: Record<string, string>): ConfigError {
  let thrown: unknown;
  try {
    loadConfig(env);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).to.be.instanceOf(ConfigError);
  return thrown as ConfigError;
}

describe('loadConfig', () => {
  it('uses the documented defaults for an empty environment', () => {
    expect(loadConfig({})).to.deep.equal({
      env: 'development',
      port: 3000,
      host: '127.0.0.1',
      issuer: 'http://localhost:3000',
      databaseUrl: 'sqlite:./data/idp.sqlite3',
      redis: undefined,
      databaseTimeoutMs: 3000,
      databasePooling: 'session',
      redisTimeoutMs: 2000,
      signup: 'open',
      passwordSignIn: true,
      logLevel: 'info',
      trustProxy: 0,
      keysSecret: undefined,
      rateLimits: {
        signinAccountIp: { points: 5, durationS: 900 },
        signinIp: { points: 50, durationS: 3600 },
        signinAccount: { points: 20, durationS: 3600 },
        signupIp: { points: 10, durationS: 3600 },
        clientRegistrationIp: { points: 20, durationS: 3600 },
        clientAuth: { points: 10, durationS: 60 },
        apiToken: { points: 5000, durationS: 3600 },
        verifyEmail: { points: 5, durationS: 3600 },
        resetEmail: { points: 3, durationS: 3600 },
        resetIp: { points: 20, durationS: 3600 },
        credentialReportsIp: { points: 60, durationS: 3600 },
        deviceCodeBrowser: { points: 10, durationS: 900 },
        deviceCodeIp: { points: 10, durationS: 900 },
        verifyAddress: { points: 5, durationS: 3600 },
      },
      kdf: { concurrency: Math.max(1, Math.floor(availableParallelism() / 2)), queue: 32 },
      mail: { smtpUrl: undefined, from: 'Horizon ID <no-reply@localhost>', dir: './data/mail' },
      requireVerifiedEmail: true,
      metrics: undefined,
      shutdownTimeoutS: 10,
      shutdownDelayS: 0,
      keyActivationDelayS: 3600,
      deviceFlow: { codeTtlS: 600, pollIntervalS: 5 },
      directoryCheckIntervalS: 900,
      clientMetadata: { allowPrivate: false, ca: undefined },
      webhooks: { allowPrivate: false, retryMs: 30_000, pollMs: 1000, timeoutMs: 10_000 },
    });
  });

  it('lets REQUIRE_VERIFIED_EMAIL=false turn the verified-address requirement off', () => {
    expect(loadConfig({ REQUIRE_VERIFIED_EMAIL: 'false' }).requireVerifiedEmail).to.equal(false);
  });

  it('reads a rate limit as count/window, and off as no limit', () => {
    const { rateLimits } = loadConfig({ RATE_LIMIT_API_TOKEN: 'off', RATE_LIMIT_SIGNIN_IP: '3/2m', RATE_LIMIT_SIGNUP_IP: '7/1d' });
    expect(rateLimits.apiToken).to.equal(null);
    expect(rateLimits.signinIp).to.deep.equal({ points: 3, durationS: 120 });
    expect(rateLimits.signupIp).to.deep.equal({ points: 7, durationS: 86_400 });
  });

  it('never echoes KEYS_SECRET, even when refusing it', () => {
    const err = configError({ KEYS_SECRET: 'hunter2-too-short' });
    expect(err.message).to.match(/^KEYS_SECRET="\*\*\*" is invalid/);
    expect(err.message).to.not.include('hunter2');
  });

  it('never echoes the password of an SMTP_URL it refuses', () => {
    const err = configError({ SMTP_URL: 'smtpx://mailer:hunter2@mail.example.com' });
    expect(err.message).to.match(/^SMTP_URL=/);
    expect(err.message).to.not.include('hunter2');
  });

  it('sends mail from MAIL_FROM, else from no-reply at the issuer\'s host', () => {
    expect(loadConfig({ ISSUER: 'https://id.example.com' }).mail.from).to.equal('Horizon ID <no-reply@id.example.com>');
    expect(loadConfig({ MAIL_FROM: 'IdP <idp@example.org>' }).mail.from).to.equal('IdP <idp@example.org>');
  });

  it('waits 5 s after SIGTERM before closing connections in production, none elsewhere, unless SHUTDOWN_DELAY_S says', () => {
    const production = { NODE_ENV: 'production', ISSUER: 'https://id.example.com', KEYS_SECRET: 'k'.repeat(32) };
    expect(loadConfig(production).shutdownDelayS).to.equal(5);
    expect(loadConfig({ ...production, SHUTDOWN_DELAY_S: '0' }).shutdownDelayS).to.equal(0);
    expect(loadConfig({ NODE_ENV: 'test' }).shutdownDelayS).to.equal(0);
    expect(loadConfig({ SHUTDOWN_DELAY_S: '12' }).shutdownDelayS).to.equal(12);
  });

  it('derives the default issuer from PORT', () => {
    expect(loadConfig({ PORT: '8080' }).issuer).to.equal('http://localhost:8080');
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ PORT: '', REDIS_URL: '', DATABASE_URL: '' })).to.include({ port: 3000, redis: undefined, databaseUrl: 'sqlite:./data/idp.sqlite3' });
  });

  it('accepts good values of every variable', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      PORT: '8443',
      HOST: '0.0.0.0',
      ISSUER: 'https://id.example.com/',
      DATABASE_URL: 'postgres://idp@db.internal:5432/idp',
      REDIS_URL: 'redis://cache:6379/2',
      SIGNUP: 'closed',
      PASSWORD_SIGN_IN: 'false',
      KEYS_SECRET: 'k'.repeat(32),
      DATABASE_TIMEOUT_MS: '10000',
      DATABASE_POOLING: 'transaction',
      REDIS_TIMEOUT_MS: '500',
    });
    expect(config).to.include({
      env: 'production',
      port: 8443,
      host: '0.0.0.0',
      issuer: 'https://id.example.com',
      databaseUrl: 'postgres://idp@db.internal:5432/idp',
      signup: 'closed',
      passwordSignIn: false,
      databaseTimeoutMs: 10_000,
      databasePooling: 'transaction',
      redisTimeoutMs: 500,
    });
    expect(config.redis).to.deep.equal({ kind: 'single', url: 'redis://cache:6379/2' });
  });

  it('reads a Redis Cluster from its seed nodes, IPv6 addresses in brackets', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b.internal:7001,[fd00::3]:7002', REDIS_PASSWORD: 'pw' }).redis).to.deep.equal({
      kind: 'cluster',
      nodes: [{ host: '10.0.0.1', port: 7000 }, { host: 'redis-b.internal', port: 7001 }, { host: 'fd00::3', port: 7002 }],
      password: 'pw',
    });
  });

  it('reads Sentinels and the name of the master they watch', () => {
    expect(loadConfig({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'mymaster' }).redis).to.deep.equal({
      kind: 'sentinel',
      sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }],
      name: 'mymaster',
      password: undefined,
    });
  });

  it('names the bad entry of a node list', () => {
    expect(configError({ REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2' }).message).to.equal(
      'REDIS_CLUSTER_NODES="10.0.0.1:7000,10.0.0.2" is invalid: entry "10.0.0.2" is not host:port (a comma-separated list such as 10.0.0.1:6379,10.0.0.2:6379)',
    );
    expect(configError({ REDIS_SENTINELS: 's1:26379,s2:99999', REDIS_SENTINEL_NAME: 'm' }).message).to.include('entry "s2:99999" is not host:port');
  });

  it('takes one Redis topology at a time', () => {
    expect(configError({ REDIS_URL: 'redis://cache:6379', REDIS_CLUSTER_NODES: 'a:7000' }).message).to.match(/^REDIS_CLUSTER_NODES=.* cannot be set together with REDIS_URL: choose one Redis topology/);
    expect(configError({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' }).message).to.match(/^REDIS_SENTINELS=.* cannot be set together with REDIS_CLUSTER_NODES/);
  });

  it('never echoes REDIS_PASSWORD', () => {
    const err = configError({ REDIS_URL: 'redis://cache:6379', REDIS_PASSWORD: 'hunter2-secret' });
    expect(err.message).to.match(/^REDIS_PASSWORD="\*\*\*" is invalid: is only read with REDIS_CLUSTER_NODES or REDIS_SENTINELS/);
    expect(err.message).not.to.include('hunter2');
  });

  const bad: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://' }],
    ['DATABASE_URL', { DATABASE_URL: 'sqlite:' }],
    ['REDIS_URL', { REDIS_URL: 'http://x' }],
    ['REDIS_CLUSTER_NODES', { REDIS_CLUSTER_NODES: 'redis://a:7000' }],
    ['REDIS_CLUSTER_NODES', { REDIS_CLUSTER_NODES: 'a:7000,' }],
    ['REDIS_SENTINEL_NAME', { REDIS_SENTINELS: 's:26379' }],
    ['REDIS_SENTINEL_NAME', { REDIS_SENTINEL_NAME: 'mymaster' }],
    ['REDIS_SENTINEL_NAME', { REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'my master' }],
    ['SIGNUP', { SIGNUP: 'maybe' }],
    ['PASSWORD_SIGN_IN', { PASSWORD_SIGN_IN: 'no' }],
    ['DATABASE_POOLING', { DATABASE_POOLING: 'statement' }],
    ['ISSUER', { ISSUER: 'not-a-url' }],
    ['ISSUER', { NODE_ENV: 'production', ISSUER: 'http://id.example.com' }],
    ['ISSUER', { NODE_ENV: 'production' }],
    ['NODE_ENV', { NODE_ENV: 'staging' }],
    ['KEYS_SECRET', { NODE_ENV: 'production', ISSUER: 'https://id.example.com' }],
    ['TRUST_PROXY', { TRUST_PROXY: '-1' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'all' }],
    ['RATE_LIMIT_SIGNIN_IP', { RATE_LIMIT_SIGNIN_IP: '50' }],
    ['RATE_LIMIT_API_TOKEN', { RATE_LIMIT_API_TOKEN: '0/1h' }],
    ['KDF_CONCURRENCY', { KDF_CONCURRENCY: '0' }],
    ['DATABASE_TIMEOUT_MS', { DATABASE_TIMEOUT_MS: '0' }],
    ['DATABASE_TIMEOUT_MS', { DATABASE_TIMEOUT_MS: '3s' }],
    ['REDIS_TIMEOUT_MS', { REDIS_TIMEOUT_MS: '10' }],
    ['SMTP_URL', { SMTP_URL: 'mail.example.com:587' }],
    ['SMTP_URL', { SMTP_URL: 'http://mail.example.com' }],
    ['REQUIRE_VERIFIED_EMAIL', { REQUIRE_VERIFIED_EMAIL: 'yes' }],
    ['SHUTDOWN_TIMEOUT_S', { SHUTDOWN_TIMEOUT_S: '0' }],
    ['SHUTDOWN_TIMEOUT_S', { SHUTDOWN_TIMEOUT_S: '2.5' }],
    ['SHUTDOWN_TIMEOUT_S', { SHUTDOWN_TIMEOUT_S: 'soon' }],
    ['SHUTDOWN_DELAY_S', { SHUTDOWN_DELAY_S: '-1' }],
    ['SHUTDOWN_DELAY_S', { SHUTDOWN_DELAY_S: '1.5' }],
    ['KEY_ACTIVATION_DELAY_S', { KEY_ACTIVATION_DELAY_S: '1h' }],
    ['KEY_ACTIVATION_DELAY_S', { KEY_ACTIVATION_DELAY_S: '-5' }],
  ];
  for (const [variable, env] of bad) {
    it(`refuses ${JSON.stringify(env)} with one line naming ${variable}`, () => {
      const err = configError(env);
      expect(err.message).to.match(new RegExp(`^${variable}=`));
      expect(err.message).to.not.match(/[\r\n]/);
    });
  }
});

describe('docs/configuration.md', () => {
  it('has a row for every environment variable the service reads', () => {
    const page = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const missing = CONFIG_VARIABLES.filter((name) => !page.includes(`| \`${name}\` |`));
    expect(CONFIG_VARIABLES).to.include('PORT'); // the list is the schema's, not empty
    expect(missing, 'variables without a row in docs/configuration.md').to.deep.equal([]);
  });
});

describe('CLIENT_METADATA_CA_FILE', () => {
  it('reads the PEM file named, and names the variable when the file cannot be read or holds no certificate', () => {
    const pem = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    expect(pem.includes('BEGIN CERTIFICATE')).to.equal(false);
    expect(configError({ CLIENT_METADATA_CA_FILE: '/nonexistent/ca.pem' }).message).to.match(/^CLIENT_METADATA_CA_FILE=.* is invalid: must be a readable PEM file/);
    expect(configError({ CLIENT_METADATA_CA_FILE: new URL('../../package.json', import.meta.url).pathname }).message).to.include('no PEM certificate in it');
  });
});
