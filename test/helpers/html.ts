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

/** One control of a form as the page wrote it. */
export interface FormControl {
  name: string;
  /** `text`, `password`, `hidden`, `checkbox`, … (`select`, `textarea` for those elements). */
  type: string;
  value: string;
  /** The text of the `<label for>` of the control's id, when it has one. */
  label?: string;
  checked: boolean;
}

export interface ParsedForm {
  action: string;
  controls: FormControl[];
}

function attribute(tag: string, name: string): string | undefined {
  const found = new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

/**
 * The forms of the page that post to an action containing `contains`, each with its controls as
 * written: what a browser would send from them is read off the page, never assumed.
 */
export function parseForms(html: string, contains: string): ParsedForm[] {
  const labels = new Map([...html.matchAll(/<label\b[^>]*\sfor="([^"]+)"[^>]*>([\s\S]*?)<\/label>/g)].map((m) => [m[1]!, unescapeHtml(m[2]!.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim())]));
  const found: ParsedForm[] = [];
  for (const [form] of html.matchAll(/<form\b[^>]*>[\s\S]*?<\/form>/g)) {
    const action = attribute(/<form\b[^>]*>/.exec(form)![0], 'action') ?? '';
    if (!action.includes(contains)) continue;
    const controls: FormControl[] = [];
    for (const [tag, element, inner] of form.matchAll(/<(input|select|textarea)\b[^>]*>(?:([\s\S]*?)<\/\1>)?/g) as Iterable<[string, string, string | undefined]>) {
      const name = attribute(tag, 'name');
      if (!name) continue;
      const id = attribute(tag, 'id');
      const type = element === 'input' ? (attribute(tag, 'type') ?? 'text') : element;
      // A select sends its selected option, else its first; a checkbox without a value sends "on".
      const selected = element === 'select' ? (/<option\b[^>]*value="([^"]*)"[^>]*\sselected/.exec(inner ?? '')?.[1] ?? /<option\b[^>]*value="([^"]*)"/.exec(inner ?? '')?.[1]) : undefined;
      controls.push({
        name,
        type,
        value: element === 'textarea' ? unescapeHtml(inner ?? '') : selected !== undefined ? unescapeHtml(selected) : (attribute(tag, 'value') ?? (type === 'checkbox' ? 'on' : '')),
        label: id ? labels.get(id) : undefined,
        checked: /\schecked\b/.test(tag),
      });
    }
    found.push({ action, controls });
  }
  return found;
}

/** The first form of the page that posts to an action containing `contains`. */
export function parseForm(html: string, contains: string): ParsedForm {
  const form = parseForms(html, contains)[0];
  if (!form) throw new Error(`no form posting to *${contains}* on the page`);
  return form;
}

/** A form of a page as a browser would submit it untouched: where it posts and its named fields with their values. */
export interface PageForm {
  action: string;
  fields: Record<string, string>;
}

/**
 * Every form of the page posting to an action containing `contains`, with what it would send as
 * the page wrote it: a hidden field's value, a text field's shown value, a checked box's value, a
 * select's chosen option; a password field is empty.
 */
export function formsOf(html: string, contains: string): PageForm[] {
  return parseForms(html, contains).map(({ action, controls }) => {
    const fields: Record<string, string> = {};
    for (const control of controls) {
      if ((control.type === 'checkbox' || control.type === 'radio') && !control.checked) continue;
      fields[control.name] ??= control.type === 'password' ? '' : control.value;
    }
    return { action, fields };
  });
}

/** The (first) form posting to an action containing `contains`; an error when the page has none. */
export function formOf(html: string, contains: string): PageForm {
  const [form] = formsOf(html, contains);
  if (!form) throw new Error(`no form posting to *${contains}* on the page`);
  return form;
}

/**
 * What the browser sends when a person fills a form posting to `contains` (the first such form
 * that has every label of `byLabel`): its hidden fields and checked boxes as the page wrote
 * them, and each control named by its label in `byLabel` with the value given (for a checkbox or
 * radio button, `'checked'` or `'unchecked'`). A label no such form has is an error, so a test
 * cannot pass by posting a field the form lacks.
 */
export function fillForm(html: string, contains: string, byLabel: Record<string, string> = {}): { action: string; fields: URLSearchParams } {
  const forms = parseForms(html, contains);
  if (!forms.length) throw new Error(`no form posting to *${contains}* on the page`);
  const wanted = Object.keys(byLabel);
  const form = forms.find((f) => wanted.every((label) => f.controls.some((c) => c.label === label)));
  if (!form) {
    throw new Error(`no form posting to *${contains}* has a field labelled ${wanted.map((l) => `"${l}"`).join(' and ')}: ${forms.map((f) => f.controls.map((c) => c.label ?? c.name).join(', ')).join(' | ')}`);
  }
  const fields = new URLSearchParams();
  const typedOf = (control: FormControl) => (control.label !== undefined && Object.hasOwn(byLabel, control.label) ? byLabel[control.label]! : undefined);
  // Choosing one radio button of a group unchooses the one the page had checked.
  const chosenRadios = new Set(form.controls.filter((c) => c.type === 'radio' && typedOf(c) === 'checked').map((c) => c.name));
  for (const control of form.controls) {
    const typed = typedOf(control) ?? (control.type === 'radio' && chosenRadios.has(control.name) ? 'unchecked' : undefined);
    if (control.type === 'checkbox' || control.type === 'radio') {
      if (typed === undefined ? control.checked : typed === 'checked') fields.append(control.name, control.value);
    } else fields.append(control.name, typed ?? control.value);
  }
  return { action: form.action, fields };
}

/**
 * What the page's form posting to an action containing `contains` sends once filled in with
 * `values` by field name: the form's own fields (hidden ones with the values the page gave them),
 * each named field set as `values` says. A value for a field the form does not have throws, so a
 * test cannot post a field the page no longer offers.
 */
export function filledForm(html: string, contains: string, values: Record<string, string> = {}): PageForm {
  const form = formOf(html, contains);
  return { action: form.action, fields: filled(form, values) };
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
