import { connect } from 'node:net';
import { expect } from 'chai';
import fc from 'fast-check';
import { openApiDocument } from '../../src/api/openapi.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, type Browser } from '../helpers/browser.js';
import { makeClient, personalToken } from '../helpers/factories.js';

/**
 * A property-based sweep of everything a stranger can send: every operation of the OpenAPI
 * document, the OAuth endpoints and every page form, with control characters, over-range
 * integers, over-long strings and over-long or odd headers. Whatever arrives, the answer is
 * never a 5xx and never shows a stack trace. Requests go over a raw socket, so that even bytes a
 * well-behaved client library refuses to send (a control character in a header) reach the server.
 */

const RUNS_PER_ROUTE = Number(process.env.SWEEP_RUNS_PER_ROUTE ?? 30);

interface RawAnswer {
  status: number;
  text: string;
}

/** One HTTP/1.1 request written byte for byte; the status and body of the answer. */
function rawRequest(port: number, head: string, body: Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      const text = Buffer.concat(chunks).toString('utf8');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1];
      if (status) resolve({ status: Number(status), text });
      else reject(new Error(`no HTTP answer (${err?.message ?? 'connection closed'}) to ${JSON.stringify(head.slice(0, 300))}`));
    };
    socket.setTimeout(15_000, () => socket.destroy(new Error('no answer within 15 s')));
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', settle);
    socket.on('close', () => settle());
    // Written, not ended: a client that half-closes has, to Node's http server, abandoned its request.
    socket.on('connect', () => socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body])));
  });
}

// ---- values a stranger might send -------------------------------------------------------------

/** Percent-encodes every byte but the unreserved ones (a lone surrogate becomes U+FFFD's bytes). */
function pct(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const CONTROL = ['\u0000', '\u0001', '\u0007', '\t', '\n', '\r', '\u001b', '\u001f', '\u007f'];
const controlString = fc
  .array(fc.oneof(fc.constantFrom(...CONTROL), fc.constantFrom('a', 'Z', '0', ' ', '%', '/', '.', "'", '<', 'é')), { minLength: 1, maxLength: 12 })
  .map((parts) => parts.join(''));
const numberLike = fc.constantFrom('0', '-1', '1', '2147483647', '2147483648', '4294967296', '9999999999', '99999999999999999999', '1e10', '0x10', '1.5', 'NaN', '-0', '+1', ' 1', '١');
const longString = fc.oneof(
  fc.integer({ min: 65, max: 300 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 1000, max: 9000 }).map((n) => 'é'.repeat(n)),
  fc.constant('a'.repeat(70_000)),
);
const oddString = fc.constantFrom('%FF%FE', "' or 1=1 --", '<script>alert(1)</script>', '../../etc/passwd', '%00', '%ZZ', '%E0%A4%A', '\uD800', '😀', '', ' ', 'null', '[]', '{}', 'a&b=c');
const nasty = fc.oneof(controlString, numberLike, longString, oddString, fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }));

/** A URL path segment or query value: percent-encoded (so it always forms a request line), now and then left raw. */
const encoded = fc.tuple(nasty, fc.integer({ min: 0, max: 9 })).map(([value, dice]) => (dice === 0 ? value.replace(/[\s?#/]/g, '') : pct(value)));

const jsonValue: fc.Arbitrary<unknown> = fc.oneof(
  nasty,
  fc.integer(),
  fc.constantFrom(2 ** 31, 2 ** 53, -(2 ** 63), 1e308, -0),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(nasty, { maxLength: 3 }),
  fc.dictionary(nasty, nasty, { maxKeys: 3 }),
);

const headerValue = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 100, max: 3000 }).map((n) => 'h'.repeat(n)) },
  { weight: 1, arbitrary: fc.constant('h'.repeat(12_000)) },
  { weight: 3, arbitrary: controlString.map((s) => s.replace(/[\r\n]/g, '')) },
  { weight: 3, arbitrary: nasty.map((s) => s.replace(/[\r\n]/g, '')) },
);
/** Usually no odd header (so the request reaches the handlers), now and then a few. */
const extraHeaders = fc.oneof(
  { weight: 3, arbitrary: fc.constant([] as Array<[string, string]>) },
  {
    weight: 2,
    arbitrary: fc.array(
      fc.tuple(fc.constantFrom('X-Forwarded-For', 'X-Forwarded-Host', 'X-Forwarded-Proto', 'X-Request-Id', 'Accept', 'Accept-Language', 'Cookie', 'Referer', 'User-Agent', 'If-None-Match', 'Origin', 'Authorization'), headerValue),
      { minLength: 1, maxLength: 2 },
    ),
  },
);

/** Mostly true: most cases should get past the CSRF check and the bearer check to the handlers. */
const mostly = fc.integer({ min: 0, max: 4 }).map((n) => n > 0);

/** Values a form or query could well hold, with the service's real ids among them. */
function plausible(known: Known): fc.Arbitrary<string> {
  return fc.oneof(
    fc.stringMatching(/^[a-z0-9-]{1,20}$/),
    fc.constantFrom(
      known.clientId, known.groupPath, String(known.groupId), String(known.userId),
      'groups:read-only', 'groups:read-write', 'openid', 'profile', 'authorization_code', 'refresh_token', 'code',
      'https://app.example/cb', 'http://127.0.0.1:9999/callback', 'private', 'public', 'owner', 'member', '7', '30', 'never', '1', '20', 'S256',
    ),
  );
}

// ---- what the sweep sends ----------------------------------------------------------------------

interface Known {
  groupId: number;
  groupPath: string;
  clientId: string;
  userId: number;
}

interface Route {
  name: string;
  method: string;
  /** Path template with {param} placeholders. */
  path: string;
  query: string[];
  /** Field names of the body; empty: no body. */
  fields: string[];
  body: 'json' | 'form' | 'none';
  auth: 'bearer' | 'page' | 'basic' | 'none';
  /** A real value for a path parameter, so the request also reaches the handlers behind the 404s. */
  real: (known: Known) => Record<string, string>;
}

function apiRoutes(issuer: string): Route[] {
  const doc = openApiDocument(issuer) as {
    paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }>; requestBody?: { content: Record<string, { schema: { $ref?: string; properties?: object } }> } }>>;
    components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
  };
  const routes: Route[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      const schema = op.requestBody?.content['application/json']?.schema;
      const properties = schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop()!]?.properties : (schema?.properties as Record<string, unknown> | undefined);
      routes.push({
        name: `${method.toUpperCase()} /apis/v2${path}`,
        method: method.toUpperCase(),
        path: `/apis/v2${path}`,
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        fields: Object.keys(properties ?? {}),
        body: op.requestBody ? 'json' : 'none',
        auth: 'bearer',
        real: (k) => ({ id: String(k.groupId), clientID: k.clientId, secretID: '1' }),
      });
    }
  }
  return routes;
}

const OAUTH_ROUTES: Route[] = [
  { name: 'GET authorize', method: 'GET', path: '/login/oauth/authorize', query: ['client_id', 'redirect_uri', 'state', 'scope', 'response_type', 'response_mode', 'code_challenge', 'code_challenge_method', 'prompt', 'nonce', 'max_age'], fields: [], body: 'none', auth: 'none', real: () => ({}) },
  { name: 'POST token', method: 'POST', path: '/login/oauth/access_token', query: ['client_id', 'client_secret', 'code', 'redirect_uri', 'grant_type'], fields: ['client_id', 'client_secret', 'code', 'redirect_uri', 'grant_type', 'refresh_token', 'code_verifier', 'scope'], body: 'form', auth: 'basic', real: () => ({}) },
  { name: 'POST revoke', method: 'POST', path: '/login/oauth/revoke', query: [], fields: ['token', 'token_type_hint', 'client_id', 'client_secret'], body: 'form', auth: 'basic', real: () => ({}) },
  { name: 'POST introspect', method: 'POST', path: '/login/oauth/introspect', query: [], fields: ['token', 'token_type_hint', 'client_id', 'client_secret'], body: 'form', auth: 'basic', real: () => ({}) },
  { name: 'GET userinfo', method: 'GET', path: '/login/oauth/userinfo', query: ['access_token'], fields: [], body: 'none', auth: 'bearer', real: () => ({}) },
  { name: 'GET logout', method: 'GET', path: '/login/oauth/logout', query: ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id', 'ui_locales'], fields: [], body: 'none', auth: 'page', real: () => ({}) },
  { name: 'GET resume', method: 'GET', path: '/login/oauth/authorize/{uid}', query: [], fields: [], body: 'none', auth: 'page', real: () => ({ uid: 'x' }) },
  { name: 'GET discovery', method: 'GET', path: '/.well-known/openid-configuration', query: ['x'], fields: [], body: 'none', auth: 'none', real: () => ({}) },
  { name: 'GET jwks', method: 'GET', path: '/login/oauth/jwks', query: [], fields: [], body: 'none', auth: 'none', real: () => ({}) },
];

const page = (method: string, path: string, fields: string[], query: string[] = []): Route => ({
  name: `${method} ${path}`,
  method,
  path,
  query,
  fields: method === 'POST' ? ['_csrf', ...fields] : fields,
  body: method === 'POST' ? 'form' : 'none',
  auth: 'page',
  real: (k) => ({ path: k.groupPath, clientId: k.clientId, userId: String(k.userId), secretId: '1', id: '1', uid: 'x' }),
});

const PAGE_ROUTES: Route[] = [
  page('GET', '/login', [], ['return_to']),
  page('POST', '/login', ['login', 'password', 'return_to']),
  page('GET', '/signup', []),
  page('POST', '/signup', ['username', 'email', 'name', 'password']),
  page('GET', '/groups', [], ['notice']),
  page('POST', '/groups/new', ['_once', 'name', 'path', 'description', 'visibilityLevel']),
  page('GET', '/groups/{path}', [], ['notice']),
  page('POST', '/groups/{path}/settings', ['name', 'description', 'visibilityLevel']),
  page('GET', '/groups/{path}/settings/members', []),
  page('POST', '/groups/{path}/settings/members', ['_once', 'user', 'role']),
  page('GET', '/groups/{path}/settings/members/{userId}/role', []),
  page('POST', '/groups/{path}/settings/members/{userId}/role', ['role']),
  page('POST', '/groups/{path}/settings/members/{userId}/remove', []),
  page('GET', '/groups/{path}/settings/audit', []),
  page('GET', '/groups/{path}/settings/developer', [], ['notice']),
  page('GET', '/groups/{path}/settings/developer/apps', []),
  page('POST', '/groups/{path}/settings/developer/apps', ['_once', 'name', 'homepageURL', 'description', 'callbackURL']),
  page('GET', '/groups/{path}/settings/developer/apps/{clientId}', []),
  page('POST', '/groups/{path}/settings/developer/apps/{clientId}', ['name', 'homepageURL', 'description', 'callbackURL']),
  page('POST', '/groups/{path}/settings/developer/apps/{clientId}/secrets', ['_once']),
  page('GET', '/groups/{path}/settings/developer/apps/{clientId}/secrets', []),
  page('POST', '/groups/{path}/settings/developer/apps/{clientId}/secrets/{secretId}/revoke', []),
  page('GET', '/groups/{path}/settings/developer/apps/{clientId}/delete', []),
  page('GET', '/account/settings/tokens', [], ['notice']),
  page('POST', '/account/settings/tokens', ['name', 'scopes', 'expiration']),
  page('POST', '/account/settings/tokens/new', ['_once', 'name', 'scopes', 'expiration']),
  page('GET', '/account/settings/tokens/new', []),
  page('POST', '/account/settings/tokens/{id}/revoke', []),
  page('GET', '/account/settings/applications', []),
  page('POST', '/account/settings/applications/{clientId}/revoke', []),
  page('GET', '/interaction/{uid}', []),
  page('POST', '/interaction/{uid}/login', ['login', 'password']),
  page('POST', '/interaction/{uid}/confirm', []),
  page('POST', '/interaction/{uid}/abort', []),
  page('GET', '/signup/sent', [], ['return_to']),
  page('GET', '/signup/confirm', [], ['token', 'return_to']),
  page('POST', '/signup/confirm', ['token', 'username', 'password', 'return_to']),
  page('GET', '/change-email', [], ['token']),
  page('GET', '/account/settings/profile', [], ['notice']),
  page('POST', '/account/settings/profile', ['name', 'email', 'current_password']),
  page('GET', '/reset-password/done', [], ['return_to', 'notice']),
  page('POST', '/reset-password/done/remove', ['item', 'id', 'return_to']),
  page('POST', '/reset-password/done/remove-all', ['return_to']),
];

interface Case {
  params: Record<string, { real: boolean; value: string }>;
  query: Array<[string, string]>;
  fields: Array<[string, unknown]>;
  validCsrf: boolean;
  headers: Array<[string, string]>;
  contentType: string | undefined;
  authorized: boolean;
}

function caseFor(route: Route, known: Known): fc.Arbitrary<Case> {
  const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const value = fc.oneof({ weight: 2, arbitrary: plausible(known) }, { weight: 2, arbitrary: nasty });
  const param = fc.record({ real: fc.boolean(), value: fc.oneof(plausible(known).map(pct), encoded) });
  return fc.record({
    params: fc.tuple(...names.map(() => param)).map((values) => Object.fromEntries(names.map((n, i) => [n, values[i]!]))),
    query: fc.array(fc.tuple(route.query.length ? fc.oneof(fc.constantFrom(...route.query), encoded) : encoded, fc.oneof(value.map(pct), encoded)), { maxLength: 4 }),
    fields: fc.array(fc.tuple(route.fields.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...route.fields) }, { weight: 1, arbitrary: nasty }) : nasty, fc.oneof(value, jsonValue)), { maxLength: 5 }),
    validCsrf: mostly,
    headers: extraHeaders,
    contentType: fc.option(fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/x-www-form-urlencoded; charset=utf-16'), { freq: 4 }),
    authorized: mostly,
  }) as fc.Arbitrary<Case>;
}

function formEncode(fields: Array<[string, unknown]>): string {
  return fields.map(([k, v]) => `${pct(k)}=${pct(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`).join('&');
}

describeEachProfile('a property-based sweep of every route never answers 5xx', function (profile) {
  this.timeout(120_000);
  const server = useIdp(profile);
  let port: number;
  let known: Known;
  let token: string;
  let basic: string;
  let browser: Browser;

  before(async () => {
    port = Number(new URL(server.local).port);
    const { user: owner, group, clientId, clientSecret } = await makeClient(server.db);
    known = { groupId: group.id, groupPath: group.path, clientId, userId: owner.id };
    token = await personalToken(server.db, owner.id, { scopes: ['groups:read-write'] });
    basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    browser = await signIn(server.url, owner);
  });

  async function send(route: Route, c: Case): Promise<RawAnswer> {
    const real = route.real(known);
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => (c.params[name]!.real && real[name] ? pct(real[name]) : c.params[name]!.value));
    const query = c.query.map(([k, v]) => `${k}=${v}`).join('&');
    const target = query ? `${path}?${query}` : path;
    const fields = route.body === 'form' && route.auth === 'page' ? [['_csrf', c.validCsrf ? browser.csrf : 'x'] as [string, unknown], ...c.fields] : c.fields;
    let body = Buffer.alloc(0);
    let type = c.contentType;
    if (route.body === 'json') {
      body = Buffer.from(JSON.stringify(Object.fromEntries(fields)));
      type ??= 'application/json';
    } else if (route.body === 'form') {
      body = Buffer.from(formEncode(fields));
      type ??= 'application/x-www-form-urlencoded';
    }
    const headers: Array<[string, string]> = [['Host', `127.0.0.1:${port}`], ['Connection', 'close']];
    if (c.authorized && route.auth === 'bearer') headers.push(['Authorization', `Bearer ${token}`]);
    if (c.authorized && route.auth === 'basic') headers.push(['Authorization', basic]);
    if (c.authorized && route.auth === 'page') headers.push(['Cookie', browser.cookieHeader()]);
    if (type && route.body !== 'none') headers.push(['Content-Type', type]);
    headers.push(...c.headers, ['Content-Length', String(body.length)]);
    const head = `${route.method} ${target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${Buffer.from(v, 'utf8').toString('latin1')}`).join('\r\n')}\r\n\r\n`;
    return rawRequest(port, head, body);
  }

  let started = 0;
  before(() => {
    started = Date.now();
  });
  const stats: Record<string, Record<number, number>> = {};
  after(() => {
    if (process.env.SWEEP_STATS) console.log(JSON.stringify(stats, null, 0).replace(/\},/g, '},\n'));
  });
  const routes = () => [...apiRoutes('http://127.0.0.1'), ...OAUTH_ROUTES, ...PAGE_ROUTES];

  it('covers every operation of the OpenAPI document', () => {
    const names = new Set(routes().map((r) => r.name));
    const doc = openApiDocument('http://127.0.0.1') as { paths: Record<string, Record<string, unknown>> };
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops)) expect(names.has(`${method.toUpperCase()} /apis/v2${path}`)).to.equal(true);
    }
  });

  for (const route of routes()) {
    it(`${route.name}: no 5xx, no stack trace`, async () => {
      await fc.assert(
        fc.asyncProperty(caseFor(route, known), async (c) => {
          const answer = await send(route, c);
          if (process.env.SWEEP_STATS) (stats[route.name] ??= {})[answer.status] = ((stats[route.name] ??= {})[answer.status] ?? 0) + 1;
          if (answer.status >= 500) throw new Error(`${answer.status}: ${answer.text.slice(0, 400)}`);
          if (/\n\s+at .+:\d+:\d+\)?\n/.test(answer.text)) throw new Error(`a stack trace in the answer: ${answer.text.slice(0, 400)}`);
        }),
        { numRuns: RUNS_PER_ROUTE },
      );
    });
  }

  it('stays within its time budget', () => {
    expect(Date.now() - started).to.be.below(60_000);
  });
});
