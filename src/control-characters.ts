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
// A description, the page's text box of sign-out redirect URLs (one a line; each URL is then
// checked by the URL rules, which refuse any control character left in it), and a directory
// provider's CA certificate (PEM) and group mapping (one directory group a line, each checked by
// services/federation/ldap.ts).
const MULTI_LINE_FIELDS = new Set(['description', 'signOutRedirectURLs', 'ca_certificate', 'group_mapping']);

/**
 * What a field refuses, in words, for a document that describes the field (the API's OpenAPI
 * document): the same rule `hasControlCharacter` applies to it.
 */
export function controlCharacterRule(field: string): string {
  return MULTI_LINE_FIELDS.has(field)
    ? 'Control characters (U+0000–U+001F, U+007F) other than tab, line feed and carriage return are refused (400).'
    : 'Control characters (U+0000–U+001F, U+007F) are refused (400).';
}

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
 * Walked with a stack of its own, not recursion: a 64 KiB JSON body can nest thousands deep.
 */
export function fieldWithControlCharacter(value: unknown): string | undefined {
  interface Step {
    value: unknown;
    /** The field name this value sits under (undefined: the same as its parent's, or the top). */
    key: string | undefined;
    parent: Step | undefined;
  }
  const pathOf = (step: Step | undefined, last?: string): string => {
    const names = last === undefined ? [] : [last];
    for (let s = step; s; s = s.parent) if (s.key !== undefined) names.push(s.key);
    return names.reverse().join('.') || 'body';
  };
  const nameOf = (step: Step): string | undefined => {
    for (let s: Step | undefined = step; s; s = s.parent) if (s.key !== undefined) return s.key;
    return undefined;
  };
  const stack: Step[] = [{ value, key: undefined, parent: undefined }];
  while (stack.length) {
    const step = stack.pop()!;
    const current = step.value;
    if (typeof current === 'string') {
      const name = nameOf(step);
      if (hasControlCharacter(current, name !== undefined && MULTI_LINE_FIELDS.has(name))) return pathOf(step);
    } else if (Array.isArray(current)) {
      // Pushed in reverse, so the first offending item is found first. A repeated form field
      // keeps its own name: `scopes`, not `scopes.1`.
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], key: typeof current[i] === 'string' ? undefined : String(i), parent: step });
      }
    } else if (current && typeof current === 'object') {
      const entries = Object.entries(current);
      for (const [key] of entries) {
        if (hasControlCharacter(key)) return pathOf(step, printableName(key));
      }
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], key: entries[i]![0], parent: step });
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
