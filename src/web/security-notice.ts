import type { Context } from 'koa';
import { sendSecurityNotice, type NoticeRecipient, type SecurityEvent } from '../services/security-notices.js';
import { seenFrom, type WebDeps } from './context.js';

/**
 * Mails the account's owner a security notice of a change this request made (already committed),
 * saying from which browser and address it came. In the background: the page does not wait on
 * the mail server. In the language the account chose, else the language of the page it came
 * from when the owner made the change, else English (someone else made it, an administrator's
 * reset: that page says nothing of the owner's language).
 */
export function noticeToOwner(deps: WebDeps, ctx: Context, user: NoticeRecipient, event: SecurityEvent, detail?: string): void {
  const from = seenFrom(ctx);
  const byOwner = (ctx.state.user as { id?: number } | undefined)?.id === user.id;
  sendSecurityNotice(deps, user, event, byOwner ? from : { ...from, lang: 'en' }, detail === undefined ? {} : { detail });
}
