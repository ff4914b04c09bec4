/** What the tests read off the pages' HTML. */

const CSRF_FIELD = /name="_csrf" value="([^"]+)"/;

/** The page's CSRF token, or undefined when it has no form that carries one. */
export function findCsrf(html: string): string | undefined {
  return CSRF_FIELD.exec(html)?.[1];
}

/** The one-time key of the page's (first) creating form, or undefined when it has none. */
export function findOnceKey(html: string): string | undefined {
  return /name="_once" value="([^"]+)"/.exec(html)?.[1];
}

export function csrfFrom(html: string): string {
  const token = findCsrf(html);
  if (!token) throw new Error('no CSRF token on the page');
  return token;
}

/** The action of the page's form posting to an action containing `contains`. */
export function formAction(html: string, contains: string): string {
  const actions = [...html.matchAll(/<form[^>]*action="([^"]+)"/g)].map((m) => m[1]!);
  const found = actions.find((a) => a.includes(contains));
  if (!found) throw new Error(`no form posting to *${contains}* on the page: ${actions.join(', ')}`);
  return found.replace(/&amp;/g, '&');
}

/** The text ejs escaped, back as plain text. */
export function unescapeHtml(html: string): string {
  return html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#34;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

/** The error shown next to form field `name` (its `<name>-error` paragraph), as plain text, or undefined. */
export function fieldError(html: string, name: string): string | undefined {
  const found = new RegExp(`id="${name}-error">([^<]*)<`).exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/** The value attribute of input `name`, or undefined when the input shows none. */
export function inputValue(html: string, name: string): string | undefined {
  const input = new RegExp(`<input id="${name}" name="${name}"[^>]*>`).exec(html)?.[0];
  const value = input && /value="([^"]*)"/.exec(input)?.[1];
  return typeof value === 'string' ? unescapeHtml(value) : undefined;
}

/** The page-level error message (error page or a form's problem), as plain text. */
export function errorMessage(html: string): string | undefined {
  const found = /data-testid="error-message">([^<]*)</.exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/** A form of a page as a browser would submit it: where it posts and its named fields with their values. */
export interface PageForm {
  action: string;
  fields: Record<string, string>;
}

/**
 * Every form of the page posting to an action containing `contains`, with each named input,
 * textarea and select and the value it holds (a hidden field's value, a text field's shown value,
 * a checked box's value; a password field is empty).
 */
export function formsOf(html: string, contains: string): PageForm[] {
  const forms: PageForm[] = [];
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/g)) {
    const action = /action="([^"]*)"/.exec(match[1]!)?.[1];
    if (action === undefined || !unescapeHtml(action).includes(contains)) continue;
    const fields: Record<string, string> = {};
    for (const input of match[2]!.matchAll(/<input\b([^>]*)>/g)) {
      const attrs = input[1]!;
      const name = /\bname="([^"]*)"/.exec(attrs)?.[1];
      if (!name) continue;
      const type = /\btype="([^"]*)"/.exec(attrs)?.[1] ?? 'text';
      if ((type === 'checkbox' || type === 'radio') && !/\bchecked\b/.test(attrs)) continue;
      const value = type === 'password' ? '' : (/\bvalue="([^"]*)"/.exec(attrs)?.[1] ?? (type === 'checkbox' ? 'on' : ''));
      fields[unescapeHtml(name)] ??= unescapeHtml(value);
    }
    for (const area of match[2]!.matchAll(/<textarea\b[^>]*\bname="([^"]*)"[^>]*>([\s\S]*?)<\/textarea>/g)) fields[unescapeHtml(area[1]!)] = unescapeHtml(area[2]!);
    for (const select of match[2]!.matchAll(/<select\b[^>]*\bname="([^"]*)"[^>]*>([\s\S]*?)<\/select>/g)) {
      fields[unescapeHtml(select[1]!)] = unescapeHtml(/<option\b[^>]*\bvalue="([^"]*)"[^>]*\bselected/.exec(select[2]!)?.[1] ?? /<option\b[^>]*\bvalue="([^"]*)"/.exec(select[2]!)?.[1] ?? '');
    }
    forms.push({ action: unescapeHtml(action), fields });
  }
  return forms;
}

/** The (first) form posting to an action containing `contains`; an error when the page has none. */
export function formOf(html: string, contains: string): PageForm {
  const [form] = formsOf(html, contains);
  if (!form) throw new Error(`no form posting to *${contains}* on the page`);
  return form;
}

/**
 * The form's fields with `typed` entered: as a person fills in a form, only fields the form has.
 * Typing into a field the form does not have is an error, so a test cannot post what the route
 * happens to read.
 */
export function filled(form: PageForm, typed: Record<string, string> = {}): Record<string, string> {
  for (const name of Object.keys(typed)) {
    if (!(name in form.fields)) throw new Error(`the form posting to ${form.action} has no field "${name}" (it has ${Object.keys(form.fields).join(', ')})`);
  }
  return { ...form.fields, ...typed };
}
