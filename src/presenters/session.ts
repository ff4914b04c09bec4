import Bowser from 'bowser';
import type { SessionIndexRow } from '../db/sessions.js';
import { translator, type Language } from '../i18n.js';
import { toIso } from '../time.js';

/** A user agent in a few words of `lang`: "Chrome on Linux", "Firefox", or "Unknown browser". */
export function describeUserAgent(userAgent: string, lang: Language = 'en'): string {
  const t = translator(lang);
  if (!userAgent.trim()) return t('common:userAgent.unknown');
  const { browser, os } = Bowser.parse(userAgent);
  const name = browser.name || t('common:userAgent.unknown');
  return os.name ? t('common:userAgent.on', { browser: name, os: os.name }) : name;
}

/** A signed-in session as Account settings → Sessions shows it. */
export function presentSession(row: SessionIndexRow, currentUid: string | undefined, lang: Language = 'en') {
  return {
    uid: row.uid,
    browser: describeUserAgent(row.user_agent, lang),
    userAgent: row.user_agent,
    ip: row.ip ?? '',
    signedInAt: toIso(row.created_at),
    lastSeenAt: toIso(row.last_seen_at),
    current: row.uid === currentUid,
  };
}
