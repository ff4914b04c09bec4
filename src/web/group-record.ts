import type { Context, Next } from 'koa';
import { NotFoundError } from '../errors.js';
import { accessOf } from '../http/load-group.js';
import type { Translate } from '../i18n.js';
import { parseId } from '../ids.js';
import type { GroupAccess } from '../services/groups.js';

/**
 * What a settings section of a group (its webhooks, its resources) does alike for the record a
 * URL names: loads it after the group's own loader, and reads the notice a redirect carried.
 */

/**
 * A step after the group's loader: the record of the URL's `:id`, which must belong to the URL's
 * group (else 404, whoever asks), kept as `ctx.state[key]`.
 */
export function groupRecordLoader<T>(key: string, find: (access: GroupAccess, id: number) => Promise<T>, missing: string) {
  return async function loadGroupRecord(ctx: Context, next: Next): Promise<void> {
    const id = parseId(ctx.params.id);
    try {
      if (id === undefined) throw new NotFoundError();
      ctx.state[key] = await find(accessOf(ctx), id);
    } catch (err) {
      throw err instanceof NotFoundError ? new NotFoundError(missing) : err;
    }
    await next();
  };
}

/** The notice `?notice=` names, in words, when it is one of the section's; null for none or another. */
export function pageNotice(ctx: Context, t: Translate, notices: ReadonlySet<string>, namespace: string): string | null {
  const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
  return notices.has(key) ? t(`${namespace}:notices.${key}`) : null;
}
