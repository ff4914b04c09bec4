import type { Knex } from 'knex';
import type Provider from 'oidc-provider';
import {
  confirmSessionIndex,
  deleteSessionIndex,
  findSessionIndex,
  listSessionIndex,
  pruneSessionIndex,
  sessionConfirmedAt,
  upsertSessionIndex,
  type SessionIndexRow,
} from '../db/sessions.js';
import { NotFoundError } from '../errors.js';
import { sendLogoutTokens } from './backchannel-logout.js';
import type { Language } from '../i18n.js';
import { lastUseRecorder } from '../last-use.js';
import { now, toIso } from '../time.js';
import { TTL } from '../vocabulary.js';

/**
 * Signed-in browser sessions. The sessions themselves are oidc-provider's (its Session model,
 * in the SQL or Redis store every instance shares), made by the site's sign-in and by the
 * authorization flow's alike. The `user_sessions` index lists each user's by uid, with where
 * and when it was last seen, so a user can see them and sign any of them out. A session
 * destroyed in the store is signed out at once on every instance: each request reads it there.
 */
export interface SessionDeps {
  db: Knex;
  provider: Provider;
}

/** The fields of oidc-provider's Session that the index reads. */
export interface SignedInSession {
  uid: string;
  accountId?: string;
  /** Expiry, in seconds since the epoch, once the session was saved. */
  exp?: number;
}

/** Where a request came from, as the Sessions page shows it. */
export interface SeenFrom {
  ip: string | null;
  userAgent: string;
  /** The language of the page the request came from: the mails it causes are written in it. */
  lang?: Language;
}

/** Stored lengths of the index's columns. */
const MAX_IP = 64;
const MAX_USER_AGENT = 512;

/**
 * Records sessions as requests use them: a session is indexed on its first use on an instance
 * (right after sign-in, on the instance that signed it in), then its last activity at most once
 * a minute. The request waits for the write, so a session is listed (and can be signed out
 * everywhere) by the time its sign-in answers; a failed write is reported, not thrown, and
 * retried on the next use.
 */
export function sessionIndex(db: Knex, onError: (err: unknown) => void) {
  const recordUse = lastUseRecorder(onError);
  return {
    async seen(session: SignedInSession, from: SeenFrom): Promise<void> {
      const row = indexRow(session, from);
      if (!row) return;
      let written: Promise<void> | undefined;
      recordUse(session.uid, () => {
        written = upsertSessionIndex(db, row);
        return written;
      });
      await written?.catch(() => {});
    },

    /**
     * The session's person proved who they are again just now (a password, a second factor or a
     * passkey). Written at once, never skipped as a use may be, and a failed write is thrown: a
     * proof that was not recorded must not be taken as one.
     */
    async confirmed(session: SignedInSession, from: SeenFrom): Promise<void> {
      const row = indexRow(session, from);
      if (row) await confirmSessionIndex(db, row);
    },

    /** When the session's person last proved who they are since signing in (undefined: not since). */
    async confirmedAt(session: SignedInSession): Promise<Date | undefined> {
      const userId = Number(session.accountId);
      if (!session.accountId || !Number.isSafeInteger(userId)) return undefined;
      const at = await sessionConfirmedAt(db, userId, session.uid);
      return at ? new Date(toIso(at)!) : undefined;
    },

    /** A session its own browser signed out of. */
    forget(uid: string): Promise<void> {
      return deleteSessionIndex(db, [uid]);
    },
  };
}

export type SessionIndex = ReturnType<typeof sessionIndex>;

/** The index row of a signed-in session seen now from `from`; undefined for a session signed in as no one. */
function indexRow(session: SignedInSession, from: SeenFrom) {
  const userId = Number(session.accountId);
  if (!session.accountId || !Number.isSafeInteger(userId)) return undefined;
  return {
    uid: session.uid,
    userId,
    ip: from.ip?.slice(0, MAX_IP) || null,
    userAgent: from.userAgent.slice(0, MAX_USER_AGENT),
    at: now(),
    expiresAt: new Date(session.exp ? session.exp * 1000 : Date.now() + TTL.Session * 1000).toISOString(),
  };
}

/** The store's one extra method (see adapters/common.ts): removing a session by its uid. */
interface SessionStore {
  destroyByUid(uid: string): Promise<void>;
}

function sessionStore(provider: Provider): SessionStore {
  const adapter = provider.Session.adapter as unknown as Partial<SessionStore>;
  if (typeof adapter.destroyByUid !== 'function') throw new Error('the session store cannot remove a session by its uid');
  return adapter as SessionStore;
}

/** The session the store holds under this uid, when it is signed in as this user. */
async function liveSession(provider: Provider, userId: number, uid: string) {
  const session = await provider.Session.findByUid(uid);
  return session?.accountId === String(userId) ? session : undefined;
}

/** Whether the store still holds this session, signed in as this user. */
async function isLive(provider: Provider, userId: number, uid: string): Promise<boolean> {
  return (await liveSession(provider, userId, uid)) !== undefined;
}

/**
 * Removes sessions from the store (those still signed in as this user) and then their rows; then
 * tells the applications each one signed in to, in the background (back-channel logout).
 */
async function destroySessions(deps: SessionDeps, userId: number, uids: string[]): Promise<void> {
  const store = sessionStore(deps.provider);
  const ended = await Promise.all(uids.map(async (uid) => {
    const session = await liveSession(deps.provider, userId, uid);
    if (!session) return undefined;
    await store.destroyByUid(uid);
    return session;
  }));
  await deleteSessionIndex(deps.db, uids);
  for (const session of ended) if (session) void sendLogoutTokens(deps.provider, session);
}

/**
 * A user's signed-in sessions, the most recently active first. Rows of sessions the store no
 * longer holds (expired, or signed out through the authorization server's logout) are dropped
 * on the way.
 */
export async function listSessions(deps: SessionDeps, userId: number): Promise<SessionIndexRow[]> {
  const rows = await listSessionIndex(deps.db, userId);
  const live = await Promise.all(rows.map((row) => isLive(deps.provider, userId, row.uid)));
  await deleteSessionIndex(deps.db, rows.filter((_, i) => !live[i]).map((row) => row.uid));
  return rows.filter((_, i) => live[i]);
}

/** Signs out one of the user's sessions; 404 when the user has no session of that uid. */
export async function signOutSession(deps: SessionDeps, userId: number, uid: string): Promise<void> {
  if (!(await findSessionIndex(deps.db, userId, uid))) throw new NotFoundError('no such session');
  await destroySessions(deps, userId, [uid]);
}

/**
 * Signs out every session of the user, but the one whose uid is `except` (the browser that
 * asked, when it stays signed in).
 */
export async function signOutEverywhere(deps: SessionDeps, userId: number, options: { except?: string } = {}): Promise<void> {
  const uids = (await listSessionIndex(deps.db, userId)).map((row) => row.uid).filter((uid) => uid !== options.except);
  await destroySessions(deps, userId, uids);
}

/**
 * A row's expiry may lag its session's by up to a minute (a use that extended the session came
 * within a minute of the last one recorded), so rows are dropped only well past it.
 */
const PRUNE_GRACE_MS = 10 * 60_000;

/** Drops the rows of sessions past their expiry (the store has forgotten them already). */
export function pruneExpiredSessions(db: Knex): Promise<number> {
  return pruneSessionIndex(db, new Date(Date.now() - PRUNE_GRACE_MS).toISOString());
}
