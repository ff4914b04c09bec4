import { z } from 'zod';

/** The largest id a table's integer column holds (PostgreSQL `integer`). */
export const MAX_ID = 2_147_483_647;

/** The id of a record (a user, a group, a client secret): an integer 1..MAX_ID. */
export const recordId = z.int().min(1).max(MAX_ID);

/**
 * A record id as a URL or a form writes it: decimal digits without a leading zero. Checked before
 * any query, so an over-range number is the caller's mistake (a 400 or 404), never a database error.
 */
export const recordIdText = z.codec(z.string().regex(/^[1-9][0-9]*$/), recordId, { decode: Number, encode: String });

/**
 * The id of a record of a table that may outgrow `integer` (a webhook delivery, a `bigint`): up to
 * the largest integer a JSON number holds exactly.
 */
export const MAX_BIG_ID = Number.MAX_SAFE_INTEGER;
export const bigRecordId = z.int().min(1).max(MAX_BIG_ID);
export const bigRecordIdText = z.codec(z.string().regex(/^[1-9][0-9]*$/), bigRecordId, { decode: Number, encode: String });

/**
 * The longest client id: an application's is 20 hex digits; a client that registered with a
 * metadata document has that document's https URL as its id.
 */
export const MAX_CLIENT_ID_LENGTH = 255;

/** A client id fits its column; a longer one names no application, and is never looked up. */
export const clientId = z.string().max(MAX_CLIENT_ID_LENGTH);

/** A record id from a URL or a form, else undefined. */
export function parseId(raw: unknown): number | undefined {
  return recordIdText.safeParse(raw).data;
}

export function isClientId(raw: unknown): raw is string {
  return clientId.safeParse(raw).success;
}
