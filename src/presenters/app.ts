import type { AppRow } from '../db/apps.js';
import { toIso } from '../db/time.js';

/** An OAuth application as CONTRACT §3 names its fields. */
export interface AppJson {
  clientID: string;
  clientSecret?: string;
  name: string;
  homepageURL: string;
  description: string;
  callbackURL: string;
  groupId: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * The client secret is opt-in: only the response that created it passes `secret`, because the
 * service keeps only its digest and can never show it again (CONTRACT §3 rule 2).
 */
export function presentApp(row: AppRow, options: { secret?: string } = {}): AppJson {
  return {
    clientID: row.client_id,
    ...(options.secret ? { clientSecret: options.secret } : {}),
    name: row.name,
    homepageURL: row.homepage_url,
    description: row.description,
    callbackURL: row.callback_url,
    groupId: Number(row.group_id),
    createdAt: toIso(row.created_at)!,
    updatedAt: toIso(row.updated_at)!,
  };
}
