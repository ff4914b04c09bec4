import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { Knex } from 'knex';
import { z } from 'zod';
import { recordAudit } from '../../db/audit.js';
import { findMetadataClient, insertRegisteredClient, refreshMetadataClient } from '../../db/client-registration.js';
import { isUniqueViolation } from '../../db/knex.js';
import { MAX_CLIENT_ID_LENGTH } from '../../ids.js';
import { now } from '../../time.js';
import { changing } from '../change-versions.js';
import type { Limits } from '../limits.js';
import { guardedLookup, hostOf, isPublicAddress } from '../webhooks/targets.js';
import { registrationGroup } from './settings.js';
import { redirectUriProblem } from './redirect-uris.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document), the way MCP
 * clients register: the client's `client_id` is an https URL, and the document at that URL
 * describes the client (its name and redirect URIs). When an administrator accepts them (Admin →
 * Client registration), a flow that names such a client_id has the document fetched, checked and
 * kept as a public application of the chosen group, fetched again when its HTTP caching says so.
 *
 * The URL is the client's and anyone can write one, so the fetch is guarded as webhooks are: only
 * public addresses (checked again at connection time, so DNS rebinding is refused too), 5 seconds,
 * 64 KiB, no redirects followed, and a limit of new clients per address.
 */
export const FETCH_TIMEOUT_MS = 5000;
export const MAX_DOCUMENT_BYTES = 64 * 1024;
/** A document is kept at least this long, whatever its headers say, so a flow's steps do not each fetch it. */
const MIN_KEEP_S = 60;
/** …and at most a day, so a client's changes reach the service. */
const MAX_KEEP_S = 24 * 3600;
/** Without caching headers: an hour. */
const DEFAULT_KEEP_S = 3600;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export class MetadataDocumentError extends Error {}

export interface MetadataDocumentDeps {
  db: Knex;
  limits: Pick<Limits, 'takeClientRegistration'>;
  /** Private and loopback addresses may be fetched, and http:// loopback client ids are accepted (development and tests). */
  allowPrivate: boolean;
  /** CA certificates (PEM) trusted beside the system's. */
  ca?: string | undefined;
}

/**
 * Whether a client_id names a metadata document: an https URL with a path, no fragment, no user
 * name or password, and not too long. Such a string is never an application's own client id.
 */
export function isMetadataDocumentUrl(clientId: string, allowPrivate: boolean): boolean {
  if (clientId.length > MAX_CLIENT_ID_LENGTH || !clientId.includes('://')) return false;
  const url = URL.parse(clientId);
  if (!url || url.hash || url.username || url.password || url.pathname === '/' || url.href !== clientId) return false;
  if (url.protocol === 'https:') return true;
  return allowPrivate && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

const documentSchema = z.looseObject({
  client_id: z.string({ error: 'client_id is missing' }),
  client_name: z.string({ error: 'client_name must be a string' }).trim().min(1).max(100, 'client_name must be at most 100 characters').optional(),
  client_uri: z.string({ error: 'client_uri must be a string' }).max(2000).optional(),
  redirect_uris: z.array(z.string({ error: 'redirect_uris must be strings' }), { error: 'redirect_uris is missing' }).min(1, 'redirect_uris is empty').max(10, 'redirect_uris has more than 10 URIs'),
  token_endpoint_auth_method: z.literal('none', { error: 'token_endpoint_auth_method must be none: only public clients register with a metadata document here' }).optional(),
  grant_types: z.array(z.enum(['authorization_code', 'refresh_token'], { error: 'grant_types may hold only authorization_code and refresh_token' })).optional(),
  response_types: z.array(z.literal('code', { error: 'response_types may hold only code' })).optional(),
  client_secret: z.undefined({ error: 'a metadata document must not hold a client_secret' }).optional(),
});

/** What the service keeps of a valid document. */
interface ClientDescription {
  name: string;
  homepageUrl: string;
  redirectUris: string[];
}

/** Checks a fetched document against the URL it came from; throws MetadataDocumentError saying what is wrong. */
export function describeClient(url: string, body: unknown): ClientDescription {
  const parsed = documentSchema.safeParse(body);
  if (!parsed.success) throw new MetadataDocumentError(`the document is not valid: ${parsed.error.issues[0]?.message ?? 'not a JSON object'}`);
  const doc = parsed.data;
  if (doc.client_id !== url) throw new MetadataDocumentError('the document\'s client_id is not the URL it was fetched from');
  for (const uri of doc.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new MetadataDocumentError(`redirect_uris: ${uri.slice(0, 100)} ${problem}`);
  }
  const home = doc.client_uri && URL.parse(doc.client_uri)?.protocol === 'https:' ? doc.client_uri : new URL(url).origin;
  return { name: doc.client_name ?? new URL(url).host, homepageUrl: home, redirectUris: [...new Set(doc.redirect_uris)] };
}

/** How long a response may be kept, from its Cache-Control, within MIN_KEEP_S..MAX_KEEP_S. */
export function keepSeconds(cacheControl: string | undefined): number {
  if (!cacheControl) return DEFAULT_KEEP_S;
  if (/\b(no-store|no-cache)\b/i.test(cacheControl)) return MIN_KEEP_S;
  const maxAge = /\bmax-age\s*=\s*"?(\d+)/i.exec(cacheControl);
  if (!maxAge) return DEFAULT_KEEP_S;
  return Math.min(MAX_KEEP_S, Math.max(MIN_KEEP_S, Number(maxAge[1])));
}

/** GETs the document with the guards above; the parsed JSON and how long it may be kept. */
export async function fetchMetadataDocument(url: string, allowPrivate: boolean, ca?: string): Promise<{ body: unknown; keepS: number }> {
  const host = hostOf(url);
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) throw new MetadataDocumentError(`${host} is not a public address`);
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const trust = ca ? { ca: [...rootCertificates, ca] } : {};
    const req = request(url, { method: 'GET', headers: { accept: 'application/json' }, signal, lookup: guardedLookup(allowPrivate), agent: false, ...trust }, resolve);
    req.on('error', (err: NodeJS.ErrnoException) =>
      reject(new MetadataDocumentError(err.code === 'ETARGETREFUSED' ? err.message : signal.aborted ? `no answer within ${FETCH_TIMEOUT_MS / 1000} seconds` : `could not be fetched (${err.code ?? err.message})`)),
    );
    req.end();
  });
  try {
    if (res.statusCode !== 200) {
      const moved = res.statusCode !== undefined && res.statusCode >= 300 && res.statusCode < 400;
      throw new MetadataDocumentError(moved ? `it answered ${res.statusCode}, a redirect, which is not followed` : `it answered ${res.statusCode} instead of 200`);
    }
    if (Number(res.headers['content-length'] ?? 0) > MAX_DOCUMENT_BYTES) throw new MetadataDocumentError(`it is larger than ${MAX_DOCUMENT_BYTES / 1024} KiB`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_DOCUMENT_BYTES) throw new MetadataDocumentError(`it is larger than ${MAX_DOCUMENT_BYTES / 1024} KiB`);
      chunks.push(chunk);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new MetadataDocumentError('it is not JSON');
    }
    return { body, keepS: keepSeconds(res.headers['cache-control']) };
  } catch (err) {
    if (err instanceof MetadataDocumentError) throw err;
    throw new MetadataDocumentError(signal.aborted ? `no answer within ${FETCH_TIMEOUT_MS / 1000} seconds` : 'the answer broke off');
  } finally {
    res.destroy();
  }
}

/**
 * Makes sure the client a metadata-document client_id names is a current application: fetched
 * and added when new (while an administrator accepts such clients), fetched again once its time
 * is up. A client that was added before registration was turned off keeps working, with what its
 * document last said, until its group's owners delete it. Throws MetadataDocumentError (the flow
 * shows why) or the limit's 429.
 */
export async function ensureMetadataClient(deps: MetadataDocumentDeps, clientId: string, ip: string): Promise<void> {
  const row = await findMetadataClient(deps.db, clientId);
  if (row && row.registered_by !== 'metadata_document') return;
  if (row?.metadata_expires_at && new Date(row.metadata_expires_at).getTime() > Date.now()) return;
  const group = await registrationGroup(deps.db, 'metadataDocuments');
  if (!group) {
    if (row) return;
    throw new MetadataDocumentError('this server does not accept clients that register with a metadata document');
  }
  // A new client counts against the address that brought it; a known one's refresh does not.
  if (!row) await deps.limits.takeClientRegistration(ip);
  const { body, keepS } = await fetchMetadataDocument(clientId, deps.allowPrivate, deps.ca);
  const description = describeClient(clientId, body);
  const at = now();
  const fields = { ...description, metadataExpiresAt: new Date(Date.now() + keepS * 1000).toISOString() };
  if (row) {
    await changing(deps.db, [`app:${clientId}`], () => refreshMetadataClient(deps.db, clientId, fields, at));
    return;
  }
  try {
    const from = new URL(clientId).host;
    await deps.db.transaction(async (trx) => {
      await insertRegisteredClient(trx, { clientId, groupId: group.id, ...fields, registeredBy: 'metadata_document', registeredFrom: from }, at);
      // In the group's audit log, and told to its webhooks (application.created), with no person as the actor.
      await recordAudit(trx, { groupId: group.id, actorId: null, action: 'app.create', target: clientId, details: { name: fields.name, type: 'public', registeredBy: 'metadata_document' }, ip }, at);
    });
  } catch (err) {
    // Two flows of one new client at once: the other added it.
    if (!isUniqueViolation(err)) throw err;
  }
}
