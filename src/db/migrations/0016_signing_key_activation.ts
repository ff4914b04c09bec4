import type { Knex } from 'knex';

/**
 * `keys.active_from`: the moment from which a signing key may sign. A key added by
 * `idp keys rotate` is published at once but signs only from then, once relying parties' cached
 * copies of the JWKS have had time to expire. Every key stored before this migration is already
 * in use, so it is active from its creation (the newest of them keeps signing, as before).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.timestamp('active_from', { useTz: true }).nullable();
  });
  await knex('keys').whereNull('active_from').update({ active_from: knex.ref('created_at') });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('keys', (t) => {
    t.dropColumn('active_from');
  });
}
