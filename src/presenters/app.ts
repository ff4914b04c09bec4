import { signOutUrlsOf, type AppRow, type SecretRow } from '../db/apps.js';
import { toIso } from '../time.js';

/** An OAuth application as the API names its fields. */
export interface AppJson {
  clientID: string;
  clientSecret?: string;
  name: string;
  homepageURL: string;
  description: string;
  callbackURL: string;
  signOutRedirectURLs: string[];
  groupId: number;
  createdAt: string;
  updatedAt: string;
}

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
    groupId: Number(row.group_id),
    createdAt: toIso(row.created_at)!,
    updatedAt: toIso(row.updated_at)!,
  };
}

/** A client secret as reads show it: never the secret, only its last four characters and its dates. */
export interface SecretJson {
  id: number;
  lastFour: string;
  createdAt: string;
  lastUsedAt: string | null;
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
