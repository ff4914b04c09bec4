import Bowser from 'bowser';
import type { SessionIndexRow } from '../db/sessions.js';
import { toIso } from '../time.js';

/** A user agent in a few words: "Chrome on Linux", "Firefox", or "Unknown browser". */
export function describeUserAgent(userAgent: string): string {
  if (!userAgent.trim()) return 'Unknown browser';
  const { browser, os } = Bowser.parse(userAgent);
  const name = browser.name || 'Unknown browser';
  return os.name ? `${name} on ${os.name}` : name;
}

/** A signed-in session as Account settings → Sessions shows it. */
export function presentSession(row: SessionIndexRow, currentUid: string | undefined) {
  return {
    uid: row.uid,
    browser: describeUserAgent(row.user_agent),
    userAgent: row.user_agent,
    ip: row.ip ?? '',
    signedInAt: toIso(row.created_at),
    lastSeenAt: toIso(row.last_seen_at),
    current: row.uid === currentUid,
  };
}
