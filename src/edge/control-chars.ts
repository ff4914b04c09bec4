/**
 * Control characters (U+0000–U+001F and U+007F) have no place in an identifier, a URL, a name or
 * a token; PostgreSQL refuses U+0000 outright, and the others make logs and pages lie. They are
 * refused where a request enters, naming the field. Tab, CR and LF are allowed only in
 * multi-line text (a description).
 */
// eslint-disable-next-line no-control-regex
const ANY_CONTROL = /[\u0000-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex
const CONTROL_BUT_LINE_BREAKS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Fields whose text may span lines. */
const MULTI_LINE_FIELDS = new Set(['description']);

export function hasControlCharacter(value: string, multiLine = false): boolean {
  return (multiLine ? CONTROL_BUT_LINE_BREAKS : ANY_CONTROL).test(value);
}

/** A field name as an error message can show it: control characters in the name itself escaped. */
export function printableName(name: string): string {
  return hasControlCharacter(name) ? JSON.stringify(name) : name;
}

/**
 * The first field of a parsed query, form or JSON body that holds a control character (in its
 * name or in a string value, at any depth), as a dotted path such as `items.0.name`; or undefined.
 */
export function fieldWithControlCharacter(value: unknown, path: string[] = []): string | undefined {
  if (typeof value === 'string') {
    const last = path[path.length - 1];
    return hasControlCharacter(value, last !== undefined && MULTI_LINE_FIELDS.has(last)) ? path.join('.') || 'body' : undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      // A repeated form field keeps its own name: `scopes`, not `scopes.1`.
      const found = fieldWithControlCharacter(value[i], typeof value[i] === 'string' ? path : [...path, String(i)]);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (hasControlCharacter(key)) return [...path, printableName(key)].join('.');
      const found = fieldWithControlCharacter(inner, [...path, key]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The first cookie of a Cookie header whose name or value holds a control character; or undefined. */
export function cookieWithControlCharacter(header: string | undefined): string | undefined {
  if (!header || !hasControlCharacter(header)) return undefined;
  for (const pair of header.split(';')) {
    if (!hasControlCharacter(pair)) continue;
    const name = pair.split('=', 1)[0]!.trim();
    return `cookie ${printableName(name)}`;
  }
  return 'cookie';
}

/** Whether a URL path, once each segment is percent-decoded, holds a control character. */
export function pathHasControlCharacter(path: string): boolean {
  if (hasControlCharacter(path)) return true;
  if (!path.includes('%')) return false;
  return path.split('/').some((segment) => {
    try {
      return hasControlCharacter(decodeURIComponent(segment));
    } catch {
      // A malformed escape is not a control character; the route decides what it means.
      return false;
    }
  });
}

export function controlCharacterMessage(field: string): string {
  return `${field} must not contain control characters`;
}
