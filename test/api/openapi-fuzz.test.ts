import { expect } from 'chai';
import fc from 'fast-check';
import { openApiDocument } from '../../src/api/openapi.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { appAccess, groupAccess, makeApp, makeGroup, makeUser, personalToken } from '../helpers/factories.js';
import { documentChecker, inlineRefs, type Json } from '../helpers/openapi.js';
import { setSiteAdmin } from '../../src/services/admin.js';
import { generateClientSecret } from '../../src/services/apps.js';
import { addMember } from '../../src/services/groups.js';
import { createResource } from '../../src/services/resources/manage.js';
import { createWebhook } from '../../src/services/webhooks/manage.js';

/**
 * The API fuzzed from its own OpenAPI document: for every operation, path and query parameters
 * and request bodies built from the document's schemas (valid values, values at and past their
 * limits, wrong types, missing and unknown fields, control characters, URLs of every kind), sent
 * with the owner's personal access token, with none or with a wrong one. Every answer must be
 * one the document gives for that operation: never a 5xx, a documented status, a JSON body that
 * matches its schema, and the headers it documents. (test/edge/fuzz.test.ts fuzzes the same
 * operations among every other input, for well-formed answers with the limits off; this file
 * holds the API to its document.)
 *
 * FUZZ_SEED=<n> repeats a run (a failure prints it); FUZZ_RUNS=<n> sets the cases per operation.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);

/** The operations, read from the document the service builds (the live one is checked against in the cases). */
const OPERATIONS = Object.entries(openApiDocument('https://idp.example').paths as Json).flatMap(([path, operations]) =>
  Object.keys(operations as Json).map((method) => ({ path, method })),
);

const CONTROL = ['\u0000', '\u0001', '\t', '\n', '\r', '\u001b', '\u001f', '\u007f'];
const withControl = fc.tuple(fc.string({ maxLength: 6 }), fc.constantFrom(...CONTROL), fc.string({ maxLength: 6 })).map((parts) => parts.join(''));
const GOOD_URLS = ['https://app.example/cb', 'https://app.example', 'http://127.0.0.1:8080/cb', 'http://[::1]/cb', 'http://localhost:3000/cb', 'https://例え.jp/'];
const BAD_URLS = ['http://app.example/cb', 'https://app.example/cb#fragment', '/relative', 'app.example/cb', 'ftp://app.example/', 'javascript:alert(1)', 'https://ex ample.com/'];
/** A value of the wrong type for whatever the schema says. */
const wrongType: fc.Arbitrary<unknown> = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.double(), fc.string({ maxLength: 8 }), fc.constant([]), fc.constant({}));

/**
 * Values a JSON schema describes, now and then one at or past its limits, or of the wrong type;
 * `valid`: only values within the schema, so that cases also get past every check.
 */
function valueOf(schema: Json, depth = 0, valid = false): fc.Arbitrary<unknown> {
  return valid ? fitting(schema, depth, true) : fc.oneof({ weight: 15, arbitrary: fitting(schema, depth, false) }, { weight: 1, arbitrary: wrongType });
}

/** Either the valid arbitrary alone, or it with the others that probe the limits. */
function probing<T>(valid: boolean, within: fc.Arbitrary<T>, ...beyond: Array<fc.Arbitrary<T>>): fc.Arbitrary<T> {
  return valid ? within : fc.oneof({ weight: 5, arbitrary: within }, ...beyond.map((arbitrary) => ({ weight: 1, arbitrary })));
}

function fitting(s: Json, depth: number, valid: boolean): fc.Arbitrary<unknown> {
  if (depth > 4) return fc.jsonValue({ maxDepth: 1 });
  if (Array.isArray(s.anyOf)) return fc.oneof(...(s.anyOf as Json[]).map((a) => valueOf(a, depth + 1, valid)));
  if (Array.isArray(s.enum)) return probing(valid, fc.constantFrom(...(s.enum as unknown[])), fc.constantFrom('', 'OTHER'));
  if (s.const !== undefined) return fc.constant(s.const);
  switch (s.type) {
    case 'string':
      return text(s, valid);
    case 'integer': {
      const min = Number(s.minimum ?? -(2 ** 31));
      const max = Number(s.maximum ?? 2 ** 31);
      return probing(valid, fc.integer({ min, max }), fc.constantFrom(min - 1, max + 1, 0.5, 2 ** 53 + 2));
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const max = Number(s.maxItems ?? 5);
      const item = valueOf((s.items as Json | undefined) ?? {}, depth + 1, valid);
      return probing(valid, fc.array(item, { minLength: Number(s.minItems ?? 0), maxLength: Math.min(max, 4) }), fc.array(item, { minLength: max + 1, maxLength: max + 1 }));
    }
    case 'object':
      return objectOf(s, depth, valid);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function text(s: Json, valid: boolean): fc.Arbitrary<string> {
  const min = Number(s.minLength ?? 0);
  const max = Number(s.maxLength ?? 100);
  if (s.format === 'uri') {
    return probing(valid, fc.constantFrom(...GOOD_URLS), fc.constantFrom(...BAD_URLS), fc.webUrl({ withFragments: true, withQueryParameters: true }), withControl);
  }
  if (typeof s.pattern === 'string') {
    return probing(valid, fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= min && v.length <= max), fc.string({ maxLength: 10 }), withControl);
  }
  // Words, so that a valid one is not all spaces (which a trimmed field reads as empty), of a
  // length the schema allows: a filter alone would wait for ever for a long one (a secret's 16).
  const shortest = Math.max(0, min - 1);
  const longest = Math.max(shortest, Math.min(max, 30) - 1);
  const words = fc.stringMatching(new RegExp(`^[A-Za-z0-9][A-Za-z0-9 .,'-]{${shortest},${longest}}$`)).filter((v) => v.length >= min && v.length <= max);
  return probing(
    valid,
    words,
    fc.string({ minLength: min, maxLength: Math.min(max, 30) }),
    fc.constantFrom('x'.repeat(max), 'x'.repeat(max + 1), 'é'.repeat(max), ' '.repeat(Math.min(max, 3)), 'x'.repeat(Math.max(0, min - 1))),
    withControl,
  );
}

/** An object of the schema's properties, the required ones mostly there, now and then one unknown field. */
function objectOf(s: Json, depth: number, valid: boolean): fc.Arbitrary<Record<string, unknown>> {
  const properties = Object.fromEntries(Object.entries((s.properties ?? {}) as Json).map(([name, schema]) => [name, valueOf(schema as Json, depth + 1, valid)]));
  const required = (s.required ?? []) as string[];
  const fields = probing(valid, fc.record(properties, { requiredKeys: required }), fc.record(properties, { requiredKeys: [] }));
  if (valid) return fields;
  const unknown = fc.option(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 1 })), { freq: 10 });
  return fc.tuple(fields, unknown).map(([object, extra]) => (extra ? { ...object, [extra[0]]: extra[1] } : object));
}

/** A seed of its own for each operation, so that one operation's cases do not depend on which others ran. */
function seedOf(name: string): number {
  let hash = 2166136261;
  for (const ch of `${SEED}:${name}`) hash = Math.imul(hash ^ ch.charCodeAt(0), 16777619);
  return hash | 0;
}

/** A path segment fetch() sends as it is: an empty one or a dot segment would name another path. */
const segment = (value: unknown) => String(value);
const sendable = (value: string) => value !== '' && value !== '.' && value !== '..';

describeEachProfile('API fuzzed from its OpenAPI document', (profile) => {
  const idp = useIdp(profile);
  let doc: Json;
  let expectDocumented: ReturnType<typeof documentChecker>;
  let owner: { id: number; token: string };
  let adminToken: string;

  before(async () => {
    doc = (await call(idp, '/apis/v2/openapi.json')).body;
    expectDocumented = documentChecker(doc);
    const user = await makeUser(idp.db);
    owner = { id: user.id, token: await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] }) };
    const siteAdmin = await makeUser(idp.db);
    await setSiteAdmin(idp.db, { userId: 0, ip: null, admin: true }, siteAdmin, true);
    adminToken = await personalToken(idp.db, siteAdmin.id, { scopes: ['admin'] });
  });

  /** Operations fuzzed with a site administrator's token too: those that change nothing but the site's own settings. */
  const AS_ADMIN = new Set(['/admin/client-registration']);

  /**
   * Real values for the path parameters, made anew for each operation: a group of the owner's,
   * its application and a secret of it, its webhook and a delivery of it (the member added), and
   * a resource of it.
   */
  async function world(): Promise<Record<string, string>> {
    const group = await makeGroup(idp.db, owner.id);
    const app = await makeApp(idp.db, owner.id, group.id);
    const secret = await generateClientSecret(idp.db, await appAccess(idp.db, owner.id, app.clientId));
    // Made past the target check (the server refuses private targets): the sender refuses to send to it, at once.
    const hook = await createWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await groupAccess(idp.db, owner.id, group.id), {
      url: 'http://127.0.0.1:9/hook',
      secret: 'a-secret-of-some-length',
      events: ['member.added'],
    });
    await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
    const delivery = (await idp.db('webhook_deliveries').where({ webhook_id: hook.id }).first()) as { id: number | string };
    const { resource } = await createResource({ db: idp.db, issuer: idp.url }, await groupAccess(idp.db, owner.id, group.id), {
      identifier: `https://fuzzed-${group.id}-${process.pid}.example.test/mcp`,
      name: 'Fuzzed tools',
      scopes: [{ name: 'tools:read', description: 'Read your tools' }],
    });
    return { id: String(group.id), clientID: app.clientId, secretID: String(secret.id), hookId: String(hook.id), deliveryId: String(delivery.id), resourceId: String(resource.id) };
  }

  for (const { path, method } of OPERATIONS) {
    it(`answers ${method.toUpperCase()} ${path} only as the document says`, async function () {
      this.timeout(60_000);
      const operation = inlineRefs(doc.paths[path][method], doc) as Json;
      const parameters = (operation.parameters ?? []) as Json[];
      const known = await world();
      const pathValue = (p: Json) =>
        fc.oneof({ weight: 4, arbitrary: fc.constant(known[p.name as string] ?? '1') }, { weight: 1, arbitrary: valueOf(p.schema as Json).map(segment).filter(sendable) });
      const queryValue = (p: Json) => valueOf(p.schema as Json).map((v) => String(v));
      const bodySchema = operation.requestBody?.content?.['application/json']?.schema as Json | undefined;
      const request = fc.record({
        path: fc.record(Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name as string, pathValue(p)]))),
        // The documented parameters, and now and then one the operation does not take (any operation's query is checked at the edge).
        query: fc.record({ ...Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name as string, queryValue(p)])), extra: fc.oneof(withControl, fc.string({ maxLength: 8 })) }, { requiredKeys: [] }),
        body: bodySchema
          ? fc.oneof(
              { weight: 4, arbitrary: valueOf(bodySchema, 0, true) },
              { weight: 6, arbitrary: valueOf(bodySchema) },
              { weight: 1, arbitrary: fc.constant(undefined) },
              { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
            )
          : fc.constant(undefined),
        token: AS_ADMIN.has(path) ? fc.constantFrom('admin', 'admin', 'admin', 'owner', 'none', 'wrong') : fc.constantFrom('owner', 'owner', 'owner', 'owner', 'none', 'wrong'),
      });
      const name = `${method.toUpperCase()} ${path}`;
      try {
        await fc.assert(
          fc.asyncProperty(request, async (c) => {
            const url = path.replace(/\{(\w+)\}/g, (_, param: string) => encodeURIComponent(String(c.path[param])));
            const body = c.body === undefined ? undefined : JSON.stringify(c.body);
            const token = { owner: owner.token, admin: adminToken, none: undefined, wrong: 'ha_000000000000000000000000000000000000' }[c.token];
            const res = await call(idp, `/apis/v2${url}`, {
              method: method.toUpperCase(),
              token,
              query: c.query as Record<string, string>,
              ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body }),
            });
            expect(res.status, `${name}: ${res.text.slice(0, 300)}`).to.be.below(500);
            expectDocumented(method, path, res);
          }),
          { numRuns: RUNS, seed: seedOf(name) },
        );
      } catch (err) {
        (err as Error).message = `FUZZ_SEED=${SEED}\n${(err as Error).message}`;
        throw err;
      }
    });
  }
});
