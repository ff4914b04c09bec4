import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import { clientIdsOfGroup, countAppsOfGroup } from '../db/apps.js';
import { recordAudit } from '../db/audit.js';
import { tellWebhooks } from '../db/webhook-events.js';
import { grantIdsOfGroup } from '../db/grants.js';
import { countMembers, deleteGroupRow, lockGroup } from '../db/groups.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { now } from '../time.js';
import { revokeGrants } from './apps.js';
import { changing } from './change-versions.js';
import { auditActorId } from './context.js';
import { requireGroupAction, type GroupAccess } from './groups.js';

/** What deleting a group takes with it, as the confirmation page names it. */
export interface GroupDeletionSummary {
  applications: number;
  members: number;
}

export async function groupDeletionSummary(db: Knex, access: GroupAccess): Promise<GroupDeletionSummary> {
  requireGroupAction(access, 'delete-group');
  const [applications, members] = await Promise.all([countAppsOfGroup(db, access.group.id), countMembers(db, access.group.id)]);
  return { applications, members };
}

/**
 * The pages ask the person to type the group's path, as GitHub and GitLab do, so a group is
 * never deleted by a stray click or from the wrong tab.
 */
export function requireDeletionConfirmed(access: GroupAccess, typed: string | undefined): void {
  if ((typed ?? '').trim().toLowerCase() !== access.group.path) {
    throw new ValidationError('confirm', `Type the group's path, ${access.group.path}, to confirm`);
  }
}

/**
 * Deletes a group (owners only) with its memberships, applications, their secrets and its audit
 * log, and ends every grant of its applications with each code, access token and refresh token
 * (in SQL or Redis, wherever the provider keeps them). The SQL rows go in one transaction, with
 * the event in the site's audit log (the group's own log goes with the group). The token storage
 * cannot join that transaction (Redis, or the provider's own connection), so grants are ended
 * before it and, for any listed in between, again after it: once the applications are gone no
 * new token can be issued. Returns what went.
 */
export async function deleteGroup(db: Knex, provider: Provider, access: GroupAccess): Promise<GroupDeletionSummary> {
  requireGroupAction(access, 'delete-group');
  const { actor, group } = access;
  await revokeGrants(db, provider, await grantIdsOfGroup(db, group.id));
  // The applications as listed now: one created during the deletion has had no time to be cached
  // anywhere (and a cached entry is dropped within a minute whatever happens).
  const apps = async () => (await clientIdsOfGroup(db, group.id)).map((id) => `app:${id}` as const);
  const { summary, lateGrants } = await changing(db, apps, () => db.transaction(async (trx) => {
    await lockGroup(trx, group.id);
    const summary = { applications: await countAppsOfGroup(trx, group.id), members: await countMembers(trx, group.id) };
    const lateGrants = await grantIdsOfGroup(trx, group.id);
    const at = now();
    const event = { groupId: null, actorId: auditActorId(actor), action: 'group.delete', target: group.path, details: { name: group.name, ...summary }, ip: actor.ip } as const;
    // Told before the group goes, while its webhooks (which go with it) can still be read.
    await tellWebhooks(trx, group.id, 'group.deleted', event, at);
    if (!(await deleteGroupRow(trx, group.id))) throw new NotFoundError('this group no longer exists');
    await recordAudit(trx, event, at);
    return { summary, lateGrants };
  }));
  await revokeGrants(db, provider, lateGrants);
  return summary;
}
