import type { Knex } from 'knex';

export type LinkPurpose = 'verify-email' | 'reset-password';

export interface AccountLinkRow {
  id: number;
  purpose: LinkPurpose;
  user_id: number;
  email: string;
  expires_at: string | Date;
  used_at: string | Date | null;
}

const COLUMNS = ['id', 'purpose', 'user_id', 'email', 'expires_at', 'used_at'];

export async function insertAccountLink(
  db: Knex,
  link: { purpose: LinkPurpose; userId: number; email: string; digest: string; expiresAt: string; at: string },
): Promise<void> {
  await db('account_links').insert({
    purpose: link.purpose,
    user_id: link.userId,
    email: link.email,
    digest: link.digest,
    expires_at: link.expiresAt,
    created_at: link.at,
  });
}

export function findAccountLink(db: Knex, purpose: LinkPurpose, digest: string): Promise<AccountLinkRow | undefined> {
  return db('account_links').where({ purpose, digest }).first(COLUMNS);
}

/**
 * Marks a link used if it is still unused and unexpired, in one conditional update: of any number
 * of requests presenting the same link at once, exactly one gets the row back.
 */
export async function useAccountLink(db: Knex, purpose: LinkPurpose, digest: string, at: string): Promise<AccountLinkRow | undefined> {
  const [row] = await db('account_links')
    .where({ purpose, digest })
    .whereNull('used_at')
    .where('expires_at', '>', at)
    .update({ used_at: at })
    .returning(COLUMNS);
  return row as AccountLinkRow | undefined;
}

export async function retireAccountLinks(db: Knex, userId: number, purpose: LinkPurpose, at: string): Promise<void> {
  await db('account_links').where({ user_id: userId, purpose }).whereNull('used_at').update({ used_at: at });
}
