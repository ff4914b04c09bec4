import { z } from 'zod';
import { signOutUrlsOf, type AppRow, type SecretRow } from '../db/apps.js';
import { toIso } from '../time.js';
import { clientId, recordId } from '../ids.js';
import { tokenPattern } from '../tokens.js';
import { CLIENT_TYPES } from '../vocabulary.js';
import { timestamp } from './json.js';

/** Where an application may send people back (db/apps.ts), for the pages, which do not read the database's modules. */
export { redirectUrisOf } from '../db/apps.js';

/** The ways a client registers itself (`oauth_apps.registered_by`). */
export const REGISTERED_BY = ['metadata_document', 'dynamic'] as const;
export type RegisteredBy = (typeof REGISTERED_BY)[number];

/** How the application registered itself, or null when a person registered it (an unknown way reads as null). */
export function registeredAutomatically(row: Pick<AppRow, 'registered_by' | 'registered_from'>): { by: RegisteredBy; from: string } | null {
  const by = row.registered_by;
  if (!by || !(REGISTERED_BY as readonly string[]).includes(by)) return null;
  return { by: by as RegisteredBy, from: row.registered_from ?? '' };
}

/** An OAuth application as the API names its fields. */
export const appJson = z.object({
  clientID: clientId.describe('Public; the OAuth client_id'),
  name: z.string(),
  homepageURL: z.string(),
  description: z.string(),
  callbackURL: z.string(),
  signOutRedirectURLs: z.array(z.string()),
  type: z.enum(CLIENT_TYPES).describe('`confidential`: authenticates with a client secret. `public` (native and single-page apps): no secret, token requests carry only `client_id`, PKCE S256 required'),
  deviceFlow: z.boolean().describe('Enable Device Flow: the application may use the device authorization grant (RFC 8628)'),
  requirePushedAuthorizationRequests: z.boolean().describe('Its authorization requests must be pushed first (RFC 9126, `POST /login/oauth/par`)'),
  backchannelLogoutURL: z.string().nullable().describe('Back-channel logout URL: where signed logout tokens are POSTed when a session the application signed in through ends; null for none'),
  clientCredentials: z.boolean().describe('Allow the application to act as itself: it may use the client credentials grant for a token with no user, for its own group only'),
  groupId: recordId.describe('The group that owns the application'),
  registeredAutomatically: z
    .object({
      by: z.enum(REGISTERED_BY).describe('`metadata_document`: its client ID is the URL of a Client ID Metadata Document the service fetched. `dynamic`: it registered itself by Dynamic Client Registration (RFC 7591)'),
      from: z.string().describe("The metadata document's host, or the address that sent the registration"),
    })
    .nullable()
    .describe('How a client that registered itself did, with no person at a form (a public client, owned by the group the site administrator chose); null for an application a person registered'),
  createdAt: timestamp,
  updatedAt: timestamp,
});
export type AppJson = z.infer<typeof appJson> & { clientSecret?: string };

const clientSecret = z.string().regex(tokenPattern('hs_'));

/** A client secret as reads show it: never the secret, only its last four characters and its dates. */
export const secretJson = z.object({
  id: recordId,
  lastFour: z.string().length(4).describe('The secret\'s last four characters'),
  createdAt: timestamp,
  lastUsedAt: timestamp
    .nullable()
    .describe('Its last successful use at the token endpoint (recorded at most once a minute); null if never'),
});
export type SecretJson = z.infer<typeof secretJson>;

/** A client secret just made: the secret itself, in this response only. */
export const newSecretJson = secretJson
  .omit({ lastUsedAt: true })
  .extend({ secret: clientSecret.describe('Shown in this response only') });

/** The application a request just made, with its first secret in plain. */
export const createdAppJson = appJson.extend({
  clientSecret: clientSecret.optional().describe('Shown in this response only: the service keeps a digest. Absent for a public application, which has no secret'),
  secretId: recordId.optional().describe('The id of that secret, for revoking it later. Absent for a public application'),
});

/**
 * The client secret is opt-in: only the response that created it passes `secret`, because the
 * service keeps only its digest and can never show it again.
 */
export function presentApp(row: AppRow, options: { secret?: string } = {}): AppJson {
  return {
    clientID: row.client_id,
    ...(options.secret ? { clientSecret: options.secret } : {}),
    name: row.name,
    homepageURL: row.homepage_url,
    description: row.description,
    callbackURL: row.callback_url,
    signOutRedirectURLs: signOutUrlsOf(row),
    type: row.client_type,
    deviceFlow: Boolean(row.device_flow),
    requirePushedAuthorizationRequests: Boolean(row.require_pushed_authorization_requests),
    backchannelLogoutURL: row.backchannel_logout_uri ?? null,
    clientCredentials: Boolean(row.allow_client_credentials),
    groupId: Number(row.group_id),
    registeredAutomatically: registeredAutomatically(row),
    createdAt: toIso(row.created_at)!,
    updatedAt: toIso(row.updated_at)!,
  };
}

export function presentSecret(row: Pick<SecretRow, 'id' | 'last_four' | 'created_at' | 'last_used_at'>): SecretJson {
  return {
    id: Number(row.id),
    lastFour: row.last_four,
    createdAt: toIso(row.created_at)!,
    lastUsedAt: toIso(row.last_used_at),
  };
}

/**
 * One application with its active secrets, masked. `created` is the secret the same request made:
 * its plain value (`clientSecret`) and its id appear in that response only.
 */
export function presentAppWithSecrets(
  row: AppRow,
  secrets: Array<Pick<SecretRow, 'id' | 'last_four' | 'created_at' | 'last_used_at'>>,
  created?: { id: number; secret: string },
): AppJson & { secretId?: number; secrets: SecretJson[] } {
  return {
    ...presentApp(row, { secret: created?.secret }),
    ...(created ? { secretId: created.id } : {}),
    secrets: secrets.map(presentSecret),
  };
}
