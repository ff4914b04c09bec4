import request from 'supertest';

/** A browser-like client of the pages: cookies persist, and it knows the CSRF token of its cookie. */
export interface Browser {
  agent: ReturnType<typeof request.agent>;
  csrf: string;
  /** POSTs a form with the CSRF token added. */
  submit(path: string, fields: Record<string, string>): ReturnType<ReturnType<typeof request.agent>['post']>;
}

const CSRF_FIELD = /name="_csrf" value="([^"]*)"/;

export function csrfOf(html: string): string {
  const match = CSRF_FIELD.exec(html);
  if (!match?.[1]) throw new Error('the page has no _csrf field');
  return match[1];
}

/** A fresh client that has opened `page` once (to get its CSRF cookie and token). */
export async function browser(url: string, page = '/login'): Promise<Browser> {
  const agent = request.agent(url);
  const res = await agent.get(page).expect(200);
  const csrf = csrfOf(res.text);
  return {
    agent,
    csrf,
    submit: (path, fields) => agent.post(path).type('form').send({ ...fields, _csrf: csrf }),
  };
}

/**
 * A client signed in as `user` through the sign-in form. Its CSRF token is re-read after sign-in:
 * tokens are bound to the session, and signing in starts a new one.
 */
export async function signedIn(url: string, user: { username: string; password: string }): Promise<Browser> {
  const agent = request.agent(url);
  const before = csrfOf((await agent.get('/login').expect(200)).text);
  await agent.post('/login').type('form').send({ login: user.username, password: user.password, _csrf: before }).expect(302).expect('Location', '/groups');
  const csrf = csrfOf((await agent.get('/groups').expect(200)).text);
  return {
    agent,
    csrf,
    submit: (path, fields) => agent.post(path).type('form').send({ ...fields, _csrf: csrf }),
  };
}

/** The text ejs escaped, back as plain text. */
export function unescapeHtml(html: string): string {
  return html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#34;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/** The error shown next to form field `name` (views/_field.ejs, views/groups/_select.ejs), or undefined. */
export function fieldError(html: string, name: string): string | undefined {
  const field = new RegExp(`<div class="field has-error">\\s*<label for="${name}">[\\s\\S]*?<p class="field-error" role="alert">([^<]*)</p>`).exec(html);
  return field?.[1] === undefined ? undefined : unescapeHtml(field[1]);
}

/** The value attribute of input `name`, or undefined when the input shows none. */
export function inputValue(html: string, name: string): string | undefined {
  const input = new RegExp(`<input id="${name}" name="${name}"[^>]*>`).exec(html)?.[0];
  const value = input && /value="([^"]*)"/.exec(input)?.[1];
  return value === undefined || value === null ? undefined : unescapeHtml(value);
}

/** The page-level error message (error page or a form's problem), as plain text. */
export function errorMessage(html: string): string | undefined {
  const found = /data-testid="error-message">([^<]*)</.exec(html)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}
