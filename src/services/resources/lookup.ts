import type { Knex } from 'knex';
import { findResourceByIdentifier, type ResourceRow, type ResourceScope } from '../../db/resources.js';
import { splitScopes } from '../../vocabulary.js';

/** A resource as the consent page names it: who runs it, where it is, and what the application asks of it. */
export interface ResourceAskedFor {
  name: string;
  identifier: string;
  groupName: string;
  scopes: ResourceScope[];
}

/** A registered resource by its identifier as a client or its server writes it (https://host and https://host/ alike). */
export async function registeredResource(db: Knex, indicator: string): Promise<(ResourceRow & { group_name: string }) | undefined> {
  const href = URL.parse(indicator)?.href;
  return href ? findResourceByIdentifier(db, href) : undefined;
}

/**
 * The resources an authorization request names (`resource`, once or repeated), each with the
 * scopes of the request that it defines, in the resource's own words. The library has already
 * refused a request naming an unknown resource (invalid_target), so each is found.
 */
export async function resourcesAskedFor(db: Knex, resource: unknown, scope: string): Promise<ResourceAskedFor[]> {
  const indicators = (Array.isArray(resource) ? resource : [resource]).filter((r): r is string => typeof r === 'string');
  const requested = new Set(splitScopes(scope));
  const found: ResourceAskedFor[] = [];
  for (const indicator of new Set(indicators)) {
    const row = await registeredResource(db, indicator);
    if (!row) continue;
    const scopes = (JSON.parse(row.scopes) as ResourceScope[]).filter((s) => requested.has(s.name));
    found.push({ name: row.name, identifier: row.identifier, groupName: row.group_name, scopes });
  }
  return found;
}
