import type { AuditAction, AuditRow } from '../db/audit.js';
import { toIso } from '../time.js';

/**
 * Audit rows as the audit logs show them: the action in words ("Client secret revoked"; the code
 * stays in the row for machines), and its details as short phrases: an edit as
 * "field: before → after" for each changed field, a secret by its last four characters. Rows
 * written before edits recorded their changes (the fields given, a secret's id) still render.
 */
const ACTION_NAMES: Record<AuditAction, string> = {
  'group.create': 'Group created',
  'group.update': 'Group settings changed',
  'group.delete': 'Group deleted',
  'member.add': 'Member added',
  'member.role': 'Role changed',
  'member.remove': 'Member removed',
  'member.leave': 'Left the group',
  'app.create': 'Application created',
  'app.update': 'Application updated',
  'app.delete': 'Application deleted',
  'app.secret.create': 'Client secret generated',
  'app.secret.revoke': 'Client secret revoked',
  'app.tokens.revoke': 'Every user’s tokens revoked',
  'app.secret.report.revoke': 'Client secret revoked: reported public',
  'app.token.report.revoke': 'OAuth token revoked: reported public',
  'token.report.revoke': 'Personal access token revoked: reported public',
  'user.admin.grant': 'Made a site administrator',
  'user.admin.revoke': 'No longer a site administrator',
  'user.disable': 'Account disabled',
  'user.enable': 'Account enabled',
  'user.password_reset.send': 'Password reset link sent',
  'sign-in_provider.add': 'Sign-in provider added',
  'sign-in_provider.update': 'Sign-in provider changed',
  'sign-in_provider.disable': 'Sign-in provider disabled',
  'sign-in_provider.enable': 'Sign-in provider enabled',
  'sign-in_provider.remove': 'Sign-in provider removed',
  'user.identity.link': 'Sign-in provider linked',
  'user.identity.unlink': 'Sign-in provider unlinked',
  'user.password.set': 'Password set',
  'user.two_factor.enable': 'Two-factor authentication turned on',
  'user.two_factor.disable': 'Two-factor authentication turned off',
  'user.two_factor.recovery_codes': 'New recovery codes generated',
  'user.two_factor.reset': 'Two-factor authentication reset by an administrator',
  'user.passkey.add': 'Passkey added',
  'user.passkey.remove': 'Passkey removed',
  'user.recovery.clear': 'Passkeys, two-factor and tokens cleared by a password reset',
};

/** An action in words; a code no longer written (an older row's) reads from its code ("app.tokens.purge": "App tokens purge"). */
export function actionName(code: string): string {
  const known = Object.hasOwn(ACTION_NAMES, code) ? ACTION_NAMES[code as AuditAction] : undefined;
  if (known) return known;
  const words = code.replace(/[._]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function shown(value: unknown): string {
  if (Array.isArray(value)) return value.length ? value.map(shown).join(', ') : '(none)';
  if (value === '' || value === null || value === undefined) return '(empty)';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function isChange(value: unknown): value is { from: unknown; to: unknown } {
  return !!value && typeof value === 'object' && 'from' in value && 'to' in value;
}

/** The details of a row as phrases; `labelOf` names a changed field as the pages do. */
export function auditDetails(details: Record<string, unknown>, labelOf: (field: string) => string = (field) => field): string[] {
  const phrases: string[] = [];
  for (const [key, value] of Object.entries(details)) {
    if (key === 'changes' && value && typeof value === 'object') {
      const changes = Object.entries(value as Record<string, unknown>).filter(([, change]) => isChange(change));
      if (!changes.length) phrases.push('nothing changed');
      for (const [field, change] of changes) {
        const { from, to } = change as { from: unknown; to: unknown };
        phrases.push(`${labelOf(field)}: ${shown(from)} → ${shown(to)}`);
      }
    } else if (key === 'authorizationsEnded') {
      // A new callback URL ends every grant of the application (services/apps.ts).
      phrases.push(`every user's authorization ended, so each consents again (${shown(value)} ${value === 1 ? 'user' : 'users'})`);
    } else if (key === 'lastFour') {
      phrases.push(`secret …${shown(value)}`);
    } else if (key === 'secretId') {
      phrases.push(`secret #${shown(value)}`);
    } else if (key === 'from' && 'to' in details) {
      phrases.push(`role: ${shown(value)} → ${shown(details.to)}`);
    } else if (key === 'to' && 'from' in details) {
      // Shown with "from" above.
    } else if (key === 'from') {
      phrases.push(`role was ${shown(value)}`);
    } else {
      phrases.push(`${key}: ${shown(value)}`);
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

/** A row as an audit log shows it, with the actor's name as the log decides it. */
export function presentAuditEvent(row: AuditRow, actor: string, details: string[]) {
  return {
    id: row.id,
    at: toIso(row.created_at) ?? '',
    actor,
    action: actionName(row.action),
    code: row.action,
    target: row.target,
    details: details.join(', '),
    ip: row.ip ?? '',
  };
}
