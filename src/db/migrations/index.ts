import type { Knex } from 'knex';
import * as initial from './0001_initial.js';
import * as rateLimits from './0003_rate_limits.js';
import * as signOutUrls from './0004_sign_out_urls.js';
import * as accountLinks from './0005_account_links.js';
import * as sessions from './0006_sessions.js';
import * as admin from './0007_admin.js';
import * as submissionKeys from './0008_submission_keys.js';
import * as publicClients from './0009_public_clients.js';
import * as twoFactor from './0011_two_factor.js';
import * as tokenPolicies from './0012_token_policies.js';
import * as deviceFlowAndPar from './0013_device_flow_and_par.js';
import * as dpopProofs from './0014_dpop_proofs.js';
import * as pendingSignIns from './0015_pending_sign_ins.js';
import * as signingKeyActivation from './0016_signing_key_activation.js';
import * as accountRecovery from './0017_account_recovery.js';
import * as reauthentication from './0018_reauthentication.js';
import * as signInProviders from './0019_sign_in_providers.js';
import * as userLanguage from './0020_user_language.js';
import * as clientCredentials from './0021_client_credentials.js';
import * as backchannelLogout from './0022_backchannel_logout.js';
import * as webhooks from './0023_webhooks.js';
import * as resources from './0024_resources.js';
import * as clientRegistration from './0025_client_registration.js';
import * as directories from './0026_directories.js';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Migrations are listed here rather than discovered on disk, so they run the same under tsx,
 * in tests and from the CLI, on SQLite and PostgreSQL alike.
 */
const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0003_rate_limits': rateLimits,
  '0004_sign_out_urls': signOutUrls,
  '0005_account_links': accountLinks,
  '0006_sessions': sessions,
  '0007_admin': admin,
  '0008_submission_keys': submissionKeys,
  '0009_public_clients': publicClients,
  '0011_two_factor': twoFactor,
  '0012_token_policies': tokenPolicies,
  '0013_device_flow_and_par': deviceFlowAndPar,
  '0014_dpop_proofs': dpopProofs,
  '0015_pending_sign_ins': pendingSignIns,
  '0016_signing_key_activation': signingKeyActivation,
  '0017_account_recovery': accountRecovery,
  '0018_reauthentication': reauthentication,
  '0019_sign_in_providers': signInProviders,
  '0020_user_language': userLanguage,
  '0021_client_credentials': clientCredentials,
  '0022_backchannel_logout': backchannelLogout,
  '0023_webhooks': webhooks,
  '0024_resources': resources,
  '0025_client_registration': clientRegistration,
  '0026_directories': directories,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
