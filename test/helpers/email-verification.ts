import type { Knex } from 'knex';
import { markEmailVerified } from '../../src/db/users.js';
import { changing } from '../../src/services/change-versions.js';
import { now } from '../../src/time.js';

/**
 * Sets whether a user's address is verified, as following the mailed link (or changing the
 * address) does, including the account's version in Redis, so every cached copy reads it at once.
 * Tests that depend on it say which they need rather than relying on what the factories make.
 */
export async function setEmailVerified(db: Knex, user: { id: number; email: string }, verified: boolean): Promise<void> {
  await changing(db, [`user:${user.id}`], async () => {
    if (verified) await markEmailVerified(db, user.id, user.email, now());
    // No page makes a verified address unverified any more (a new one is used once proven): the row is written.
    else await db('users').where({ id: user.id }).update({ email_verified_at: null });
  });
}
