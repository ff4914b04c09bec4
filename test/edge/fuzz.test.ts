import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { expect } from 'chai';
import fc from 'fast-check';
import { setSiteAdmin } from '../../src/services/admin.js';
import { addMember } from '../../src/services/groups.js';
import { createResource } from '../../src/services/resources/manage.js';
import { createWebhook } from '../../src/services/webhooks/manage.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { Browser, signIn, type Page } from '../helpers/browser.js';
import { CALLBACK, groupAccess, makeApp, makeGroup, makeUser, PASSWORD, personalToken, type TestUser } from '../helpers/factories.js';
import { formsIn, linksIn, type FormField, type PageForm } from '../helpers/forms.js';
import { authorize, tokenRequest } from '../helpers/oauth.js';
import { linkIn, useMailServer } from '../helpers/smtp.js';

/**
 * Property-based fuzzing of everything the service takes in, found where a client finds it:
 * the forms of every page a visitor, a group member, a group owner and a site administrator can
 * reach (parsed from the pages, so a new form is covered without editing this file), the
 * operations of the OpenAPI document the API serves, and the OAuth endpoints discovery names.
 * Each gets arbitrary values: kept, dropped, repeated and nested fields, wrong types, huge
 * strings, unicode, control characters, numbers out of range, odd encodings. Whatever arrives,
 * the answer is never a 5xx, never shows a stack trace or another internal detail, and is
 * well formed: the API's `{error, error_description}` JSON, the OAuth endpoints' JSON errors,
 * the site's own HTML page.
 *
 * A person's own pages are reached signed in, with the CSRF token the page carries; the cases
 * are sent as a browser sends them (its cookies kept), so that most get past the first checks.
 * Every rate limit is off, so that no case is hidden behind a 429. sweep.test.ts beside this file
 * keeps a list of routes and sends bytes no client library would (in headers, over a raw socket).
 *
 * FUZZ_SEED=<n> repeats a run (the seed is printed with every failure), FUZZ_RUNS=<n> sets the
 * cases per form (API operations and OAuth endpoints, which answer in a millisecond or two, get
 * three times as many; pages half), FUZZ_ONLY=<text> fuzzes only the targets whose name holds it,
 * and FUZZ_STATS=1 prints what was found, the statuses answered and the time spent.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const ONLY = process.env.FUZZ_ONLY;
const STATS = Boolean(process.env.FUZZ_STATS);

/**
 * Every rate limit the configuration knows, off: a limit reached would turn the rest of the
 * run into 429s and hide what lies behind them. Read from the configuration's source, so that
 * a limit added later is turned off here too.
 */
const LIMITS_OFF = Object.fromEntries(
  [...readFileSync(new URL('../../src/config.ts', import.meta.url), 'utf8').matchAll(/\b(RATE_LIMIT_[A-Z_]+)\s*:/g)].map((m) => [m[1]!, 'off']),
);

// ---- values ------------------------------------------------------------------------------------

/** A value of the world under test (a real client ID, a group's path, a user code), named in counterexamples and read when the request is sent. */
class Known {
  constructor(readonly name: string) {}
  [fc.toStringMethod](): string {
    return `known.${this.name}`;
  }
}

type Value = string | Known;

const CONTROL = ['\u0000', '\u0001', '\u0008', '\t', '\n', '\r', '\u000b', '\u001b', '\u001f', '\u007f'];
const control = fc
  .array(fc.oneof(fc.constantFrom(...CONTROL), fc.constantFrom('a', 'Z', '0', ' ', '-')), { minLength: 1, maxLength: 6 })
  .map((parts) => parts.join(''));
const numeric = fc.constantFrom(
  '0', '-1', '1', '00', '01', '2', '20', '50', '51', '2147483647', '2147483648', '-2147483649', '4294967296', '9007199254740993',
  '99999999999999999999', '1e3', '1e309', '-1e309', 'Infinity', 'NaN', '0x1F', '1_000', '1.5', '1.', '.5', '-0', '+1', ' 1', '1 ', '١', '１',
);
const long = fc.oneof(
  fc.integer({ min: 30, max: 300 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 100, max: 2100 }).map((n) => 'é'.repeat(n)),
  fc.integer({ min: 40, max: 1100 }).map((n) => '😀'.repeat(n)),
  fc.constantFrom('a'.repeat(4097), 'b'.repeat(70_000)),
);
const odd = fc.constantFrom(
  '', ' ', '  ', '\u00a0', '\u2028', '\u3000', '\u200b', '\ufeff', '\u202e', 'null', 'undefined', 'true', 'false', '[]', '{}', '[object Object]',
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', "'", '"', '\\', '`', "' or '1'='1", '"; drop table users; --',
  '%', '%25', '%00', '%ZZ', '%FF%FE', '%E0%A4%A', '+', '&', '=', '#', '?', '/', '//', '../../etc/passwd', '..%2F..%2F', '<script>alert(1)</script>',
  '<%= 7*7 %>', '${7*7}', '{{7*7}}', 'İ', 'ß', 'ﬁ', 'K', 'Ǆ', 'ǅ', 'Σ', '\u0130stanbul', 'e\u0301', '\ud800', '\udfff', '😀', '👩‍👩‍👧‍👦', 'مرحبا', '日本語',
  'https://app.example/cb', 'http://127.0.0.1:9999/callback', 'http://localhost/cb', 'https://[::1]/cb', 'javascript:alert(1)', 'https://a.example/cb#x',
  'https://user:pass@a.example/', 'https://ex ample.com/', 'http://[::ffff:127.0.0.1]:99999/', '//evil.example/', '/relative', 'https://例え.jp/',
  'HTTPS://A.EXAMPLE/CB', 'data:text/html,x', 'a@b', 'a@b.c', '@', 'x@x.x'.padStart(300, 'a'), '2024-02-30', '9999-12-31T23:59:59Z', '-000001-01-01',
  '1970-01-01T00:00:00Z', 'T', 'S256', 'plain', 'none', 'owner', 'maintainer', 'member', 'private', 'public', 'internal', 'confidential', 'on', 'yes',
  'ho_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa000000', 'ha_', 'hs_x', 'hr_' + 'A'.repeat(36),
);
const anyText = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }));
/** A value a stranger might send anywhere. */
const nasty: fc.Arbitrary<string> = fc.oneof({ weight: 1, arbitrary: control }, { weight: 2, arbitrary: numeric }, { weight: 2, arbitrary: long }, { weight: 4, arbitrary: odd }, { weight: 3, arbitrary: anyText });

/** One of the world's real values, or a plausible one, or a stranger's. */
function valueFrom(knownNames: string[]): fc.Arbitrary<Value> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...knownNames).map((name) => new Known(name)) },
    { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{1,15}$/) },
    { weight: 5, arbitrary: nasty },
  );
}

/** Values of the kind a control asks for (its type, its name, its maxlength), so that cases also get past the first check. */
function fitting(field: FormField): fc.Arbitrary<string> {
  const word = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{1,20}$/);
  const kinds: Array<fc.Arbitrary<string>> = [];
  if (field.kind === 'email' || /mail/i.test(field.name)) {
    kinds.push(fc.tuple(word, fc.constantFrom('example.test', 'EXAMPLE.TEST', 'b.c', 'localhost', 'xn--bcher-kva.example', 'bücher.example')).map(([local, domain]) => `${local}@${domain}`));
    kinds.push(fc.constantFrom('a@b', 'a@b@c', ' a@example.test ', `${'a'.repeat(250)}@example.test`, '"a b"@example.test', 'a+tag@example.test', 'İ@example.test'));
  }
  if (field.kind === 'password' || /password/i.test(field.name)) {
    kinds.push(fc.constantFrom(PASSWORD, 'password', 'password123', '12345678', 'short', 'x'.repeat(256), 'x'.repeat(257), 'ünïcödé pässwörd 1', '😀😀😀😀😀😀😀😀'));
    kinds.push(fc.stringMatching(/^[A-Za-z0-9]{6,12}$/).map((s) => `Fuzz ${s} horse staple`));
  }
  if (field.kind === 'url' || /url|uri/i.test(field.name)) {
    kinds.push(fc.tuple(fc.constantFrom('https://', 'http://', 'HTTPS://', 'ftp://', ''), fc.constantFrom('app.example', '127.0.0.1:9999', 'localhost', '[::1]:8080', 'a.example:65536', 'ex ample.com', '例え.jp'), fc.constantFrom('/cb', '/', '', '/cb?x=1', '/cb#f', '/%ZZ', `/${'p'.repeat(2100)}`)).map((parts) => parts.join('')));
  }
  if (field.kind === 'number' || /days|count|size|page|code$/i.test(field.name)) kinds.push(numeric);
  if (field.kind === 'textarea') {
    const lines = fc.array(fc.oneof(word, fc.constantFrom('https://app.example/out', CALLBACK, '')), { maxLength: 12 });
    kinds.push(fc.tuple(lines, fc.constantFrom('\n', '\r\n', '\r')).map(([parts, separator]) => parts.join(separator)));
  }
  if (field.maxLength !== undefined) kinds.push(fc.constantFrom('x'.repeat(field.maxLength), 'x'.repeat(field.maxLength + 1), 'é'.repeat(field.maxLength), '😀'.repeat(field.maxLength)));
  kinds.push(word);
  return fc.oneof(...kinds);
}

/** A JSON value of any shape, nested a little. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: nasty },
  { weight: 1, arbitrary: fc.constantFrom(2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324, -0, 0.5) },
);

/** Mostly none (the target's own method), now and then another one. */
const otherMethod = fc.oneof({ weight: 20, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') });
/** What the client accepts: mostly unsaid, as in the tests' browser, now and then JSON, HTML or anything. */
const accept = fc.oneof({ weight: 8, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('application/json', 'text/html', '*/*', 'text/plain', 'application/json, text/html;q=0.1', 'image/png') });

/** Now and then one of the browser's cookies changed: dropped, its last character changed (a broken signature), given twice, or replaced. */
type CookieCase = { index: number; change: 'drop' | 'flip' | 'twice' | 'value'; value: string; raw: boolean } | null;
const cookieCase: fc.Arbitrary<CookieCase> = fc.oneof(
  { weight: 9, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.record({ index: fc.nat(20), change: fc.constantFrom('drop' as const, 'flip' as const, 'twice' as const, 'value' as const), value: nasty, raw: fc.boolean() }) },
);

/** Percent-encodes every byte but the unreserved ones; a lone surrogate becomes U+FFFD's bytes, as in any UTF-8 encoder. */
function pct(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** How a value travels: encoded as a browser would, or as the bytes themselves (percent signs, latin-1) for the parsers to cope with. */
type Encoding = 'utf8' | 'raw' | 'latin1';
const encoding = fc.constantFrom<Encoding>('utf8', 'utf8', 'utf8', 'utf8', 'utf8', 'utf8', 'raw', 'latin1');

function encodePair(name: string, value: string, how: Encoding): Buffer {
  if (how === 'utf8') return Buffer.from(`${pct(name)}=${pct(value)}`);
  // Separators stay separators; everything else goes as it is: `%ZZ` reaches the decoder, é as one latin-1 byte.
  const bare = (s: string) => s.replace(/[&=#\s]/g, (c) => pct(c));
  return Buffer.from(`${bare(name)}=${bare(value)}`, how === 'raw' ? 'utf8' : 'latin1');
}

function encodeForm(pairs: Array<[string, string]>, how: Encoding[]): Buffer {
  return Buffer.concat(pairs.flatMap(([name, value], i) => [...(i ? [Buffer.from('&')] : []), encodePair(name, value, how[i % how.length] ?? 'utf8')]));
}

// ---- the answer --------------------------------------------------------------------------------

/** Words of a fault that reached the client: a stack frame, a source path, a driver's or the runtime's own message. */
const INTERNAL = [
  /\n\s+at [^\n]*[:(][^\n]*\d+:\d+\)?/,
  /node_modules[\\/]/,
  /[\\/](?:src|dist|adapters)[\\/][\w./-]+\.[jt]s\b/,
  /\b(?:TypeError|ReferenceError|RangeError|AggregateError): /,
  /\bSQLITE_[A-Z_]+\b/,
  /\b(?:duplicate key value|violates (?:not-null|foreign key|unique|check) constraint|syntax error at or near|value too long for type|out of range for type|invalid input syntax for)\b/,
  /\bCannot read propert(?:y|ies) of\b/,
  /\bis not a function\b/,
  /\b(?:ECONNREFUSED|ETIMEDOUT|ECONNRESET|ERR_[A-Z_]{4,})\b/,
];

type Surface = 'page' | 'api' | 'oauth';

/** Throws, saying why, when the answer is a 5xx, shows a fault's insides, or is not the surface's well-formed answer. */
function checkAnswer(surface: Surface, page: Page, method = 'GET'): void {
  const type = page.headers.get('content-type') ?? '';
  const problem = (why: string) => {
    throw new Error(`${why}\n  answer: ${page.status} ${type}${page.headers.has('location') ? ` → ${page.headers.get('location')}` : ''}\n  ${page.text.slice(0, 600).replace(/\n/g, '\n  ')}`);
  };
  if (page.status >= 500) problem(`a ${page.status}`);
  // Node's HTTP parser answers a request it cannot read (a head too large) before the service sees it: bare, without X-Request-Id.
  if ([400, 413, 414, 431].includes(page.status) && !page.headers.has('x-request-id') && !page.text) return;
  for (const pattern of INTERNAL) if (pattern.test(page.text)) problem(`an internal detail (${pattern}) in the answer`);
  // A limit reached is a fair answer whatever its form.
  if (page.status === 429) return;
  if (page.status >= 300 && page.status < 400 && page.status !== 304) {
    const location = page.headers.get('location');
    if (!location) problem('a redirect without Location');
    if (!URL.canParse(location!, page.url)) problem('a redirect to an address that is not a URL');
    // An error sent back to the client (in the query, or the fragment) says what went wrong in words too.
    const target = new URL(location!, page.url);
    for (const params of [target.searchParams, new URLSearchParams(target.hash.slice(1))]) {
      if (params.has('error') && !params.get('error_description')) problem('a redirect with an error and no error_description');
    }
    return;
  }
  if (surface === 'api' && !page.headers.get('x-request-id')) problem('an API answer without X-Request-Id');
  // An answer to HEAD has the head of the answer to GET, and no body to judge.
  if (method === 'HEAD') return;
  const json = type.startsWith('application/json');
  const html = type.startsWith('text/html');
  // Every API answer with a body is JSON (204s and the router's OPTIONS answers have none).
  if (surface === 'api' && page.text !== '' && !json) problem('an API answer that is not JSON');
  if (page.status < 400) return;
  if (json) {
    let body: unknown;
    try {
      body = JSON.parse(page.text);
    } catch {
      problem('an error body that does not parse as JSON');
    }
    const { error, error_description: description, ...rest } = (body ?? {}) as Record<string, unknown>;
    if (typeof error !== 'string' || !error || typeof description !== 'string' || !description) problem('a JSON error without error and error_description');
    if (surface === 'api' && Object.keys(rest).length) problem(`an API error with more than error and error_description: ${Object.keys(rest).join(', ')}`);
  } else if (surface === 'api') {
    problem('an API error that is not JSON');
  } else if (surface === 'oauth' && html && /<form method="post" action="[^"]*">/.test(page.text) && page.text.includes('name="error"')) {
    // The form_post response mode: the error goes back to the client in a form that posts itself.
    if (!page.text.includes('name="error_description"')) problem('a form_post error without error_description');
  } else if (!html || !/^<!doctype html>/i.test(page.text.trimStart()) || !page.text.includes('href="/static/site.css"') || !page.text.includes('class="brand"')) {
    problem('an error that is neither a JSON error nor the site\'s page');
  }
}

/** Long runs of one character written as a count, so that a report stays readable. */
function shorten(text: string): string {
  return text.replace(/(.)\1{15,}/gsu, (run, ch: string) => `${ch}⟨×${[...run].length}⟩`).slice(0, 3000);
}

/** What a failing case sent, for the report. */
function describeRequest(method: string, url: URL, headers: Record<string, string>, body: Buffer | undefined): string {
  const shown = body === undefined ? '' : `\n  body (${body.length} bytes): ${shorten(JSON.stringify(body.subarray(0, 2000).toString('latin1')))}`;
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v.length > 200 ? `${v.slice(0, 200)}…` : v}`).join('; ');
  return `  request: ${method} ${shorten(`${url.pathname}${url.search}`)}\n  headers: ${head}${shown}`;
}

// ---- reading pages -----------------------------------------------------------------------------

/** A form's place in the site, the same in every world: ids and world-specific values replaced by names. */
function templateOf(pathname: string, known: Record<string, string>): string {
  const named = new Map(Object.entries(known).filter(([, v]) => !/^\d+$/.test(v)).map(([k, v]) => [v, k]));
  return pathname
    .split('/')
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // kept as it is
      }
      if (named.has(decoded)) return `{${named.get(decoded)}}`;
      if (/^\d+$/.test(segment)) return '{n}';
      if (segment.length >= 16 && /\d/.test(segment) && /[A-Za-z]/.test(segment)) return '{id}';
      return segment;
    })
    .join('/');
}

function formIdentity(form: PageForm, known: Record<string, string>): string {
  const query = [...new Set(form.action.searchParams.keys())].sort().join('&');
  return `${form.method} ${templateOf(form.action.pathname, known)}${query ? `?${query}` : ''} (${form.fields.map((f) => f.name).sort().join(' ')})`;
}

const isHtml = (page: Page) => (page.headers.get('content-type') ?? '').startsWith('text/html');

// ---- the world ---------------------------------------------------------------------------------

interface World {
  owner: TestUser;
  member: TestUser;
  admin: TestUser;
  group: { id: number; path: string };
  app: { clientId: string; clientSecret: string; secretId: number };
  /** The values a case may name (Known), by name. */
  known: Record<string, string>;
  ownerToken: string;
  adminToken: string;
  browsers: Map<string, Browser>;
}

describeEachProfile('property-based fuzzing of every form, page and route', function (profile) {
  this.timeout(10 * 60_000);
  const smtp = useMailServer();
  const server = useIdp(profile, () => ({ ...LIMITS_OFF, SMTP_URL: smtp.url, MAIL_FROM: 'Horizon ID <id@example.test>' }));
  let world: World;
  const failures: string[] = [];
  // Idle connections are dropped by the client well before the server's keep-alive timeout (5 s),
  // so that no case goes out on a connection the server is closing at that moment.
  const agent = new Agent({ keepAlive: true, timeout: 2000 });
  const newBrowser = () => new Browser(server.url, { agent });
  after(() => agent.destroy());
  const stats: Record<string, Record<number, number>> = {};
  let worlds = 0;

  const spent = { build: 0, discover: 0, fuzz: 0 };
  async function buildWorld(): Promise<World> {
    const t0 = Date.now();
    try {
      return await buildWorldNow();
    } finally {
      spent.build += Date.now() - t0;
    }
  }
  async function buildWorldNow(): Promise<World> {
    worlds += 1;
    const tag = `${worlds}${randomBytes(2).toString('hex')}`;
    const owner = await makeUser(server.db, { username: `owner-${tag}` });
    const member = await makeUser(server.db, { username: `member-${tag}` });
    const admin = await makeUser(server.db, { username: `admin-${tag}` });
    await setSiteAdmin(server.db, { userId: 0, ip: null, admin: true }, admin, true);
    const group = await makeGroup(server.db, owner.id, { path: `fuzz-${tag}` });
    // A webhook (to an address the sender refuses at once: private targets are not allowed here) that is told of the member added next.
    const hook = await createWebhook({ db: server.db, cipher: undefined, allowPrivate: true }, await groupAccess(server.db, owner.id, group.id), {
      url: 'http://127.0.0.1:9/hook',
      secret: 'a-secret-of-some-length',
      events: ['member.added'],
    });
    await addMember(server.db, await groupAccess(server.db, owner.id, group.id), { user: member.username, role: 'member' });
    const delivery = (await server.db('webhook_deliveries').where({ webhook_id: hook.id }).first()) as { id: number | string };
    // A resource of the group, for the API's resource routes.
    const { resource } = await createResource({ db: server.db, issuer: server.url }, await groupAccess(server.db, owner.id, group.id), {
      identifier: `https://fuzz-${tag}.example.test/mcp`,
      name: 'Fuzz tools',
      scopes: [{ name: 'tools:read', description: 'Read your tools' }],
    });
    const app = await makeApp(server.db, owner.id, group.id, { name: 'Fuzz App', deviceFlow: true });
    const code = await fetch(`${server.url}/login/oauth/device/code`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: app.clientId, client_secret: app.clientSecret, scope: 'openid groups:read-only' }),
    }).then((res) => res.json() as Promise<{ user_code: string; device_code: string }>);
    const known = {
      ownerName: owner.username,
      ownerEmail: owner.email,
      ownerId: String(owner.id),
      memberName: member.username,
      memberId: String(member.id),
      adminId: String(admin.id),
      groupPath: group.path,
      groupId: String(group.id),
      clientId: app.clientId,
      clientSecret: app.clientSecret,
      secretId: String(app.secretId),
      callback: CALLBACK,
      userCode: code.user_code,
      deviceCode: code.device_code,
      hookId: String(hook.id),
      deliveryId: String(delivery.id),
      resourceId: String(resource.id),
    };
    return {
      owner,
      member,
      admin,
      group,
      app,
      known,
      ownerToken: await personalToken(server.db, owner.id, { scopes: ['groups:read-write'] }),
      adminToken: await personalToken(server.db, admin.id, { scopes: ['groups:read-write'] }),
      browsers: new Map(),
    };
  }

  before(async () => {
    world = await buildWorld();
  });

  after(() => {
    if (STATS) console.log(JSON.stringify({ worlds, spent, stats }, null, 0).replace(/\},/g, '},\n'));
  });

  // ---- who fuzzes ------------------------------------------------------------------------------

  interface Actor {
    name: string;
    /** Where its crawl starts. */
    seeds(): Promise<string[]>;
    /** Its browser in the current world (signed in when it is someone). */
    browser(): Promise<Browser>;
  }

  const signedIn = (name: 'owner' | 'member' | 'admin'): Actor => ({
    name,
    seeds: async () => [
      '/groups',
      '/account/settings',
      ...(name === 'admin' ? ['/admin', `/admin/users/${world.member.id}`] : []),
      `/groups/${world.group.path}`,
      `/login/oauth/authorize?${new URLSearchParams({ client_id: world.app.clientId, redirect_uri: CALLBACK, state: 'fuzz', scope: 'openid profile email groups:read-write' })}`,
      '/login/device',
      `/login/device?user_code=${world.known.userCode}`,
      '/login/oauth/logout',
    ],
    browser: async () => {
      let browser = world.browsers.get(name);
      if (!browser) {
        browser = await signIn(newBrowser(), world[name]);
        world.browsers.set(name, browser);
      }
      return browser;
    },
  });

  const visitor: Actor = {
    name: 'visitor',
    seeds: async () => {
      // A real password-reset link, so that its form is reached too.
      const mailed = await makeUser(server.db);
      const browser = newBrowser();
      await browser.get('/forgot-password').expect(200);
      await browser.submit('/forgot-password', { email: mailed.email }).expect(302);
      const reset = linkIn(await smtp.next(mailed.email), server.url);
      return [
        '/login',
        '/signup',
        '/forgot-password',
        `${reset.pathname}${reset.search}`,
        `/login/oauth/authorize?${new URLSearchParams({ client_id: world.app.clientId, redirect_uri: CALLBACK, state: 'fuzz', scope: 'openid groups:read-only' })}`,
        '/login/device',
        `/login/device?user_code=${world.known.userCode}`,
      ];
    },
    browser: async () => {
      let browser = world.browsers.get('visitor');
      if (!browser) {
        browser = newBrowser();
        world.browsers.set('visitor', browser);
      }
      return browser;
    },
  };

  // ---- discovery -------------------------------------------------------------------------------

  interface FormTarget {
    identity: string;
    form: PageForm;
    /** The page the form was read from, read again before fuzzing it (fresh tokens); none for a form found in a POST's answer. */
    source: URL | undefined;
    /** Found in an answer to a fuzzed request rather than by the crawl: looked for again only where it was found. */
    harvested: boolean;
    /** The world it was found in (a form found in an answer belongs to that world only). */
    world: number;
    /** On how many pages the crawl found it: the header's forms (Sign out) are on every one. */
    pages: number;
  }

  interface PageTarget {
    identity: string;
    url: URL;
    /** Query parameter names seen in links to the page. */
    query: Set<string>;
  }

  interface Discovery {
    forms: Map<string, FormTarget>;
    pages: Map<string, PageTarget>;
  }

  const MAX_PAGES = 80;
  const sameSite = (url: URL) => url.origin === new URL(server.url).origin;
  const crawlable = (url: URL) => sameSite(url) && !url.pathname.startsWith('/static/') && !url.pathname.startsWith('/apis/');

  /** Every page the actor reaches by links (and by forms that only navigate, GET forms) from its seeds, and every form on them. */
  async function discover(actor: Actor): Promise<Discovery> {
    const t0 = Date.now();
    try {
      return await discoverNow(actor);
    } finally {
      spent.discover += Date.now() - t0;
    }
  }
  async function discoverNow(actor: Actor): Promise<Discovery> {
    const browser = await actor.browser();
    const found: Discovery = { forms: new Map(), pages: new Map() };
    const queue = (await actor.seeds()).map((path) => new URL(path, server.url));
    const visited = new Set<string>();
    let read = 0;
    while (queue.length && read < MAX_PAGES) {
      const url = queue.shift()!;
      const template = templateOf(url.pathname, world.known);
      const pageId = `GET ${template}`;
      if (found.pages.has(pageId)) {
        for (const key of url.searchParams.keys()) found.pages.get(pageId)!.query.add(key);
      }
      if (visited.has(`${template}?${[...url.searchParams.keys()].sort().join('&')}`)) continue;
      visited.add(`${template}?${[...url.searchParams.keys()].sort().join('&')}`);
      read += 1;
      const page = await browser.follow(url, CALLBACK);
      if (page.status !== 200 || !isHtml(page) || !sameSite(page.url)) continue;
      const finalId = `GET ${templateOf(page.url.pathname, world.known)}`;
      if (!found.pages.has(finalId)) found.pages.set(finalId, { identity: finalId, url: page.url, query: new Set(page.url.searchParams.keys()) });
      for (const form of formsIn(page.text, page.url)) {
        const identity = formIdentity(form, world.known);
        const known = found.forms.get(identity);
        if (known) known.pages += 1;
        else found.forms.set(identity, { identity, form, source: page.url, harvested: false, world: worlds, pages: 1 });
        if (form.method === 'GET' && crawlable(form.action)) {
          const next = new URL(form.action);
          for (const field of form.fields) if (field.value !== undefined) next.searchParams.append(field.name, field.value);
          queue.push(next);
        }
      }
      for (const link of linksIn(page.text, page.url)) if (crawlable(link)) queue.push(link);
    }
    return found;
  }

  // ---- fuzzing one form ------------------------------------------------------------------------

  type FieldOp =
    | { op: 'default' }
    | { op: 'option'; index: number }
    | { op: 'value'; value: Value }
    | { op: 'omit' }
    | { op: 'twice'; values: [Value, Value] }
    | { op: 'nested'; suffix: string; value: Value };

  interface FormCase {
    fields: FieldOp[];
    extra: Array<[Value, Value]>;
    /** Replaces one segment of the action's path, now and then. */
    segment: { index: number; value: Value } | null;
    /** The submit button pressed, when the form has named ones. */
    press: number;
    body: 'form' | 'json' | 'multipart' | 'text' | 'none' | 'utf16';
    how: Encoding[];
    /** Now and then another method than the form's, and what the client says it accepts. */
    method: string | null;
    accept: string | null;
    cookie: CookieCase;
  }

  function formCase(form: PageForm, names: string[]): fc.Arbitrary<FormCase> {
    const value = valueFrom(names);
    const opFor = (field: FormField): fc.Arbitrary<FieldOp> => {
      const hidden = field.kind === 'hidden';
      const arbitraries: Array<fc.WeightedArbitrary<FieldOp>> = [
        { weight: field.name === '_csrf' ? 60 : hidden ? 16 : 2, arbitrary: fc.constant({ op: 'default' as const }) },
        { weight: hidden ? 1 : 4, arbitrary: value.map((v) => ({ op: 'value' as const, value: v })) },
        { weight: 1, arbitrary: fc.constant({ op: 'omit' as const }) },
        { weight: 1, arbitrary: fc.tuple(value, value).map((values) => ({ op: 'twice' as const, values })) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom('[]', '[0]', '[a]', '[__proto__]', '[][]', '.x'), value).map(([suffix, v]) => ({ op: 'nested' as const, suffix, value: v })) },
      ];
      if (!hidden) arbitraries.push({ weight: 4, arbitrary: fitting(field).map((v) => ({ op: 'value' as const, value: v })) });
      if (field.options.length) arbitraries.push({ weight: hidden ? 2 : 5, arbitrary: fc.nat(field.options.length - 1).map((index) => ({ op: 'option' as const, index })) });
      return fc.oneof(...arbitraries);
    };
    const segments = form.action.pathname.split('/').length;
    return fc.record({
      fields: fc.tuple(...form.fields.map(opFor)),
      extra: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.tuple(fc.oneof(nasty, fc.constantFrom('_csrf', '__proto__[x]', 'constructor[prototype][x]', 'a[b][c]')), value), { minLength: 1, maxLength: 3 }) }),
      segment: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.record({ index: fc.integer({ min: 1, max: Math.max(1, segments - 1) }), value }) }),
      press: fc.nat(8),
      body: fc.oneof({ weight: 20, arbitrary: fc.constant('form' as const) }, { weight: 1, arbitrary: fc.constantFrom('json' as const, 'multipart' as const, 'text' as const, 'none' as const, 'utf16' as const) }),
      how: fc.array(encoding, { minLength: 1, maxLength: 3 }),
      method: otherMethod,
      accept,
      cookie: cookieCase,
    }) as fc.Arbitrary<FormCase>;
  }

  const resolve = (value: Value): string => (value instanceof Known ? (world.known[value.name] ?? '') : value);

  /** The name/value pairs a case sends for a form. */
  function pairsOf(form: PageForm, c: FormCase, browser: Browser): Array<[string, string]> {
    const pairs: Array<[string, string]> = [];
    const buttons = form.fields.filter((f) => f.kind === 'button');
    form.fields.forEach((field, i) => {
      const op = c.fields[i]!;
      // A form's CSRF token is the one of the page just read: the browser's latest.
      const fallback = field.name === '_csrf' && browser.csrf ? browser.csrf : field.value;
      switch (op.op) {
        case 'default':
          if (field.kind === 'button') {
            if (buttons.indexOf(field) === c.press % buttons.length) pairs.push([field.name, field.options[c.press % field.options.length] ?? '']);
          } else if (fallback !== undefined) pairs.push([field.name, fallback]);
          break;
        case 'option':
          pairs.push([field.name, field.options[op.index] ?? '']);
          break;
        case 'value':
          pairs.push([field.name, resolve(op.value)]);
          break;
        case 'twice':
          pairs.push([field.name, resolve(op.values[0])], [field.name, resolve(op.values[1])]);
          break;
        case 'nested':
          pairs.push([`${field.name}${op.suffix}`, resolve(op.value)]);
          break;
        case 'omit':
          break;
      }
    });
    for (const [name, value] of c.extra) pairs.push([resolve(name), resolve(value)]);
    return pairs;
  }

  function formRequest(form: PageForm, c: FormCase, browser: Browser) {
    const pairs = pairsOf(form, c, browser);
    const url = new URL(form.action);
    if (c.segment) {
      const parts = url.pathname.split('/');
      parts[Math.min(c.segment.index, parts.length - 1)] = pct(resolve(c.segment.value));
      url.pathname = parts.join('/');
    }
    const headers: Record<string, string> = {};
    let body: Buffer | undefined;
    if (form.method === 'GET') {
      const query = encodeForm(pairs, c.how).toString('latin1');
      url.search = query;
    } else if (c.body === 'json') {
      headers['content-type'] = 'application/json';
      body = Buffer.from(JSON.stringify(Object.fromEntries(pairs)));
    } else if (c.body === 'multipart') {
      headers['content-type'] = 'multipart/form-data; boundary=fuzz';
      body = Buffer.from(`${pairs.map(([k, v]) => `--fuzz\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('')}--fuzz--\r\n`);
    } else if (c.body === 'text') {
      headers['content-type'] = 'text/plain';
      body = encodeForm(pairs, c.how);
    } else if (c.body === 'none') {
      body = encodeForm(pairs, c.how);
    } else {
      headers['content-type'] = c.body === 'utf16' ? 'application/x-www-form-urlencoded; charset=utf-16' : 'application/x-www-form-urlencoded';
      body = encodeForm(pairs, c.how);
    }
    if (c.accept) headers.accept = c.accept;
    const cookie = changedCookies(browser, url, c.cookie);
    if (cookie !== undefined) headers.cookie = cookie;
    const method = c.method ?? form.method;
    return { method, url, headers, body: method === 'GET' || method === 'HEAD' ? undefined : body };
  }

  /** The Cookie header with one of the browser's cookies changed as the case says, or undefined to send the browser's own. */
  function changedCookies(browser: Browser, url: URL, c: CookieCase): string | undefined {
    const jar = [...browser.cookies(url)];
    if (!c || !jar.length) return undefined;
    const [name, value] = jar[c.index % jar.length]!;
    const replacement = c.raw ? c.value.replace(/[^\x21-\x7e]|[;,]/g, '') : pct(c.value);
    const changed: Record<typeof c.change, Array<[string, string]>> = {
      drop: [],
      flip: [[name, `${value.slice(0, -1)}${value.endsWith('A') ? 'B' : 'A'}`]],
      twice: [[name, replacement], [name, value]],
      value: [[name, replacement]],
    };
    return jar.flatMap(([n, v]) => (n === name ? changed[c.change] : [[n, v] as [string, string]])).map(([n, v]) => `${n}=${v}`).join('; ');
  }

  // ---- running targets -------------------------------------------------------------------------

  /** A seed of its own for each target, so that one target's cases do not depend on which others ran. */
  function seedOf(name: string): number {
    let hash = 2166136261;
    for (const ch of `${SEED}:${name}`) hash = Math.imul(hash ^ ch.charCodeAt(0), 16777619);
    return hash | 0;
  }

  /** Runs a property over `runs` cases; a failure is recorded (with its seed and counterexample) rather than thrown, so that one finding does not hide the next. */
  async function fuzz<T>(name: string, arbitrary: fc.Arbitrary<T>, send: (c: T) => Promise<void>, runs = RUNS): Promise<void> {
    if (ONLY && !name.includes(ONLY)) return;
    const t0 = Date.now();
    const details = await fc.check(fc.asyncProperty(arbitrary, send), { numRuns: runs, seed: seedOf(name) });
    spent.fuzz += Date.now() - t0;
    if (details.failed) {
      failures.push(`${name}\n  FUZZ_SEED=${SEED} FUZZ_ONLY='${name}' (fast-check seed ${details.seed}, path ${details.counterexamplePath})\n  counterexample: ${shorten(fc.stringify(details.counterexample))}\n${(details.errorInstance as Error | undefined)?.message ?? 'no error message'}`);
    }
  }

  function timing(name: string, started: number): void {
    if (STATS) (stats[name] ??= {})[0] = Date.now() - started;
  }

  function count(name: string, status: number): void {
    if (STATS) (stats[name] ??= {})[status] = (stats[name]![status] ?? 0) + 1;
  }

  /** Sends one request in `browser` (its cookies, and the cookies the answer sets) and checks the answer. */
  async function sendChecked(name: string, surface: Surface, browser: Browser, request: { method: string; url: URL; headers: Record<string, string>; body: Buffer | undefined }): Promise<Page> {
    let page: Page;
    // Said outright: Node's client sends a GET's or DELETE's body with neither a length nor chunks.
    if (request.body) request.headers['content-length'] = String(request.body.length);
    // A case with cookies of its own (changed ones) is another browser: what its answer sets (a
    // session cleared) stays out of the actor's, so the next cases are still the actor's.
    const via = request.headers.cookie === undefined ? browser : newBrowser();
    try {
      page = await via.request(request.url, { method: request.method, headers: request.headers, body: request.body });
    } catch (err) {
      throw new Error(`no answer: ${(err as Error).message}\n${describeRequest(request.method, request.url, request.headers, request.body)}`, { cause: err });
    }
    count(name, page.status);
    try {
      checkAnswer(surface, page, request.method);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${describeRequest(request.method, request.url, request.headers, request.body)}`, { cause: err });
    }
    return page;
  }

  /**
   * Fuzzes the pages the actor reaches (their query strings and path segments) and every form
   * on them. Before each form its page is read again, for fresh tokens; when the form is gone
   * (an earlier case deleted the application, signed the actor out, finished the flow), the
   * world is built anew and the form looked for there.
   */
  async function fuzzActor(actor: Actor): Promise<{ forms: number; pages: number; found: string[]; missing: string[] }> {
    let discovery = await discover(actor);
    // The pages first, in the world they were found in (the forms' cases may end it).
    let pages = 0;
    for (const target of discovery.pages.values()) {
      const name = `${actor.name}: ${target.identity}`;
      if (ONLY && !name.includes(ONLY)) continue;
      pages += 1;
      const browser = await actor.browser();
      const started = Date.now();
      await fuzz(name, pageCase(target), (c) => sendChecked(name, 'page', browser, pageRequest(target, c, browser)).then(() => undefined), Math.ceil(RUNS / 2));
      timing(name, started);
    }
    // Forms on fewer pages first: the header's (Sign out) end the session the others need.
    const queue = [...discovery.forms.values()].sort((a, b) => a.pages - b.pages);
    const seen = new Set(queue.map((t) => t.identity));
    const missing: string[] = [];
    let forms = 0;
    const harvest = (page: Page, from: URL | undefined) => {
      if (!isHtml(page) || !sameSite(page.url)) return;
      for (const form of formsIn(page.text, page.url)) {
        const identity = formIdentity(form, world.known);
        if (!seen.has(identity)) {
          seen.add(identity);
          // Next, while the state that shows it (a code entered, a setup started) still holds.
          queue.unshift({ identity, form, source: from, harvested: true, world: worlds, pages: 1 });
        }
      }
    };
    while (queue.length) {
      const target = queue.shift()!;
      const name = `${actor.name}: ${target.identity}`;
      if (ONLY && !name.includes(ONLY)) continue;
      let current = await refreshed(actor, target);
      // Gone from its page: read the site again; still gone (the application deleted, the actor
      // signed out or disabled), a new world, where the crawl finds it again.
      if (!current && !target.harvested) {
        discovery = await discover(actor);
        current = discovery.forms.get(target.identity)?.form;
        if (!current) {
          world = await buildWorld();
          discovery = await discover(actor);
          current = discovery.forms.get(target.identity)?.form;
        }
      }
      if (!current) {
        missing.push(target.identity);
        continue;
      }
      const form = current;
      forms += 1;
      const browser = await actor.browser();
      const pagesFollowed = new Set<string>();
      const started = Date.now();
      await fuzz(name, formCase(form, Object.keys(world.known)), async (c) => {
        const page = await sendChecked(name, 'page', browser, formRequest(form, c, browser));
        harvest(page, form.method === 'GET' ? page.url : undefined);
        // Where a form leads (a setup started, a code accepted) may hold forms of its own.
        const location = page.headers.get('location');
        if (form.method === 'POST' && location && page.status < 400) {
          const next = new URL(location, page.url);
          const template = templateOf(next.pathname, world.known);
          if (crawlable(next) && !pagesFollowed.has(template)) {
            pagesFollowed.add(template);
            const landed = await browser.follow(next, CALLBACK);
            try {
              checkAnswer('page', landed);
            } catch (err) {
              throw new Error(`${(err as Error).message}\n  on the page the form led to, ${landed.url.pathname}${landed.url.search}`, { cause: err });
            }
            harvest(landed, landed.url);
          }
        }
      });
      timing(name, started);
    }
    return { forms, pages, found: [...seen], missing };
  }

  /** The form as its page shows it now, or undefined when the page no longer offers it. */
  async function refreshed(actor: Actor, target: FormTarget): Promise<PageForm | undefined> {
    if (!target.source) return target.world === worlds ? target.form : undefined;
    const page = await (await actor.browser()).follow(target.source, CALLBACK);
    if (page.status !== 200 || !isHtml(page)) return undefined;
    return formsIn(page.text, page.url).find((form) => formIdentity(form, world.known) === target.identity);
  }

  interface PageCase {
    query: Array<[Value, Value]>;
    segment: { index: number; value: Value } | null;
    how: Encoding[];
    cookie: CookieCase;
  }

  function pageCase(target: PageTarget): fc.Arbitrary<PageCase> {
    const names = Object.keys(world.known);
    const value = valueFrom(names);
    const queryName = target.query.size ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...target.query) }, { weight: 1, arbitrary: nasty }) : nasty;
    return fc.record({
      query: fc.array(fc.tuple(queryName, value), { maxLength: 4 }),
      segment: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.record({ index: fc.integer({ min: 1, max: Math.max(1, target.url.pathname.split('/').length - 1) }), value }) }),
      how: fc.array(encoding, { minLength: 1, maxLength: 3 }),
      cookie: cookieCase,
    });
  }

  function pageRequest(target: PageTarget, c: PageCase, browser: Browser) {
    const url = new URL(target.url);
    if (c.segment) {
      const parts = url.pathname.split('/');
      parts[Math.min(c.segment.index, parts.length - 1)] = pct(resolve(c.segment.value));
      url.pathname = parts.join('/');
    }
    const pairs = c.query.map(([k, v]) => [resolve(k), resolve(v)] as [string, string]);
    url.search = pairs.length ? encodeForm(pairs, c.how).toString('latin1') : url.search;
    const cookie = changedCookies(browser, url, c.cookie);
    const headers: Record<string, string> = cookie === undefined ? {} : { cookie };
    return { method: 'GET', url, headers, body: undefined };
  }

  // ---- the API, from its OpenAPI document -----------------------------------------------------

  type Schema = Record<string, unknown>;

  interface Operation {
    method: string;
    /** The path template, with {param} placeholders, from the server's root. */
    path: string;
    params: Array<{ name: string; in: string; schema: Schema }>;
    body: Schema | undefined;
  }

  /** Every operation of the document the API serves, GETs first and DELETEs last (they end what the others need). */
  async function apiOperations(): Promise<{ operations: Operation[]; schemas: Record<string, Schema> }> {
    const res = await fetch(`${server.url}/apis/v2/openapi.json`);
    expect(res.status).to.equal(200);
    const doc = (await res.json()) as {
      servers: Array<{ url: string }>;
      paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string; schema: Schema }>; requestBody?: { content: Record<string, { schema: Schema }> } }>>;
      components?: { schemas?: Record<string, Schema> };
    };
    const base = new URL(doc.servers[0]!.url).pathname.replace(/\/$/, '');
    const order = ['get', 'head', 'post', 'put', 'patch', 'delete'];
    const operations: Operation[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      const shared = (item as { parameters?: Operation['params'] }).parameters ?? [];
      for (const [method, op] of Object.entries(item)) {
        if (!order.includes(method)) continue;
        operations.push({ method: method.toUpperCase(), path: `${base}${path}`, params: [...shared, ...(op.parameters ?? [])], body: op.requestBody?.content['application/json']?.schema });
      }
    }
    operations.sort((a, b) => order.indexOf(a.method.toLowerCase()) - order.indexOf(b.method.toLowerCase()));
    return { operations, schemas: doc.components?.schemas ?? {} };
  }

  const wrongType: fc.Arbitrary<unknown> = fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    nasty,
    fc.array(anyJson, { maxLength: 2 }),
    fc.dictionary(fc.string({ maxLength: 6 }), anyJson, { maxKeys: 2 }),
  );

  /** Values shaped by a JSON schema: valid ones, ones at and past its limits, and ones of the wrong type. */
  function shaped(schema: Schema | undefined, schemas: Record<string, Schema>, depth = 0): fc.Arbitrary<unknown> {
    let s = schema;
    for (let hops = 0; s && typeof s.$ref === 'string' && hops < 5; hops += 1) s = schemas[(s.$ref as string).split('/').pop()!];
    if (!s || depth > 4) return anyJson;
    const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (alternatives?.length) return fc.oneof(...alternatives.map((a) => shaped(a, schemas, depth + 1)), wrongType);
    const known = valueFrom(Object.keys(world.known));
    let valid: fc.Arbitrary<unknown> = anyJson;
    let edge: fc.Arbitrary<unknown> = nasty;
    const type = Array.isArray(s.type) ? (s.type as string[])[0] : (s.type as string | undefined);
    if (Array.isArray(s.enum)) {
      valid = fc.constantFrom(...(s.enum as unknown[]));
      edge = fc.constantFrom(...(s.enum as unknown[]).map((v) => (typeof v === 'string' ? v.toUpperCase() : String(v))), '', ' ');
    } else if (s.const !== undefined) {
      valid = fc.constant(s.const);
    } else if (type === 'string') {
      const min = Number(s.minLength ?? 0);
      const max = Number(s.maxLength ?? 200);
      valid = fc.oneof(fc.string({ minLength: min, maxLength: Math.min(max, 40) }), known, fc.constantFrom('https://app.example/cb', CALLBACK, 'https://a.example'));
      edge = fc.constantFrom('x'.repeat(max), 'x'.repeat(max + 1), 'é'.repeat(max), 'é'.repeat(max + 1), '😀'.repeat(max), 'İ'.repeat(max), ' '.repeat(max), 'x'.repeat(Math.max(0, min - 1)));
    } else if (type === 'integer' || type === 'number') {
      const min = Number(s.minimum ?? -(2 ** 31));
      const max = Number(s.maximum ?? 2 ** 31);
      valid = fc.integer({ min: Math.max(min, -1e9), max: Math.min(max, 1e9) });
      edge = fc.constantFrom(min, max, min - 1, max + 1, 0, -1, 0.5, 2 ** 31, 2 ** 53 + 2, 1e308, -1e308, -0, String(min), `${max}`);
    } else if (type === 'boolean') {
      valid = fc.boolean();
      edge = fc.constantFrom('true', 'false', 0, 1, 'on', '');
    } else if (type === 'array') {
      const item = shaped(s.items as Schema | undefined, schemas, depth + 1);
      const max = Number(s.maxItems ?? 10);
      valid = fc.array(item, { maxLength: Math.min(max, 4) });
      edge = fc.oneof(fc.array(item, { minLength: max + 1, maxLength: max + 3 }), fc.constant(Array.from({ length: 1100 }, (_, i) => `v${i}`)));
    } else if (type === 'object' || s.properties) {
      const properties = Object.entries((s.properties ?? {}) as Record<string, Schema>);
      const fields = fc.record(Object.fromEntries(properties.map(([k, p]) => [k, shaped(p, schemas, depth + 1)])), { requiredKeys: [] });
      valid = fields;
      edge = fc.tuple(fields, fc.dictionary(fc.oneof(nasty, fc.constantFrom('__proto__', 'constructor', 'id', 'clientID', 'createdAt', 'secrets')), anyJson, { minKeys: 1, maxKeys: 2 })).map(([a, b]) => ({ ...b, ...a }));
    }
    return fc.oneof({ weight: 5, arbitrary: valid }, { weight: 3, arbitrary: edge }, { weight: 2, arbitrary: wrongType });
  }

  /** Resolves the Known values anywhere in a JSON value. */
  function resolveDeep(value: unknown): unknown {
    if (value instanceof Known) return resolve(value);
    if (Array.isArray(value)) return value.map(resolveDeep);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveDeep(v)]));
    return value;
  }

  const asText = (value: unknown): string => (typeof value === 'string' ? value : value instanceof Known ? resolve(value) : (JSON.stringify(resolveDeep(value)) ?? ''));

  /** Bodies no JSON parser should take calmly. */
  const oddJson = fc.constantFrom(
    '', ' ', '{', '{"name":', 'null', '[]', '"x"', '1', 'true', '{"name":"a","name":"b"}', '\ufeff{}', '{"__proto__":{"polluted":1}}',
    '{"constructor":{"prototype":{"polluted":1}}}', '{"name":"\\ud800"}', '{"name":"a\\u0000b"}', `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`,
    `{"name":"${'a'.repeat(70_000)}"}`, '{"name":1e999}', "{'name':'a'}", '{"name":"a",}', 'NaN', '{"a":1}garbage',
  );

  type Auth = 'owner' | 'admin' | 'oauth' | 'none' | 'broken';

  interface ApiCase {
    params: Record<string, { real: boolean; value: unknown }>;
    query: Array<[Value, unknown]>;
    body: { kind: 'shaped' | 'json'; value: unknown } | { kind: 'text'; text: string; latin1: boolean } | { kind: 'none' };
    type: string | null;
    auth: Auth;
    scheme: string;
    how: Encoding[];
    method: string | null;
    accept: string | null;
  }

  function apiCase(op: Operation, schemas: Record<string, Schema>): fc.Arbitrary<ApiCase> {
    const pathParams = op.params.filter((p) => p.in === 'path');
    const queryParams = op.params.filter((p) => p.in === 'query');
    const queryName: fc.Arbitrary<Value> = queryParams.length ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...queryParams.map((p) => p.name)) }, { weight: 1, arbitrary: nasty }) : nasty;
    const queryValue = queryParams.length ? fc.oneof(...queryParams.map((p) => shaped(p.schema, schemas)), valueFrom(Object.keys(world.known))) : valueFrom(Object.keys(world.known));
    return fc.record({
      params: fc.record(Object.fromEntries(pathParams.map((p) => [p.name, fc.record({ real: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 2, arbitrary: fc.constant(false) }), value: fc.oneof(shaped(p.schema, schemas), valueFrom(Object.keys(world.known))) })]))),
      query: fc.array(fc.tuple(queryName, queryValue), { maxLength: 4 }),
      body: op.body
        ? fc.oneof(
            { weight: 8, arbitrary: shaped(op.body, schemas).map((value) => ({ kind: 'shaped' as const, value })) },
            { weight: 2, arbitrary: anyJson.map((value) => ({ kind: 'json' as const, value })) },
            { weight: 2, arbitrary: fc.tuple(oddJson, fc.boolean()).map(([text, latin1]) => ({ kind: 'text' as const, text, latin1 })) },
            { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
          )
        : fc.oneof({ weight: 4, arbitrary: fc.constant({ kind: 'none' as const }) }, { weight: 1, arbitrary: anyJson.map((value) => ({ kind: 'json' as const, value })) }),
      type: fc.oneof(
        { weight: 12, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: fc.constantFrom(null, 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/merge-patch+json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/vnd.api+json', 'json') },
      ),
      auth: fc.constantFrom<Auth>('owner', 'owner', 'owner', 'owner', 'owner', 'owner', 'admin', 'oauth', 'oauth', 'none', 'broken'),
      scheme: fc.constantFrom('Bearer', 'Bearer', 'Bearer', 'Bearer', 'Bearer', 'Bearer', 'bearer', 'BEARER', 'Bearer ', 'DPoP', 'Basic', 'Token', ''),
      how: fc.array(encoding, { minLength: 1, maxLength: 2 }),
      method: otherMethod,
      accept,
    }) as fc.Arbitrary<ApiCase>;
  }

  /** The world's value for a path parameter: `clientID` is the clientId, `{id}` after `/groups` the groupId. */
  function realParam(op: Operation, name: string): string | undefined {
    const byName = Object.keys(world.known).find((k) => k.toLowerCase() === name.toLowerCase());
    if (byName) return world.known[byName];
    const before = op.path.split(`/{${name}}`)[0]!.split('/').pop() ?? '';
    return world.known[`${before.replace(/s$/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase())}${name.charAt(0).toUpperCase()}${name.slice(1)}`];
  }

  function apiRequest(op: Operation, c: ApiCase, tokens: { owner: string; admin: string; oauth: string }) {
    const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const param = c.params[name]!;
      const real = param.real ? realParam(op, name) : undefined;
      return pct(real ?? asText(param.value));
    });
    const url = new URL(path, server.url);
    const pairs = c.query.map(([k, v]) => [asText(k), asText(v)] as [string, string]);
    if (pairs.length) url.search = encodeForm(pairs, c.how).toString('latin1');
    const headers: Record<string, string> = {};
    const token = c.auth === 'none' ? undefined : c.auth === 'broken' ? `${tokens.owner.slice(0, -1)}${tokens.owner.endsWith('A') ? 'B' : 'A'}` : tokens[c.auth];
    if (token !== undefined) headers.authorization = c.scheme ? `${c.scheme} ${token}` : token;
    let body: Buffer | undefined;
    if (c.body.kind === 'text') body = Buffer.from(c.body.text, c.body.latin1 ? 'latin1' : 'utf8');
    else if (c.body.kind !== 'none') body = Buffer.from(JSON.stringify(resolveDeep(c.body.value)) ?? 'null');
    if (body && c.type) headers['content-type'] = c.type;
    if (c.accept) headers.accept = c.accept;
    const method = c.method ?? op.method;
    return { method, url, headers, body: method === 'HEAD' ? undefined : body };
  }

  /**
   * The member's OAuth tokens in this world (authorize, sign in, consent, exchange), got again
   * when a case has ended them (revoked, or a refresh token presented twice). A case's token
   * request that gets new ones keeps them, as a client would.
   */
  const oauthOf = new WeakMap<World, { accessToken: string; refreshToken: string; idToken: string; browser: Browser }>();
  async function oauthTokens(): Promise<{ accessToken: string; refreshToken: string; idToken: string; browser: Browser }> {
    const cached = oauthOf.get(world);
    if (cached) {
      cached.accessToken = world.known.accessToken ?? cached.accessToken;
      const res = await fetch(`${server.url}/login/oauth/userinfo`, { headers: { authorization: `Bearer ${cached.accessToken}` } });
      if (res.status === 200) return cached;
    }
    let browser = cached?.browser ?? newBrowser();
    let callback: URL;
    try {
      callback = await authorize(browser, { clientId: world.app.clientId, redirectUri: CALLBACK, scope: 'openid profile email groups:read-write' }, world.member);
    } catch {
      // A case changed what the flow needs (the application's callback URL, its type): a new world.
      world = await buildWorld();
      browser = newBrowser();
      callback = await authorize(browser, { clientId: world.app.clientId, redirectUri: CALLBACK, scope: 'openid profile email groups:read-write' }, world.member);
    }
    const res = await tokenRequest(server.url, { form: { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: CALLBACK, client_id: world.app.clientId, client_secret: world.app.clientSecret } });
    expect(res.status, res.text).to.equal(200);
    const tokens = { accessToken: String(res.body.access_token), refreshToken: String(res.body.refresh_token), idToken: String(res.body.id_token), browser };
    oauthOf.set(world, tokens);
    Object.assign(world.known, { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, idToken: tokens.idToken, code: '' });
    return tokens;
  }

  /** Keeps the tokens a token request got, for the next cases to use. */
  function keepTokens(page: Page): void {
    if (page.status !== 200 || !(page.headers.get('content-type') ?? '').startsWith('application/json')) return;
    const body = JSON.parse(page.text) as Record<string, unknown>;
    if (typeof body.access_token === 'string' && typeof body.refresh_token === 'string') Object.assign(world.known, { accessToken: body.access_token, refreshToken: body.refresh_token });
  }

  /** True when the world's tokens, group and application still answer as they did when it was built. */
  async function apiWorldWorks(): Promise<boolean> {
    const get = (path: string, token: string) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } }).then((res) => res.status);
    const answers = await Promise.all([
      get('/apis/v2/user', world.ownerToken),
      get('/apis/v2/user', world.adminToken),
      get(`/apis/v2/groups/${world.group.id}`, world.ownerToken),
      get(`/apis/v2/oauth-apps/${world.app.clientId}`, world.ownerToken),
    ]);
    return answers.every((status) => status === 200);
  }

  // ---- the OAuth endpoints, from discovery -----------------------------------------------------

  /** The PKCE verifier of the codes a case may redeem, and its challenge. */
  const VERIFIER = 'v'.repeat(43);
  const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

  /** A code just issued to the member, with the PKCE challenge of VERIFIER: what a case naming `known.code` redeems. */
  async function freshCode(browser: Browser): Promise<string> {
    try {
      // Signs in and consents again when a case has signed the member out or ended the grant.
      const callback = await authorize(browser, { clientId: world.app.clientId, redirectUri: CALLBACK, scope: 'openid groups:read-write', extra: { code_challenge: CHALLENGE, code_challenge_method: 'S256' } }, world.member);
      return callback.searchParams.get('code') ?? '';
    } catch {
      return '';
    }
  }

  const AUTHORIZATION_PARAMETERS = [
    'client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'prompt', 'max_age', 'response_mode',
    'request_uri', 'request', 'login_hint', 'id_token_hint', 'ui_locales', 'claims', 'claims_locales', 'acr_values', 'resource', 'dpop_jkt', 'display', 'authorization_details',
  ];
  const CLIENT_PARAMETERS = ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type'];

  const k = (name: string) => new Known(name);
  const AUTHORIZATION_REQUEST: Array<[string, Value]> = [
    ['client_id', k('clientId')], ['redirect_uri', k('callback')], ['response_type', 'code'], ['scope', 'openid groups:read-only'], ['state', 's'], ['code_challenge', CHALLENGE], ['code_challenge_method', 'S256'],
  ];

  /**
   * What each endpoint discovery may name takes, how its client shows who it is, and requests
   * it would grant (`bases`), which a case may start from and then change, so that cases also
   * reach what lies past the first check.
   */
  const OAUTH_ENDPOINTS: Record<string, { methods: string[]; params: string[]; auth: 'client' | 'bearer' | 'browser' | 'none'; bases: Array<Array<[string, Value]>> }> = {
    authorization_endpoint: { methods: ['GET', 'POST'], params: AUTHORIZATION_PARAMETERS, auth: 'browser', bases: [AUTHORIZATION_REQUEST] },
    pushed_authorization_request_endpoint: { methods: ['POST'], params: [...AUTHORIZATION_PARAMETERS, ...CLIENT_PARAMETERS], auth: 'client', bases: [AUTHORIZATION_REQUEST] },
    token_endpoint: {
      methods: ['POST'],
      params: ['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope', 'device_code', 'resource', 'audience', 'subject_token', ...CLIENT_PARAMETERS],
      auth: 'client',
      bases: [
        [['grant_type', 'authorization_code'], ['code', k('code')], ['redirect_uri', k('callback')], ['code_verifier', VERIFIER]],
        [['grant_type', 'refresh_token'], ['refresh_token', k('refreshToken')]],
        [['grant_type', 'urn:ietf:params:oauth:grant-type:device_code'], ['device_code', k('deviceCode')]],
        [['grant_type', 'client_credentials'], ['scope', 'groups:read-only']],
      ],
    },
    device_authorization_endpoint: { methods: ['POST'], params: ['scope', 'resource', 'acr_values', 'claims', ...CLIENT_PARAMETERS], auth: 'client', bases: [[['scope', 'openid groups:read-only']]] },
    revocation_endpoint: { methods: ['POST'], params: ['token', 'token_type_hint', ...CLIENT_PARAMETERS], auth: 'client', bases: [[['token', k('accessToken')]], [['token', k('refreshToken')], ['token_type_hint', 'refresh_token']]] },
    introspection_endpoint: { methods: ['POST'], params: ['token', 'token_type_hint', ...CLIENT_PARAMETERS], auth: 'client', bases: [[['token', k('accessToken')]], [['token', k('refreshToken')], ['token_type_hint', 'refresh_token']]] },
    userinfo_endpoint: { methods: ['GET', 'POST'], params: ['access_token', 'claims', 'scope'], auth: 'bearer', bases: [[]] },
    end_session_endpoint: { methods: ['GET', 'POST'], params: ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id', 'ui_locales', 'logout_hint'], auth: 'browser', bases: [[['client_id', k('clientId')], ['id_token_hint', k('idToken')], ['state', 's']]] },
    jwks_uri: { methods: ['GET'], params: [], auth: 'none', bases: [[]] },
  };

  const OAUTH_VALUES = fc.constantFrom(
    'authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code', 'password', 'implicit',
    'urn:ietf:params:oauth:grant-type:jwt-bearer', 'urn:ietf:params:oauth:grant-type:token-exchange', 'code', 'token', 'id_token', 'code id_token', 'none',
    'openid', 'openid profile email', 'groups:read-only', 'groups:read-write', 'offline_access', 'admin', 'openid offline_access groups:read-write', 'groups:read-only groups:read-only',
    'login', 'consent', 'select_account', 'create', 'S256', 'plain', VERIFIER, 'a'.repeat(129), CHALLENGE,
    'query', 'fragment', 'form_post', 'jwt', 'query.jwt', 'access_token', 'id_token', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    'eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.', 'eyJhbGciOiJIUzI1NiJ9.e30.x', '{"userinfo":{"email":null}}', '{"id_token":{"acr":{"essential":true}}}', '{',
    'urn:ietf:params:oauth:request_uri:abc', 'https://api.example/', 'urn:x', '0', '-1', '1e9', 'en', 'de-DE', '[{"type":"x"}]',
  );

  type ClientAuth = 'basic' | 'none' | 'wrong' | 'garbage';

  interface OAuthCase {
    /** The request it starts from (one of the endpoint's bases), if any; then `params` replace those of the same name, or come in addition. */
    base: number | null;
    replace: boolean;
    params: Array<[Value, Value]>;
    placement: 'body' | 'query' | 'both';
    type: string | null;
    auth: ClientAuth;
    garbage: string;
    signedIn: boolean;
    dpop: string | null;
    how: Encoding[];
  }

  function oauthCase(params: string[], bases: number): fc.Arbitrary<OAuthCase> {
    const names: fc.Arbitrary<Value> = params.length ? fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...params) }, { weight: 1, arbitrary: nasty }) : nasty;
    const values: fc.Arbitrary<Value> = fc.oneof({ weight: 3, arbitrary: OAUTH_VALUES }, { weight: 3, arbitrary: valueFrom(Object.keys(world.known)) });
    return fc.record({
      base: fc.oneof({ weight: 2, arbitrary: fc.nat(Math.max(0, bases - 1)) }, { weight: 1, arbitrary: fc.constant(null) }),
      replace: fc.boolean(),
      params: fc.oneof({ weight: 1, arbitrary: fc.constant([]) }, { weight: 3, arbitrary: fc.array(fc.tuple(names, values), { minLength: 1, maxLength: 5 }) }),
      placement: fc.constantFrom('body', 'body', 'body', 'body', 'query', 'both'),
      type: fc.oneof({ weight: 10, arbitrary: fc.constant('application/x-www-form-urlencoded') }, { weight: 1, arbitrary: fc.constantFrom(null, 'application/json', 'text/plain', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded; charset=iso-8859-1') }),
      auth: fc.constantFrom<ClientAuth>('basic', 'basic', 'basic', 'none', 'none', 'wrong', 'garbage'),
      garbage: fc.constantFrom('Basic', 'Basic !!!', `Basic ${Buffer.from('nocolon').toString('base64')}`, `Basic ${Buffer.from(':').toString('base64')}`, `Basic ${Buffer.from('%ZZ:%ZZ').toString('base64')}`, `Basic ${Buffer.from('a:%E0%A4%A').toString('base64')}`, `Basic ${Buffer.from(`${'a'.repeat(3000)}:b`).toString('base64')}`, 'Bearer x', 'DPoP x', 'Basic ' + Buffer.from('é:é', 'latin1').toString('base64')),
      signedIn: fc.boolean(),
      dpop: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('x', 'eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2In0.e30.x', 'a.b.c', '') }),
      how: fc.array(encoding, { minLength: 1, maxLength: 2 }),
    }) as fc.Arbitrary<OAuthCase>;
  }

  /** The parameters a case sends: its base request changed by its own parameters. */
  function oauthParameters(bases: Array<Array<[string, Value]>>, c: OAuthCase): Array<[Value, Value]> {
    const base = c.base === null ? [] : (bases[c.base] ?? []);
    if (!c.replace) return [...base, ...c.params];
    const replaced = new Set(c.params.map(([name]) => resolve(name)));
    return [...base.filter(([name]) => !replaced.has(name)), ...c.params];
  }

  function oauthRequest(endpoint: URL, method: string, auth: string, c: OAuthCase, parameters: Array<[Value, Value]>, accessToken: string) {
    const pairs = parameters.map(([name, value]) => [resolve(name), resolve(value)] as [string, string]);
    const url = new URL(endpoint);
    const headers: Record<string, string> = {};
    let body: Buffer | undefined;
    const encoded = encodeForm(pairs, c.how);
    if (method === 'GET' || c.placement !== 'body') url.search = encoded.toString('latin1');
    if (method === 'POST' && c.placement !== 'query') {
      body = encoded;
      if (c.type) headers['content-type'] = c.type;
    }
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    if (auth === 'client' && c.auth === 'basic') headers.authorization = basic(world.app.clientId, world.app.clientSecret);
    if (auth === 'client' && c.auth === 'wrong') headers.authorization = basic(world.app.clientId, 'hs_wrong');
    if (auth === 'bearer' && c.auth !== 'none') headers.authorization = c.auth === 'garbage' ? c.garbage : `Bearer ${c.auth === 'wrong' ? accessToken.slice(0, -2) : accessToken}`;
    if (auth === 'client' && c.auth === 'garbage') headers.authorization = c.garbage;
    if (c.dpop !== null) headers.dpop = c.dpop;
    return { method, url, headers, body };
  }

  function report(): void {
    if (failures.length) {
      const found = failures.splice(0);
      expect.fail(`${found.length} target(s) failed (FUZZ_SEED=${SEED}):\n\n${found.join('\n\n')}`);
    }
  }

  /** A target kind FUZZ_ONLY does not name, when it names one (`API:`, `owner:` …). */
  const elsewhere = (prefix: string) => ONLY !== undefined && /^(visitor|member|owner|admin|API|OAuth):/.test(ONLY) && !ONLY.startsWith(prefix);

  /**
   * Forms deep in what each actor reaches: the crawl got there (a sign-in that failed, or a link
   * the crawl no longer follows, would leave it with the sign-in form alone).
   */
  const DEEPEST: Record<string, string[]> = {
    visitor: ['POST /signup', 'POST /reset-password', 'POST /interaction/{id}/login', 'POST /login/device'],
    member: ['POST /account/settings/profile', 'POST /account/settings/tokens/new', 'POST /interaction/{id}/confirm'],
    owner: ['POST /groups/{groupPath}/settings/developer/apps/{clientId} ', 'POST /groups/{groupPath}/settings/members ', 'POST /groups/{groupPath}/settings/delete '],
    admin: ['POST /admin/users/{n}/disable ', 'GET /admin/users '],
  };

  for (const who of ['visitor', 'member', 'owner', 'admin'] as const) {
    it(`every form and page ${{ visitor: 'a signed-out visitor', member: 'a group member', owner: 'a group owner', admin: 'a site administrator' }[who]} reaches answers well-formed, without a 5xx or a fault's insides`, async function () {
      if (elsewhere(`${who}:`)) return;
      const actor = who === 'visitor' ? visitor : signedIn(who);
      const { forms, pages, found, missing } = await fuzzActor(actor);
      if (STATS) console.log(`${who}: ${forms} forms, ${pages} pages${missing.length ? `; not found again: ${missing.join(', ')}` : ''}`);
      if (!ONLY) for (const deep of DEEPEST[who]!) expect(found.some((identity) => identity.startsWith(deep)), `${who} reaches ${deep}: ${found.join(', ')}`).to.equal(true);
      report();
    });
  }

  it('every operation of the OpenAPI document answers well-formed JSON, without a 5xx or a fault\'s insides', async function () {
    if (elsewhere('API:')) return;
    const { operations, schemas } = await apiOperations();
    expect(operations.length, 'operations in the document').to.be.greaterThan(0);
    // A world of its own: the pages' cases may have disabled its people or deleted its application.
    world = await buildWorld();
    for (const op of operations) {
      const name = `API: ${op.method} ${op.path}`;
      if (ONLY && !name.includes(ONLY)) continue;
      if (!(await apiWorldWorks())) world = await buildWorld();
      const oauth = (await oauthTokens()).accessToken;
      const tokens = { owner: world.ownerToken, admin: world.adminToken, oauth };
      const browser = newBrowser();
      const started = Date.now();
      await fuzz(name, apiCase(op, schemas), (c) => sendChecked(name, 'api', browser, apiRequest(op, c, tokens)).then(() => undefined), RUNS * 3);
      timing(name, started);
    }
    report();
  });

  it('every OAuth endpoint discovery names answers a JSON error or the site\'s page, without a 5xx or a fault\'s insides', async function () {
    if (elsewhere('OAuth:')) return;
    const metadata = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    const named = Object.entries(metadata).filter(([key, value]) => (key.endsWith('_endpoint') || key === 'jwks_uri') && typeof value === 'string');
    expect(named.map(([key]) => key)).to.include.members(['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint']);
    world = await buildWorld();
    for (const [key, address] of named) {
      // An endpoint this file does not know yet is fuzzed too, with parameters of any name.
      const endpoint = OAUTH_ENDPOINTS[key] ?? { methods: ['GET', 'POST'], params: [], auth: 'client' as const, bases: [[]] };
      for (const method of endpoint.methods) {
        const name = `OAuth: ${method} ${key}`;
        if (ONLY && !name.includes(ONLY)) continue;
        if (!(await apiWorldWorks())) world = await buildWorld();
        const tokens = await oauthTokens();
        const url = new URL(address as string);
        expect(url.origin).to.equal(new URL(server.url).origin);
        const started = Date.now();
        await fuzz(name, oauthCase(endpoint.params, endpoint.bases.length), async (c) => {
          const parameters = oauthParameters(endpoint.bases, c);
          if (parameters.some((pair) => pair.some((v) => v instanceof Known && v.name === 'code'))) world.known.code = await freshCode(tokens.browser);
          const browser = endpoint.auth === 'browser' && c.signedIn ? tokens.browser : newBrowser();
          keepTokens(await sendChecked(name, 'oauth', browser, oauthRequest(url, method, endpoint.auth, c, parameters, world.known.accessToken ?? tokens.accessToken)));
        }, RUNS * 3);
        timing(name, started);
      }
    }
    report();
  });
});
