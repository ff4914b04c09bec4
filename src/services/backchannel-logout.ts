import type Provider from 'oidc-provider';

/**
 * OpenID Connect Back-Channel Logout 1.0 for the service's own ways of ending sessions (signing
 * out on the site, Account settings → Sessions, an administrator disabling the account, a password
 * reset, account deletion): each calls `sendLogoutTokens` with the session it ended, which hands
 * the work to the library's own `Client#backchannelLogout`, the same call its logout endpoint
 * makes (see provider/backchannel-logout.ts).
 */

/** The fields of oidc-provider's Session a logout reads: who, and which applications it signed in to. */
export interface EndedSession {
  accountId?: string;
  authorizations?: Record<string, { sid?: string } | undefined>;
}

type Emit = (event: string, ...args: unknown[]) => boolean;

/**
 * Sends a logout token to each application of the ended session that has a back-channel logout
 * URL, in the background: the caller's sign-out never waits for a receiver, and a failure is an
 * event (logged and counted), never thrown. Resolves when every delivery has ended (tests wait on
 * it; callers do not).
 */
export function sendLogoutTokens(provider: Provider, session: EndedSession | undefined): Promise<void> {
  const accountId = session?.accountId;
  const authorizations = session?.authorizations;
  if (!accountId || !authorizations) return Promise.resolve();
  const emit = provider.emit.bind(provider) as Emit;
  const deliveries = Object.entries(authorizations).map(async ([clientId, authorization]) => {
    let client: Awaited<ReturnType<Provider['Client']['find']>>;
    try {
      client = await provider.Client.find(clientId);
    } catch (err) {
      emit('backchannel.error', undefined, err, undefined, accountId, authorization?.sid);
      return;
    }
    // An application deleted since, or one without a back-channel logout URL: nothing to tell.
    const uri = (client as { backchannelLogoutUri?: string } | undefined)?.backchannelLogoutUri;
    if (!client || !uri) return;
    const sid = authorization?.sid;
    try {
      await (client as unknown as { backchannelLogout(sub: string, sid?: string): Promise<void> }).backchannelLogout(accountId, sid);
      emit('backchannel.success', undefined, client, accountId, sid);
    } catch (err) {
      emit('backchannel.error', undefined, err, client, accountId, sid);
    }
  });
  // A listener that throws must not become an unhandled rejection of a sign-out's background work.
  return Promise.all(deliveries).then(() => undefined, () => undefined);
}
