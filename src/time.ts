/** Timestamps are written as ISO strings (both databases accept them) and read back as either. */
export function now(): string {
  return new Date().toISOString();
}

/** What toISOString writes: a string already in this form is returned as it is, not parsed again. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function toIso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  return CANONICAL_ISO.test(value) ? value : new Date(value).toISOString();
}
