import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expect } from 'chai';
import type { ApiResponse } from './api.js';

// ajv-formats is CommonJS with a default export; under ESM its function may sit one level down.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- walks arbitrary JSON Schema documents
export type Json = Record<string, any>;

/** A JSON Schema 2020-12 validator, strict: an unknown keyword or format in the document is an error, not silently ignored. */
export function strictAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

/** Replaces every local `$ref` ("#/…") by what it points at, so each schema or response stands alone. */
export function inlineRefs(node: unknown, doc: Json): unknown {
  if (Array.isArray(node)) return node.map((n) => inlineRefs(n, doc));
  if (!node || typeof node !== 'object') return node;
  const ref = (node as Json).$ref;
  if (typeof ref === 'string') {
    expect(ref, 'only local references').to.match(/^#\//);
    const target = ref
      .slice(2)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((at, key) => (at as Json | undefined)?.[key], doc);
    expect(target, `unresolved ${ref}`).to.be.an('object');
    return inlineRefs(target, doc);
  }
  return Object.fromEntries(Object.entries(node as Json).map(([k, v]) => [k, inlineRefs(v, doc)]));
}

/**
 * A check of live responses against the OpenAPI document `doc`: the status is documented for the
 * operation, the body matches its JSON schema (each schema compiled once), and each header it
 * documents as required is sent.
 */
export function documentChecker(doc: Json, ajv: Ajv2020 = strictAjv()) {
  const compiled = new Map<string, ValidateFunction>();
  return function expectDocumented(method: string, template: string, res: ApiResponse): void {
    const name = `${method.toUpperCase()} ${template}`;
    const operation = doc.paths?.[template]?.[method];
    expect(operation, `${name} is documented`).to.be.an('object');
    const documented = operation.responses[String(res.status)] ?? operation.responses.default;
    expect(documented, `${name} documents status ${res.status} (${res.text.slice(0, 300)})`).to.be.an('object');
    const response = inlineRefs(documented, doc) as Json;
    if (res.status === 204) {
      expect(res.text, 'a 204 has no body').to.equal('');
      expect(response.content).to.equal(undefined);
    } else {
      const schema = response.content?.['application/json']?.schema;
      expect(schema, `a JSON schema for ${res.status}`).to.be.an('object');
      expect(res.headers.get('content-type'), `${name} ${res.status}`).to.match(/^application\/json/);
      const key = `${name} ${res.status}`;
      let validate = compiled.get(key);
      if (!validate) compiled.set(key, (validate = ajv.compile(inlineRefs(schema, doc) as Json)));
      expect(validate(res.body), `${key}: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 600)}`).to.equal(true);
    }
    for (const [header, described] of Object.entries((response.headers ?? {}) as Json)) {
      // A header documented with `required: false` is sent in some cases only (its description says which).
      if (described.required === false) continue;
      expect(res.headers.get(header), `${name} ${res.status} sends the documented ${header} header`).to.be.a('string');
    }
  };
}
