import type { Knex } from 'knex';
import type { AuditRow } from './audit.js';
import type { UserRow } from './users.js';

/** What the Admin area lists of a user: never the password hash. */
export type AdminUserRow = Omit<UserRow, 'password_hash'>;

const LISTED = ['id', 'username', 'email', 'name', 'created_at', 'updated_at', 'is_admin', 'disabled_at'];

/** `text` as a LIKE pattern that matches it literally anywhere (its %, _ and \ escaped). */
function containing(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * Users whose username, e-mail or name contains `query` (case-insensitively), oldest account first;
 * an empty query lists everyone. With the total, for the pages.
 */
export async function searchUsers(
  db: Knex,
  query: string,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: AdminUserRow[] }> {
  const matching = () => {
    const q = db('users');
    if (!query) return q;
    const pattern = containing(query);
    return q.where((w) => {
      w.whereRaw("username_key like ? escape '\\'", [pattern])
        .orWhereRaw("email_key like ? escape '\\'", [pattern])
        .orWhereRaw("lower(name) like ? escape '\\'", [pattern]);
    });
  };
  const [counted, items] = await Promise.all([
    matching().count({ n: '*' }).first(),
    matching().select(LISTED).orderBy('id', 'asc').limit(page.limit).offset(page.offset),
  ]);
  return { total: Number((counted as { n: number | string } | undefined)?.n ?? 0), items: items as AdminUserRow[] };
}

export async function setUserAdmin(db: Knex, id: number, admin: boolean): Promise<void> {
  await db('users').where({ id }).update({ is_admin: admin });
}

/** Disables an enabled account; false when it was disabled already. */
export async function markUserDisabled(db: Knex, id: number, at: string): Promise<boolean> {
  return (await db('users').where({ id }).whereNull('disabled_at').update({ disabled_at: at })) === 1;
}

/** Enables a disabled account; false when it was enabled already. */
export async function markUserEnabled(db: Knex, id: number): Promise<boolean> {
  return (await db('users').where({ id }).whereNotNull('disabled_at').update({ disabled_at: null })) === 1;
}

/** The site's own audit trail (events of no group and no user's account), newest first, with the total. */
export async function listSiteAudit(db: Knex, page: { limit: number; offset: number }): Promise<{ total: number; items: AuditRow[] }> {
  const [counted, items] = await Promise.all([
    db('audit_events').whereNull('group_id').whereNull('user_id').count({ n: '*' }).first(),
    db('audit_events as a')
      .leftJoin('users as u', 'u.id', 'a.actor_id')
      .whereNull('a.group_id')
      .whereNull('a.user_id')
      .select('a.id', 'a.action', 'a.target', 'a.details', 'a.ip', 'a.created_at', 'u.username as actor_username')
      .orderBy('a.id', 'desc')
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { total: Number((counted as { n: number | string } | undefined)?.n ?? 0), items: items as AuditRow[] };
}
