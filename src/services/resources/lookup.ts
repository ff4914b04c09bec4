import type { Knex } from 'knex';
import { findResourceByIdentifier, type Resource, type ResourceScope } from '../../db/resources.js';
import { splitScopes } from '../../vocabulary.js';
import { resourceOf } from './manage.js';
import { MAX_IDENTIFIER_LENGTH } from './rules.js';

/** A resource as the consent page names it: who runs it, where it is, and what the application asks of it. */
export interface ResourceAskedFor {
  name: string;
  identifier: string;
  groupName: string;
  scopes: ResourceScope[];
}

/**
 * A registered resource by its identifier as a client or its server writes it (https://host and
 * https://host/ alike), with its group's name. Anyone can send one (authorize, the token endpoint,
 * the published metadata): a value longer than any identifier is not looked up.
 */
export async function registeredResource(db: Knex, indicator: string): Promise<(Resource & { groupName: string }) | undefined> {
  if (indicator.length > MAX_IDENTIFIER_LENGTH + 1) return undefined;
  const href = URL.parse(indicator)?.href;
  const row = href ? await findResourceByIdentifier(db, href) : undefined;
  return row ? { ...resourceOf(row), groupName: row.group_name } : undefined;
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
    const resource = await registeredResource(db, indicator);
    if (!resource) continue;
    const scopes = resource.scopes.filter((s) => requested.has(s.name));
    found.push({ name: resource.name, identifier: resource.identifier, groupName: resource.groupName, scopes });
  }
  return found;
}
