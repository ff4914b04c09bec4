import type { Context } from 'koa';
import { sendSecurityNotice, type NoticeRecipient, type SecurityEvent } from '../services/security-notices.js';
import { seenFrom, type WebDeps } from './context.js';

/**
 * Mails the account's owner a security notice of a change this request made (already committed),
 * saying from which browser and address it came, in the language of the page it came from. In
 * the background: the page does not wait on the mail server.
 */
export function noticeToOwner(deps: WebDeps, ctx: Context, user: NoticeRecipient, event: SecurityEvent, detail?: string): void {
  sendSecurityNotice(deps, user, event, seenFrom(ctx), detail === undefined ? {} : { detail });
}
