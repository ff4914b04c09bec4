import { unescapeHtml } from './html.js';

/**
 * The forms and links of a page, read from its HTML the way a browser would submit and follow
 * them, so that a test can drive every form a page offers without a list of its own.
 */

/** One named control of a form; radios, checkboxes and submit buttons of one name are one field with their values as options. */
export interface FormField {
  name: string;
  /** input's type (text, hidden, password, checkbox, radio, …), or select, textarea, button. */
  kind: string;
  /** What the browser sends when nobody touches the control; undefined when it sends nothing (an unchecked box). */
  value: string | undefined;
  /** The values the page offers: a select's options, the values of its radios, checkboxes and buttons. */
  options: string[];
  /** The control's `maxlength`, when it has one. */
  maxLength?: number;
}

export interface PageForm {
  method: 'GET' | 'POST';
  /** The absolute URL the form submits to. */
  action: URL;
  fields: FormField[];
}

const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;

function attributes(tag: string): Record<string, string> {
  const inner = tag.replace(/^<\w+/, '').replace(/\/?>$/, '');
  const found: Record<string, string> = {};
  for (const m of inner.matchAll(ATTRIBUTE)) found[m[1]!.toLowerCase()] = unescapeHtml(m[2] ?? m[3] ?? m[4] ?? '');
  return found;
}

/** Every `<form>` of `html`, its action resolved against `page` (the URL the HTML came from). */
export function formsIn(html: string, page: URL): PageForm[] {
  const forms: PageForm[] = [];
  for (const m of html.matchAll(/<form\b[^>]*>([\s\S]*?)<\/form>/gi)) {
    const attrs = attributes(/^<form\b[^>]*>/i.exec(m[0])![0]);
    const method = (attrs.method ?? 'get').toUpperCase() === 'POST' ? 'POST' : 'GET';
    const action = new URL(attrs.action || page.href, page);
    forms.push({ method, action, fields: fieldsIn(m[1]!) });
  }
  return forms;
}

function fieldsIn(body: string): FormField[] {
  const fields = new Map<string, FormField>();
  const add = (name: string | undefined, kind: string, value: string | undefined, option?: string, maxLength?: string) => {
    if (!name) return;
    const field: FormField = fields.get(name) ?? { name, kind, value: undefined, options: [] };
    if (maxLength !== undefined && /^\d+$/.test(maxLength)) field.maxLength = Number(maxLength);
    if (value !== undefined && field.value === undefined) field.value = value;
    if (option !== undefined && !field.options.includes(option)) field.options.push(option);
    fields.set(name, field);
  };
  const controls = /<(input|button)\b[^>]*>|<textarea\b[^>]*>([\s\S]*?)<\/textarea>|<select\b[^>]*>([\s\S]*?)<\/select>/gi;
  for (const m of body.matchAll(controls)) {
    const tag = /^<\w+\b[^>]*>/.exec(m[0])![0];
    const attrs = attributes(tag);
    if ('disabled' in attrs) continue;
    const element = tag.slice(1).split(/[\s>]/)[0]!.toLowerCase();
    if (element === 'textarea') {
      add(attrs.name, 'textarea', unescapeHtml(m[2] ?? ''), undefined, attrs.maxlength);
    } else if (element === 'select') {
      const options = [...(m[3] ?? '').matchAll(/<option\b[^>]*>([^<]*)/gi)].map((o) => {
        const a = attributes(/^<option\b[^>]*>/i.exec(o[0])![0]);
        return { value: a.value ?? unescapeHtml(o[1]!.trim()), selected: 'selected' in a };
      });
      const chosen = options.find((o) => o.selected) ?? options[0];
      add(attrs.name, 'select', chosen?.value);
      for (const o of options) add(attrs.name, 'select', undefined, o.value);
    } else if (element === 'button') {
      // Only the button pressed is sent: none by default, one of them when the test presses it.
      if ((attrs.type ?? 'submit') === 'submit') add(attrs.name, 'button', undefined, attrs.value ?? '');
    } else {
      const type = (attrs.type ?? 'text').toLowerCase();
      if (type === 'checkbox' || type === 'radio') add(attrs.name, type, 'checked' in attrs ? (attrs.value ?? 'on') : undefined, attrs.value ?? 'on');
      else if (type === 'submit' || type === 'image') add(attrs.name, 'button', undefined, attrs.value ?? '');
      else if (type !== 'reset' && type !== 'file') add(attrs.name, type, attrs.value ?? '', undefined, attrs.maxlength);
    }
  }
  return [...fields.values()];
}

/** The absolute URLs of the page's links (`<a href>`), fragments dropped. */
export function linksIn(html: string, page: URL): URL[] {
  const links: URL[] = [];
  for (const m of html.matchAll(/<a\b[^>]*>/gi)) {
    const href = attributes(m[0]).href;
    if (!href || href.startsWith('#') || /^(mailto|javascript|data):/i.test(href)) continue;
    const url = new URL(href, page);
    url.hash = '';
    links.push(url);
  }
  return links;
}
