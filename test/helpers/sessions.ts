import { toIso } from '../../src/time.js';
import type { RunningIdp } from './app.js';

/**
 * Moves every proof of a signed-in session (named by its cookie's value, the session id) `minutes`
 * into the past, as if that long had gone by since: the sign-in time the provider's session store
 * keeps, and a confirmation recorded since in the session's row of Account settings → Sessions.
 * Nothing waits.
 */
export async function ageSession(idp: RunningIdp, sessionId: string | undefined, minutes: number): Promise<void> {
  const session = sessionId ? await idp.idp.provider.Session.find(sessionId) : undefined;
  if (!session?.loginTs) throw new Error('no signed-in session of that id');
  session.loginTs -= minutes * 60;
  await session.persist();
  const row = await idp.db('user_sessions').where({ uid: session.uid }).first();
  if (row?.confirmed_at) {
    const earlier = new Date(Date.parse(toIso(row.confirmed_at)!) - minutes * 60_000).toISOString();
    await idp.db('user_sessions').where({ uid: session.uid }).update({ confirmed_at: earlier });
  }
}
