import type { AuditAction, AuditRow } from '../db/audit.js';
import { RESOURCES, translator, type Language, type Translate } from '../i18n.js';
import { z } from 'zod';
import { toIso } from '../time.js';
import { timestamp } from './json.js';
import type ENGLISH_AUDIT_WORDS from '../../locales/en/audit.json';

/**
 * Audit rows as the audit logs show them, in the page's language: the action in words ("Client
 * secret revoked"; the code stays in the row for machines), and its details as short phrases: an
 * edit as "field: before → after" for each changed field, a secret by its last four characters.
 * Rows written before edits recorded their changes (the fields given, a secret's id) still render.
 * The words are in `locales/<language>/audit.json`, keyed by the action's code.
 */

/**
 * Every action has its words: an action added to AUDIT_ACTIONS without a key in the English
 * resource fails the typecheck here (test/unit/audit-words.test.ts checks every language).
 */
const EVERY_ACTION_HAS_WORDS: Record<AuditAction, string> = {} as typeof ENGLISH_AUDIT_WORDS;
void EVERY_ACTION_HAS_WORDS;

const ENGLISH_WORDS = RESOURCES.en.audit as Record<string, unknown>;

/** An action in words; a code no longer written (an older row's) reads from its code ("app.tokens.purge": "App tokens purge"). */
export function actionName(code: string, lang: Language = 'en'): string {
  if (Object.hasOwn(ENGLISH_WORDS, code) && typeof ENGLISH_WORDS[code] === 'string' && !code.startsWith('_')) return translator(lang)(`audit:${code}`);
  const words = code.replace(/[._]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function shown(value: unknown, t: Translate): string {
  if (Array.isArray(value)) return value.length ? value.map((v) => shown(v, t)).join(t('audit:_details.separator')) : t('audit:_details.none');
  if (value === '' || value === null || value === undefined) return t('audit:_details.empty');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function isChange(value: unknown): value is { from: unknown; to: unknown } {
  return !!value && typeof value === 'object' && 'from' in value && 'to' in value;
}

/** The details of a row as phrases in `lang`; `labelOf` names a changed field as the pages do. */
export function auditDetails(details: Record<string, unknown>, labelOf: (field: string) => string = (field) => field, lang: Language = 'en'): string[] {
  const t = translator(lang);
  const phrases: string[] = [];
  for (const [key, value] of Object.entries(details)) {
    if (key === 'changes' && value && typeof value === 'object') {
      const changes = Object.entries(value as Record<string, unknown>).filter(([, change]) => isChange(change));
      if (!changes.length) phrases.push(t('audit:_details.nothingChanged'));
      for (const [field, change] of changes) {
        const { from, to } = change as { from: unknown; to: unknown };
        phrases.push(t('audit:_details.change', { field: labelOf(field), from: shown(from, t), to: shown(to, t) }));
      }
    } else if (key === 'authorizationsEnded') {
      // A new callback URL ends every grant of the application (services/apps.ts).
      phrases.push(typeof value === 'number' ? t('audit:_details.authorizationsEnded', { count: value }) : t('audit:_details.field', { field: key, value: shown(value, t) }));
    } else if (key === 'lastFour') {
      phrases.push(t('audit:_details.lastFour', { lastFour: shown(value, t) }));
    } else if (key === 'secretId') {
      phrases.push(t('audit:_details.secretId', { id: shown(value, t) }));
    } else if (key === 'from' && 'to' in details) {
      phrases.push(t('audit:_details.roleChange', { from: shown(value, t), to: shown(details.to, t) }));
    } else if (key === 'to' && 'from' in details) {
      // Shown with "from" above.
    } else if (key === 'from') {
      phrases.push(t('audit:_details.roleWas', { role: shown(value, t) }));
    } else {
      phrases.push(t('audit:_details.field', { field: key, value: shown(value, t) }));
    }
  }
  return phrases;
}

/** The details column as an object; a malformed one is shown as empty rather than failing the page. */
export function auditDetailsOf(row: Pick<AuditRow, 'details'>): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(row.details || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A row as an audit log in `lang` shows it, with the actor's name as the log decides it, and its details (`auditDetails` in the same language). */
export function presentAuditEvent(row: AuditRow, actor: string, details: string[], lang: Language = 'en') {
  return {
    id: row.id,
    at: toIso(row.created_at) ?? '',
    actor,
    action: actionName(row.action, lang),
    code: row.action,
    target: row.target,
    details: details.join(translator(lang)('audit:_details.separator')),
    ip: row.ip ?? '',
  };
}

/**
 * An event as the API and the downloads give it, the same for a group's log and the site's: the
 * actor's username (null: no person, such as the CLI, a report of leaked credentials or an
 * account deleted since), the action's code and its English words, and the details as recorded.
 */
export const auditEventJson = z.object({
  id: z.int().min(1),
  time: timestamp,
  actor: z.string().nullable().describe('The username of who acted; null when no person did (the command line, a report of leaked credentials) or the account was deleted since'),
  actorApplication: z.string().nullable().describe('The client ID of the application that acted as itself (client credentials grant), when it was one; actor is then null'),
  action: z.string().describe('The action\'s code, such as member.add'),
  actionText: z.string().describe('The action in English words, such as "Member added"'),
  target: z.string().describe('What the action was done to: a username, an application\'s name, a group'),
  details: z.record(z.string(), z.unknown()).describe('The details as recorded, such as {"changes": {"name": {"from": "a", "to": "b"}}} or {"via": "cli"}'),
  ip: z.string().nullable().describe('The client address of the request, when there was one'),
});
export type ExportedAuditEvent = z.infer<typeof auditEventJson>;

export function exportedAuditEvent(row: AuditRow): ExportedAuditEvent {
  return {
    id: Number(row.id),
    time: toIso(row.created_at) ?? '',
    actor: row.actor_username ?? null,
    actorApplication: row.actor_client_id ?? null,
    action: row.action,
    actionText: actionName(row.action, 'en'),
    target: row.target,
    details: auditDetailsOf(row),
    ip: row.ip ?? null,
  };
}
