/** Timestamps are written as ISO strings (both databases accept them) and read back as either. */
export function now(): string {
  return new Date().toISOString();
}

export function toIso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return value instanceof Date ? value.toISOString() : new Date(value).toISOString();
}
