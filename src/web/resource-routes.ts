import Router from '@koa/router';
import type { Context } from 'koa';
import { resourceMetadata, resourceMetadataUrl } from '../presenters/resource.js';
import type { GroupRow } from '../db/groups.js';
import { ConflictError, ValidationError, type AppError } from '../errors.js';
import { accessOf } from '../http/load-group.js';
import { pageT, type Translate } from '../i18n.js';
import { parseId } from '../ids.js';
import { ROUTES } from '../provider/configuration.js';
import {
  createResource,
  deleteResource,
  MAX_RESOURCES_PER_GROUP,
  regenerateResourceSecret,
  resourceOfGroup,
  resourcesOf,
  updateResource,
  type Resource,
  type ResourceDeps,
} from '../services/resources/manage.js';
import { MAX_IDENTIFIER_LENGTH, MAX_SCOPES } from '../services/resources/rules.js';
import { toIso } from '../time.js';
import { TOKEN_FORMATS } from '../vocabulary.js';
import { formFields, type WebDeps } from './context.js';
import { flashBox } from './flash.js';
import { LABELS, sentence } from './form-errors.js';
import { createOnce, issueOnceKey, sentOnceKey, submissionOf } from './one-time-key.js';
import { pageGroupLoader } from './group-routes.js';
import { groupRecordLoader, pageNotice } from './group-record.js';
import { render } from './render.js';

type Ctx = Context;

/** One row of the Scopes table: a scope's name and what the consent page says it lets an application do. */
interface ScopeRow {
  name: string;
  description: string;
}

/** The resource form as typed: its scope rows as they came, blank ones too, so that an error names the row it is about. */
interface ResourceForm {
  identifier: string;
  name: string;
  tokenFormat: string;
  scopes: ScopeRow[];
}

/** The notices of `?notice=`, each a sentence of `resources:notices` (locales/<language>/resources.json). */
const NOTICES: ReadonlySet<string> = new Set(['created', 'repeated', 'saved', 'secret', 'deleted']);

/** Blank rows the Register form starts with, and the edit form offers after the resource's scopes. */
const BLANK_ROWS = 3;

/** At most this many rows of a submitted form are read: more than the scopes a resource can have, so that too many is said as such. */
const MAX_ROWS = MAX_SCOPES + 10;

/**
 * A field the form repeats, one value a row. The body parser gives a list, or, past its array
 * limit (20), an object keyed by position: both read here in order.
 */
function formRows(ctx: Ctx, name: string): string[] {
  const value = ((ctx.request as { body?: Record<string, unknown> }).body ?? {})[name];
  const values = Array.isArray(value)
    ? value
    : value !== null && typeof value === 'object'
      ? Object.entries(value).filter(([key]) => /^\d+$/.test(key)).sort(([a], [b]) => Number(a) - Number(b)).map(([, v]) => v)
      : [value];
  return values.slice(0, MAX_ROWS).map((v) => (typeof v === 'string' ? v : ''));
}

function resourceForm(ctx: Ctx): ResourceForm {
  const form = formFields(ctx);
  const names = formRows(ctx, 'scopeName');
  const descriptions = formRows(ctx, 'scopeDescription');
  const scopes = Array.from({ length: Math.max(names.length, descriptions.length) }, (_, i) => ({ name: names[i] ?? '', description: descriptions[i] ?? '' }));
  return { identifier: form.identifier ?? '', name: form.name ?? '', tokenFormat: form.tokenFormat ?? '', scopes };
}

const isBlank = (row: ScopeRow) => row.name.trim() === '' && row.description.trim() === '';

/** The rows that say something, each with its place in the form: a blank row is ignored. */
function keptRows(values: ResourceForm): Array<{ row: ScopeRow; at: number }> {
  return values.scopes.map((row, at) => ({ row, at })).filter(({ row }) => !isBlank(row));
}

/** The form's words for the services: the scopes without the blank rows. */
function resourceInput(values: ResourceForm) {
  return { identifier: values.identifier, name: values.name, tokenFormat: values.tokenFormat, scopes: keptRows(values).map(({ row }) => row) };
}

/** The rows a form shows: those given, then blank ones, as many as a resource may still add (at least `atLeast` rows in all). */
function withBlankRows(rows: ScopeRow[], atLeast = 0): ScopeRow[] {
  const wanted = Math.max(atLeast, Math.min(MAX_SCOPES, rows.length + BLANK_ROWS));
  return [...rows, ...Array.from({ length: Math.max(0, wanted - rows.length) }, () => ({ name: '', description: '' }))];
}

function formOf(resource: Resource): ResourceForm {
  return { identifier: resource.identifier, name: resource.name, tokenFormat: resource.tokenFormat, scopes: withBlankRows(resource.scopes.map((s) => ({ ...s }))) };
}

const EMPTY_FORM = (): ResourceForm => ({ identifier: '', name: '', tokenFormat: 'opaque', scopes: withBlankRows([], BLANK_ROWS) });

/** The resource form's labels in the page's language; its errors start with LABELS.resource's English words, which render translates. */
function resourceLabels(t: Translate): Record<keyof typeof LABELS.resource, string> {
  return Object.fromEntries(Object.keys(LABELS.resource).map((field) => [field, t(`resources:labels.${field}`)])) as Record<keyof typeof LABELS.resource, string>;
}

/**
 * Where the resource's own server serves its metadata (RFC 9728 §3.1): `/.well-known/oauth-protected-resource`
 * put between the identifier's host and its path.
 */
function wellKnownOf(identifier: string): string {
  const url = new URL(identifier);
  const path = url.pathname === '/' ? '' : url.pathname;
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

/**
 * The errors of the resource form, each beside its field, a scope's beside its row (`scope-<row>`,
 * with which of its two boxes is wrong). Any other error goes to the error page.
 */
function formErrorsOf(err: unknown, values: ResourceForm): { errors: Record<string, string>; scopeParts: Record<number, 'name' | 'description'> } {
  if (!(err instanceof ValidationError || err instanceof ConflictError)) throw err;
  const labels: Record<string, string> = LABELS.resource;
  const kept = keptRows(values);
  const errors: Record<string, string> = {};
  const scopeParts: Record<number, 'name' | 'description'> = {};
  for (const problem of err.problems) {
    const row = problem.field === 'scopes' && problem.index !== undefined ? kept[problem.index]?.at : undefined;
    const part = /^scopes\[\d*\]\.(name|description) (.*)$/s.exec(problem.message);
    if (row !== undefined && part) {
      errors[`scope-${row}`] ??= `Scope ${part[1]} ${part[2]}`;
      scopeParts[row] ??= part[1] as 'name' | 'description';
      continue;
    }
    if (!Object.hasOwn(labels, problem.field)) throw err;
    const twice = problem.field === 'scopes' ? /^names (.+) twice$/s.exec(problem.problem ?? '') : null;
    errors[problem.field] ??= twice ? `Scopes name ${twice[1]} twice: list each scope once`
      : problem.problem ? `${labels[problem.field]} ${problem.problem}` : sentence(problem.message);
  }
  return { errors, scopeParts };
}

/**
 * Group settings → Resources: the APIs the group runs (an MCP server, say) that applications get
 * tokens for with `resource=` (RFC 8707). Owners only, by the same policy as the API (the services
 * check it again on every change). The Register form carries a one-time key, and every POST
 * redirects to a page (Post/Redirect/Get). An introspection secret reaches the resource's page
 * once, in the one-time flash, never in a URL; the pages never show a stored one.
 */
export function resourceRoutes(deps: WebDeps): Router {
  const { db } = deps;
  const { issuer } = deps.config;
  const resourceDeps: ResourceDeps = { db, issuer };
  const router = new Router({ prefix: '/groups/:path/settings/resources' });
  const ownersOnly = pageGroupLoader(deps)('manage-resources');

  const resourcesUrl = (group: GroupRow) => `/groups/${encodeURIComponent(group.path)}/settings/resources`;
  const resourceUrl = (group: GroupRow, id: number) => `${resourcesUrl(group)}/${id}`;
  /** The flash that carries a new introspection secret to the resource's page. */
  const secretFlashFor = (resource: Resource) => `resource-secret:${resource.clientId}`;

  const notice = (ctx: Ctx, t: Translate) => pageNotice(ctx, t, NOTICES, 'resources');
  const loadResource = groupRecordLoader('resource', (access, id) => resourceOfGroup(db, access, id), 'This group has no resource at this address.');
  const resourceOf = (ctx: Ctx) => ctx.state.resource as Resource;

  /** What both forms show besides their values. */
  function formLocals(t: Translate) {
    return { labels: resourceLabels(t), tokenFormats: TOKEN_FORMATS, limits: { maxIdentifier: MAX_IDENTIFIER_LENGTH, maxScopes: MAX_SCOPES } };
  }

  router.get('/', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const t = pageT(ctx);
    render(ctx, 'groups/settings/resources', {
      title: t('resources:titles.list', { group: group.name }),
      group,
      tab: 'resources',
      resourcesUrl: resourcesUrl(group),
      resources: (await resourcesOf(db, access)).map((resource) => ({ ...resource, href: resourceUrl(group, resource.id) })),
      maxResources: MAX_RESOURCES_PER_GROUP,
      flash: notice(ctx, t),
    });
  });

  function renderNew(ctx: Ctx, group: GroupRow, extra: { values?: ResourceForm; errors?: Record<string, string>; scopeParts?: Record<number, string>; onceKey?: string } = {}, status = 200) {
    const t = pageT(ctx);
    render(ctx, 'groups/settings/resource-new', {
      title: t('resources:titles.new', { group: group.name }),
      group,
      tab: 'resources',
      resourcesUrl: resourcesUrl(group),
      values: extra.values ?? EMPTY_FORM(),
      errors: extra.errors ?? {},
      scopeParts: extra.scopeParts ?? {},
      onceKey: extra.onceKey ?? issueOnceKey(ctx),
      ...formLocals(t),
    }, status);
  }

  router.get('/new', ownersOnly, (ctx) => {
    renderNew(ctx, accessOf(ctx).group);
  });

  router.post('/new', ownersOnly, async (ctx) => {
    const access = accessOf(ctx);
    const { group } = access;
    const values = resourceForm(ctx);
    let outcome: { created: { resource: Resource; secret: string } } | { repeated: string | undefined };
    try {
      outcome = await createOnce(db, () => createResource(resourceDeps, access, resourceInput(values), submissionOf(ctx, 'resource')));
    } catch (err) {
      const { errors, scopeParts } = formErrorsOf(err, values);
      // The rows as typed, and blank ones again to add more.
      renderNew(ctx, group, { values: { ...values, scopes: withBlankRows(values.scopes, BLANK_ROWS) }, errors, scopeParts, onceKey: sentOnceKey(ctx) }, (err as AppError).status);
      return;
    }
    if ('created' in outcome) {
      const { resource, secret } = outcome.created;
      flashBox(ctx).put({ for: secretFlashFor(resource), secret });
      ctx.redirect(`${resourceUrl(group, resource.id)}?notice=created`);
      return;
    }
    const id = parseId(outcome.repeated);
    ctx.redirect(id === undefined ? resourcesUrl(group) : `${resourceUrl(group, id)}?notice=repeated`);
  });

  function renderResource(
    ctx: Ctx,
    group: GroupRow,
    resource: Resource,
    extra: { values?: ResourceForm; errors?: Record<string, string>; scopeParts?: Record<number, string>; newSecret?: string; flash?: string | null } = {},
    status = 200,
  ) {
    const t = pageT(ctx);
    render(ctx, 'groups/settings/resource', {
      title: t('resources:titles.resource', { resource: resource.name, group: group.name }),
      group,
      tab: 'resources',
      resourcesUrl: resourcesUrl(group),
      resourceUrl: resourceUrl(group, resource.id),
      resource: { ...resource, createdAt: toIso(resource.createdAt) },
      newSecret: extra.newSecret ?? null,
      introspectionUrl: `${issuer}${ROUTES.introspection}`,
      jwksUrl: `${issuer}${ROUTES.jwks}`,
      metadataUrl: resourceMetadataUrl(issuer, resource.identifier),
      metadataJson: JSON.stringify(resourceMetadata(issuer, resource), null, 2),
      wellKnownUrl: wellKnownOf(resource.identifier),
      values: extra.values ?? formOf(resource),
      errors: extra.errors ?? {},
      scopeParts: extra.scopeParts ?? {},
      flash: extra.flash === undefined ? notice(ctx, t) : extra.flash,
      ...formLocals(t),
    }, status);
  }

  /** A resource's page; right after its registration or a new secret, with that secret, this once. */
  router.get('/:id', ownersOnly, loadResource, (ctx) => {
    const { group } = accessOf(ctx);
    const resource = resourceOf(ctx);
    const fresh = flashBox(ctx).take(secretFlashFor(resource));
    const t = pageT(ctx);
    const key = typeof ctx.query.notice === 'string' ? ctx.query.notice : '';
    // A repeated submission still shows a secret its first copy left unread (a double click's first page never arrives).
    const flash = fresh ? t(key === 'secret' ? 'resources:notices.secretNow' : 'resources:notices.createdNow') : undefined;
    renderResource(ctx, group, resource, fresh ? { newSecret: fresh.secret, flash } : {});
  });

  router.post('/:id', ownersOnly, loadResource, async (ctx) => {
    const access = accessOf(ctx);
    const resource = resourceOf(ctx);
    const values = resourceForm(ctx);
    try {
      await updateResource(resourceDeps, access, resource.id, resourceInput(values));
    } catch (err) {
      const { errors, scopeParts } = formErrorsOf(err, values);
      renderResource(ctx, access.group, resource, { values: { ...values, scopes: withBlankRows(values.scopes, BLANK_ROWS) }, errors, scopeParts, flash: null }, (err as AppError).status);
      return;
    }
    ctx.redirect(`${resourceUrl(access.group, resource.id)}?notice=saved`);
  });

  // The address Generate a new secret posts to, opened on its own: the resource.
  router.get('/:id/secret', ownersOnly, loadResource, (ctx) => {
    ctx.redirect(resourceUrl(accessOf(ctx).group, resourceOf(ctx).id));
  });

  router.post('/:id/secret', ownersOnly, loadResource, async (ctx) => {
    const access = accessOf(ctx);
    const { resource, secret } = await regenerateResourceSecret(resourceDeps, access, resourceOf(ctx).id);
    flashBox(ctx).put({ for: secretFlashFor(resource), secret });
    ctx.redirect(`${resourceUrl(access.group, resource.id)}?notice=secret`);
  });

  // Deleting asks first on a page of its own, as deleting a webhook does.
  router.get('/:id/delete', ownersOnly, loadResource, (ctx) => {
    const { group } = accessOf(ctx);
    const resource = resourceOf(ctx);
    render(ctx, 'groups/settings/resource-delete', {
      title: pageT(ctx)('resources:titles.delete', { group: group.name }),
      group,
      tab: 'resources',
      resource,
      resourceUrl: resourceUrl(group, resource.id),
    });
  });

  router.post('/:id/delete', ownersOnly, loadResource, async (ctx) => {
    const access = accessOf(ctx);
    await deleteResource(db, access, resourceOf(ctx).id);
    ctx.redirect(`${resourcesUrl(access.group)}?notice=deleted`);
  });

  return router;
}
