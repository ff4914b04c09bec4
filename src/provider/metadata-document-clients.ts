import type { Context, Next } from 'koa';
import { inWords, RetryLaterError } from '../errors.js';
import { ensureMetadataClient, isMetadataDocumentUrl, MetadataDocumentError, type MetadataDocumentDeps } from '../services/client-registration/metadata-documents.js';
import { parsedForm } from './forms.js';

/**
 * Before the library looks a client up: a client_id that is a Client ID Metadata Document's URL
 * (services/client-registration/metadata-documents.ts) is fetched and kept as an application
 * first, or fetched again when its time is up, so the library finds it like any other. On
 * authorize (a page) a document that cannot be used is an error page saying why: the redirect
 * URI is not known to be the client's, so nothing is sent to it. On the other endpoints it is
 * `invalid_client`, in JSON.
 */
export function metadataDocumentClients(deps: MetadataDocumentDeps, paths: { authorization: string; others: readonly string[] }, refusePage: (ctx: Context, status: number, message: string) => Promise<void>) {
  // One fetch at a time per client on this instance: a flood of flows naming one client whose
  // document is due shares one fetch, so the service never fetches a site's document in parallel.
  const inFlight = new Map<string, Promise<void>>();
  const ensure = (clientId: string, ip: string): Promise<void> => {
    let pending = inFlight.get(clientId);
    if (!pending) {
      pending = ensureMetadataClient(deps, clientId, ip).finally(() => inFlight.delete(clientId));
      inFlight.set(clientId, pending);
    }
    return pending;
  };
  return async function resolveMetadataDocumentClient(ctx: Context, next: Next): Promise<void> {
    const page = ctx.path === paths.authorization && ctx.method === 'GET';
    if (!page && !(ctx.method === 'POST' && paths.others.includes(ctx.path))) return next();
    const raw = page ? ctx.query.client_id : parsedForm(ctx)?.client_id;
    const clientId = typeof raw === 'string' ? raw : undefined;
    if (!clientId || !isMetadataDocumentUrl(clientId, deps.allowPrivate)) return next();
    try {
      await ensure(clientId, ctx.ip);
    } catch (err) {
      if (!(err instanceof MetadataDocumentError) && !(err instanceof RetryLaterError)) throw err;
      const status = err instanceof RetryLaterError ? 429 : 400;
      const message = err instanceof RetryLaterError
        ? `Too many new clients were registered from your network. Try again ${inWords(err.retryAfterS)}.`
        : `The client's metadata document at ${clientId} cannot be used: ${err.message}.`;
      if (err instanceof RetryLaterError) ctx.set('Retry-After', String(err.retryAfterS));
      ctx.set('Cache-Control', 'no-store');
      if (page) return refusePage(ctx, status, message);
      ctx.status = status;
      ctx.body = { error: status === 429 ? 'rate_limited' : 'invalid_client', error_description: message };
      return;
    }
    return next();
  };
}
