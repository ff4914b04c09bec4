import { z } from 'zod';
import { controlCharacterRule } from '../control-characters.js';
import { bigRecordIdText, clientId, recordIdText } from '../ids.js';
import { appJson, createdAppJson, newSecretJson, secretJson } from '../presenters/app.js';
import { groupJson } from '../presenters/group.js';
import { adminUserJson, apiUserJson } from '../presenters/user.js';
import { auditEventJson } from '../presenters/audit.js';
import { deliveryJson, webhookJson } from '../presenters/webhook.js';
import { MAX_WEBHOOKS_PER_GROUP, RETRY_FOR_MS } from '../services/webhooks/manage.js';
import { newWebhook, webhookChanges } from '../services/webhooks/rules.js';
import { KEPT_FOR_MS } from '../services/webhooks/sender.js';
import { redeliveryRequest } from './webhooks/routes.js';
import { resourceJson, resourceWithSecretJson } from '../presenters/resource.js';
import { MAX_RESOURCES_PER_GROUP } from '../services/resources/manage.js';
import { newResource, resourceChanges } from '../services/resources/rules.js';
import { newResourceSecretRequest } from './resources/routes.js';
import { clientRegistrationRequest, MAX_USER_QUERY } from './admin/routes.js';
import { clientRegistrationJson } from '../presenters/client-registration.js';
import { MAX_ACTIVE_SECRETS } from '../services/apps.js';
import { OUTAGE_RETRY_AFTER_S } from '../storage.js';
import * as rules from '../services/rules.js';
import { credentialReport, MAX_REPORTED } from '../services/leaked-credentials.js';
import { groupChanges } from './groups/routes.js';
import { REPORT_ACCEPTED } from './credentials/routes.js';
import { errorJson, MAX_BODY_KIB } from './errors.js';
import { pageOf } from './pagination.js';

/**
 * The OpenAPI 3.1 description of /apis/v2, served at /apis/v2/openapi.json. Its schemas are
 * generated from the zod schemas that parse the requests and shape the responses, so each limit
 * is written once, in the rules; the paths and the prose are declared here. A test validates it
 * with a real OpenAPI validator and checks live responses against it, so it stays true.
 */

// The document's components: a schema that holds one of these refers to it by name.
const ErrorBody = errorJson.meta({ id: 'Error' });
// Names, paths and usernames as the rules that admit them state them (lengths, patterns).
const Group = groupJson.extend({ name: rules.name, path: rules.groupPath }).required({ role: true }).meta({ id: 'Group' });
const ClientSecret = secretJson.meta({ id: 'ClientSecret' });
const secrets = z.array(ClientSecret).max(MAX_ACTIVE_SECRETS);
const namedApp = appJson.extend({ name: rules.name });
const OAuthApp = namedApp.meta({ id: 'OAuthApp' });
const OAuthAppWithSecrets = namedApp
  .extend({ secrets, authorizedUsers: z.int().min(0).describe('How many users have authorized the application (and hold a grant of it)') })
  .meta({ id: 'OAuthAppWithSecrets' });
const CreatedOAuthApp = createdAppJson.extend({ name: rules.name, secrets }).meta({ id: 'CreatedOAuthApp' });
const NewClientSecret = newSecretJson.meta({ id: 'NewClientSecret' });
const User = apiUserJson.extend({ username: rules.username.optional().describe(apiUserJson.shape.username.description ?? '') }).meta({ id: 'User' });
const NewOAuthApp = rules.newApplication.meta({ id: 'NewOAuthApp' });
const OAuthAppChanges = rules.applicationChanges.meta({ id: 'OAuthAppChanges' });
const GroupChanges = groupChanges.meta({ id: 'GroupChanges' });
const AuditEvent = auditEventJson.meta({ id: 'AuditEvent' });
const AdminUser = adminUserJson.extend({ username: rules.username }).meta({ id: 'AdminUser' });
const adminUserChange = z.object({
  data: AdminUser,
  changed: z.boolean().describe('False when the account already was so (disabling again still revokes its sessions and tokens)'),
});
const ClientRegistration = clientRegistrationJson.meta({ id: 'ClientRegistration' });
const ClientRegistrationChanges = clientRegistrationRequest.meta({ id: 'ClientRegistrationChanges' });
const Webhook = webhookJson.meta({ id: 'Webhook' });
const NewWebhook = newWebhook.meta({ id: 'NewWebhook' });
const WebhookChanges = webhookChanges.meta({ id: 'WebhookChanges' });
const WebhookDelivery = deliveryJson.meta({ id: 'WebhookDelivery' });
const Resource = resourceJson.meta({ id: 'Resource' });
const ResourceWithSecret = resourceWithSecretJson.meta({ id: 'ResourceWithSecret' });
const NewResource = newResource.meta({ id: 'NewResource' });
const ResourceChanges = resourceChanges.meta({ id: 'ResourceChanges' });
const ReportAccepted = z.strictObject({ message: z.literal(REPORT_ACCEPTED.message) }).meta({ id: 'CredentialReportAccepted' });

/**
 * JSON Schema 2020-12 of a zod schema: a request body as it is sent (`input`), a response or a
 * parameter as the service writes or reads it (`output`). The named schemas it holds land in its
 * `$defs`, which `withComponentSchemas` moves to the components.
 */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io, target: 'draft-2020-12' });
  return json;
}

const data = (item: z.ZodType) => z.object({ data: item });

const textHeader = (description?: string) => ({ schema: { type: 'string' }, ...(description ? { description } : {}) });
const requestIdHeader = { 'X-Request-Id': textHeader('Identifies the request in the server logs') };

/** A response with a JSON body; every response names its request in `X-Request-Id`. */
const jsonResponse = (description: string, body: z.ZodType, headers: object = {}) => ({
  description,
  headers: { ...requestIdHeader, ...headers },
  content: { 'application/json': { schema: jsonSchema(body, 'output') } },
});
const errorResponse = (description: string, headers: object = {}) => jsonResponse(description, ErrorBody, headers);
const noContent = (description: string) => ({ description, headers: requestIdHeader });
const integerHeader = (description: string) => ({ schema: { type: 'integer' }, description });

/** The edge check of every request runs before any route, so any operation may answer it with a 400. */
const EDGE_PROBLEM = 'or the path, a query parameter or a cookie holds a control character';
/** A 400 of an operation, saying what of its own input can be wrong. */
const invalid = (what: string) => errorResponse(`${what}, ${EDGE_PROBLEM} (error_description names it)`);

/** Where a token stands against its allowance (GitHub's headers): on every answer once the token is counted. */
const rateLimitHeaders = {
  'X-RateLimit-Limit': integerHeader('Requests the token may make per window'),
  'X-RateLimit-Remaining': integerHeader('Requests left in the current window'),
  'X-RateLimit-Used': integerHeader('Requests made in the current window'),
  'X-RateLimit-Reset': integerHeader('When the window resets, in seconds since the Unix epoch'),
};
/** The same on the other answers to a token: sent once the token is known, unless the limit is off. */
const optionalRateLimitHeaders = Object.fromEntries(
  Object.entries(rateLimitHeaders).map(([name, header]) => [name, { ...header, required: false, description: `${header.description}; on every answer to a known token unless \`RATE_LIMIT_API_TOKEN\` is off` }]),
);

/**
 * The answers any operation may give whatever it does, written once in the components and
 * referred to by every operation (`withSharedResponses`): a 400 from the edge check, a 429 past
 * the token's allowance, a 503 while storage is unreachable.
 */
const sharedResponses = {
  BadRequest: invalid('A parameter is invalid'),
  TooManyRequests: errorResponse(
    'The token has made as many requests as its limit allows in the current window (`RATE_LIMIT_API_TOKEN`, counted per token); error_description names the limit, its window and the wait',
    { 'Retry-After': integerHeader('Seconds until the window resets'), ...rateLimitHeaders },
  ),
  // A body is read (so may be too large) by the operations that take one; one of another type
  // is refused on every operation, one that takes none too (a DELETE may carry one).
  PayloadTooLarge: errorResponse(`The request body is larger than ${MAX_BODY_KIB} KiB`),
  UnsupportedMediaType: errorResponse('The request body is not application/json'),
  ServiceUnavailable: errorResponse('Storage (the database or Redis) is unreachable (`temporarily_unavailable`); try again after Retry-After seconds', {
    'Retry-After': integerHeader(`Seconds to wait before trying again (${OUTAGE_RETRY_AFTER_S})`),
  }),
};
const shared = (name: keyof typeof sharedResponses) => ({ $ref: `#/components/responses/${name}` });
const pageResponse = (description: string, item: z.ZodType) => jsonResponse(description, pageOf(item), { Link: textHeader() });

/** Why a member is refused a group's routes whatever their role: the token, or the group's own rules. */
const GROUP_REFUSALS =
  'a personal access token lives longer than the group allows (`token_lifetime_exceeds_group_policy`), or the group requires two-factor authentication the user has not turned on (`two_factor_required`)';

const authErrors = {
  401: errorResponse('No token, or a malformed, unknown, expired or revoked one; for a DPoP-bound token, a missing or invalid proof (`invalid_dpop_proof`)', {
    'WWW-Authenticate': textHeader('RFC 6750 Bearer challenge, or an RFC 9449 DPoP challenge (with `algs`) for a DPoP-bound token'),
  }),
  403: errorResponse('The token lacks the scope this endpoint needs (or the user may not do this), ' + GROUP_REFUSALS, {
    'WWW-Authenticate': { required: false, ...textHeader('RFC 6750 Bearer challenge naming the scope needed; only with insufficient_scope') },
  }),
};
/** The applications' endpoints answer 403 for a missing scope (with a challenge) and for a non-owner (without). */
const ownerAuthErrors = {
  401: authErrors[401],
  403: errorResponse(
    'The token lacks `groups:read-write` (`insufficient_scope`, with a WWW-Authenticate challenge naming the scope), the user is not an owner of the group (`forbidden`: maintainers and members are refused), ' + GROUP_REFUSALS,
    { 'WWW-Authenticate': { required: false, ...textHeader('RFC 6750 Bearer challenge; only with insufficient_scope') } },
  ),
};
/**
 * The changes of applications (create, edit, delete, secrets, revoke all user tokens) answer 403
 * to an OAuth access token too, whatever its scope: they take the person's own personal token.
 */
const personalOwnerAuthErrorsFor = (what: string) => ({
  401: authErrors[401],
  403: errorResponse(
    `An OAuth access token (\`ho_\`) was sent (\`personal_token_required\`, whatever its scope: ${what} takes a personal access token, \`ha_\`), the token lacks \`groups:read-write\` (\`insufficient_scope\`, with a WWW-Authenticate challenge naming the scope), the user is not an owner of the group (\`forbidden\`: maintainers and members are refused), ` + GROUP_REFUSALS,
    { 'WWW-Authenticate': { required: false, ...textHeader('RFC 6750 Bearer challenge; only with insufficient_scope') } },
  ),
});
const personalOwnerAuthErrors = personalOwnerAuthErrorsFor('creating, changing and deleting applications and their secrets');
/** The changes of webhooks answer 403 to an OAuth access token too: with one, an application could have a group's events sent to it. */
const webhookChangeAuthErrors = personalOwnerAuthErrorsFor('creating, changing and deleting webhooks, and redelivering their events,');
const PERSONAL = 'Scope `groups:read-write`, with a personal access token (`ha_`) of an owner: an OAuth access token (`ho_`) is refused (403 `personal_token_required`) whatever its scope.';
/** A JSON request body; its text fields state that control characters are refused, as the API's body check does. */
const jsonBody = (schema: z.ZodType, description: string, required = false, refusesControlCharacters = true) => {
  const json = jsonSchema(schema, 'input');
  if (refusesControlCharacters) stateControlCharacterRule(json);
  return { required, description, content: { 'application/json': { schema: json } } };
};

/** Appends the control-character rule to the description of every text (or list of text) property, at any depth. */
function stateControlCharacterRule(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  const { properties } = node as { properties?: Record<string, { type?: string; enum?: unknown; items?: { type?: string; enum?: unknown }; description?: string }> };
  for (const [name, property] of Object.entries(properties ?? {})) {
    // Free text only: a value of an enum is refused for anything else already.
    const text = (property.type === 'string' && !property.enum) || (property.type === 'array' && property.items?.type === 'string' && !property.items.enum);
    if (!text) continue;
    const said = property.description?.replace(/([^.])$/, '$1.');
    property.description = [said, controlCharacterRule(name)].filter(Boolean).join(' ');
  }
  for (const child of Object.values(node)) stateControlCharacterRule(child);
}

const parameter = (name: string, where: 'path' | 'query', schema: z.ZodType, description?: string) => ({
  name,
  in: where,
  required: where === 'path',
  schema: jsonSchema(schema, 'output'),
  ...(description ? { description } : {}),
});
const pageParams = [
  parameter('pageNumber', 'query', rules.pageQuery.shape.pageNumber, 'Page to return (1-based). Empty counts as absent; anything else invalid is a 400.'),
  parameter('pageSize', 'query', rules.pageQuery.shape.pageSize, 'Items per page. Empty counts as absent.'),
];
const groupIdParam = parameter('id', 'path', recordIdText);
const auditParams = [
  ...pageParams,
  parameter('action', 'query', z.string().regex(/^[a-z][a-z0-9_.-]{0,63}$/), 'Only events of this action, by its code (such as `member.add`); empty counts as absent.'),
  parameter('since', 'query', z.string().meta({ format: 'date-time' }), 'Only events at or after this time (RFC 3339, such as `2025-01-31T09:00:00Z`); anything else is a 400 naming `since`.'),
  parameter('until', 'query', z.string().meta({ format: 'date-time' }), 'Only events before this time (RFC 3339); anything else is a 400 naming `until`.'),
];
/** The site administrators' endpoints: the `admin` scope, and an owner who is a site administrator now. */
const adminAuthErrors = {
  401: authErrors[401],
  403: errorResponse(
    'The token lacks the `admin` scope (`insufficient_scope`, with a WWW-Authenticate challenge naming it), or its owner is not (or no longer) a site administrator, or is disabled (`forbidden`)',
    { 'WWW-Authenticate': { required: false, ...textHeader('RFC 6750 Bearer challenge; only with insufficient_scope') } },
  ),
};
const ADMIN = 'Scope `admin`: a personal access token (`ha_`) of a site administrator, who alone can make one; refused (403) once its owner is no longer one.';
const userIdParam = parameter('id', 'path', recordIdText, 'The user\'s id');
const clientIdParam = parameter('clientID', 'path', clientId, 'The application\'s client ID');
const hookIdParam = parameter('hookId', 'path', recordIdText, 'The webhook\'s id');
const deliveryIdParam = parameter('deliveryId', 'path', bigRecordIdText, 'The delivery\'s id');
/** The changes of resources answer 403 to an OAuth access token too: with one, an application could register a resource and take the tokens meant for it. */
const resourceChangeAuthErrors = personalOwnerAuthErrorsFor('creating, changing and deleting resources, and replacing their secrets,');
const resourceIdParam = parameter('resourceId', 'path', recordIdText, 'The resource\'s id');
const NO_RESOURCE = 'No such group or resource, or the caller is not a member of the group (a resource of another group is one that does not exist here)';
const BAD_RESOURCE =
  'a field is of the wrong type, unknown or invalid (error_description names it): an `identifier` that is not an https:// URL (http:// only on a loopback host), has a query or a fragment, or is an address of this service; a scope named as one of the service\'s own (`openid`, `profile`, `email`, `groups:…`), named twice, or no scope; a `tokenFormat` other than `opaque` or `jwt`';
const NO_WEBHOOK = 'No such group or webhook, or the caller is not a member of the group (a webhook of another group is one that does not exist here)';
const NO_DELIVERY = 'No such group, webhook or delivery, or the caller is not a member of the group (a webhook or delivery of another is one that does not exist here)';
const REFUSED_URL =
  '`url` is refused (error_description names it): a private, loopback, link-local or reserved address, or a host name that resolves to one or does not resolve, unless the operator allows private targets (`WEBHOOKS_ALLOW_PRIVATE`)';
const DAYS = (ms: number) => ms / (24 * 60 * 60 * 1000);

export function openApiDocument(issuer: string) {
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'Horizon ID API',
      version: '2',
      description:
        'Call with `Authorization: Bearer <token>`: an OAuth access token (`ho_…`, from the authorization code flow) or a personal access token (`ha_…`, from Account settings → Access tokens). Both act as their user, limited by their scopes; creating, changing and deleting OAuth applications and their secrets, webhooks and resources, also takes a personal access token (an OAuth access token only reads them). A personal access token may also be limited to some of its user\'s groups: the others read as groups the user is not in (404, and left out of `GET /groups`). A group may cap the lifetime of personal access tokens (`personalTokenMaxLifetimeDays`): a token that lives longer is refused on its routes (403 `token_lifetime_exceeds_group_policy`) and the group is left out of its `GET /groups`; it still works elsewhere.',
    },
    servers: [{ url: `${issuer}/apis/v2` }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            '`ho_` OAuth access token or `ha_` personal access token. An `ho_` token bound to a DPoP key (RFC 9449; `token_type: DPoP` at the token endpoint) is sent instead as `Authorization: DPoP <token>` with a `DPoP` proof header for the request, which this page cannot make.',
        },
      },
      responses: sharedResponses,
    },
    paths: withSharedResponses({
      '/groups': {
        get: {
          operationId: 'listGroups',
          summary: 'The groups the token\'s user is a member of',
          description: 'Scope `groups:read-only` (or `groups:read-write`). Ascending `id`. Sends an RFC 8288 `Link` header with first, prev, next and last. With a token an application got for itself (client credentials grant), its own group only, with the role `maintainer`.',
          parameters: [
            ...pageParams,
            parameter('filter', 'query', rules.queryText('filter', rules.MAX_FILTER_LENGTH), `Case-insensitive match on name or path. ${controlCharacterRule('filter')}`),
          ],
          responses: {
            200: pageResponse('One page of groups', Group),
            400: invalid('A pagination or filter parameter is invalid'),
            ...authErrors,
          },
        },
      },
      '/groups/{id}': {
        get: {
          operationId: 'getGroup',
          summary: 'One group the token\'s user belongs to',
          description: 'Scope `groups:read-only`. A group the user is not a member of is a 404.',
          parameters: [groupIdParam],
          responses: {
            200: jsonResponse('The group', data(Group)),
            400: invalid('The id is not a positive integer'),
            ...authErrors,
            404: errorResponse('No such group, or the user is not a member'),
          },
        },
        patch: {
          operationId: 'updateGroup',
          summary: 'Edit a group\'s settings (owners only)',
          description:
            'Scope `groups:read-write`; the caller must be an owner (a maintainer or a member is refused). Fields left out keep their value. Each change is recorded in the group\'s audit log. `requireTwoFactor: true` needs two-factor authentication on the caller\'s own account first.',
          parameters: [groupIdParam],
          requestBody: jsonBody(GroupChanges, 'The fields to change; an unknown field is a 400'),
          responses: {
            200: jsonResponse('The group as it is now', data(Group)),
            400: invalid('The id, or a field, is of the wrong type, unknown or invalid'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
        delete: {
          operationId: 'deleteGroup',
          summary: 'Delete a group (owners only)',
          description:
            'Scope `groups:read-write`; the caller must be an owner (a maintainer or a member is refused). The group goes with its members, its audit log and its OAuth applications; every grant of those applications ends, with each code, access token and refresh token, at once. Recorded in the site\'s audit log. It cannot be undone.',
          parameters: [groupIdParam],
          responses: {
            204: noContent('Deleted'),
            400: invalid('The id is not a positive integer'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
      },
      '/groups/{id}/audit-events': {
        get: {
          operationId: 'listGroupAuditEvents',
          summary: 'The group\'s audit log (owners and maintainers)',
          description:
            'Scope `groups:read-only` (or `groups:read-write`); the caller must be an owner or a maintainer, who read the log on the group\'s Audit log page. Newest first, paginated, with a `Link` header that keeps the filters.',
          parameters: [groupIdParam, ...auditParams],
          responses: {
            200: pageResponse('One page of events', AuditEvent),
            400: invalid('The id, a pagination parameter, `action`, `since` or `until` is invalid'),
            401: authErrors[401],
            403: errorResponse(
              'The token lacks `groups:read-only` (`insufficient_scope`, with a WWW-Authenticate challenge naming the scope), the caller is a member who may not read the log (`forbidden`), ' + GROUP_REFUSALS,
              { 'WWW-Authenticate': { required: false, ...textHeader('RFC 6750 Bearer challenge; only with insufficient_scope') } },
            ),
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
      },
      '/admin/users': {
        get: {
          operationId: 'adminListUsers',
          summary: 'Every user of the site, or those matching a search (site administrators)',
          description: `${ADMIN} Oldest account first, paginated, with a \`Link\` header that keeps \`q\`.`,
          parameters: [
            ...pageParams,
            parameter('q', 'query', rules.queryText('q', MAX_USER_QUERY), `Case-insensitive match anywhere in the username, e-mail address or name. ${controlCharacterRule('q')}`),
          ],
          responses: {
            200: pageResponse('One page of users', AdminUser),
            400: invalid('A pagination parameter or `q` is invalid'),
            ...adminAuthErrors,
          },
        },
      },
      '/admin/users/{id}/disable': {
        post: {
          operationId: 'adminDisableUser',
          summary: 'Disable an account (site administrators)',
          description: `${ADMIN} As the Admin pages do: the account is refused everywhere from then on, signed out of every session, every application it authorized loses its grant with each code and token, and its personal access tokens are deleted. Recorded in the site's audit log (\`user.disable\`). An administrator cannot disable their own account (409).`,
          parameters: [userIdParam],
          responses: {
            200: jsonResponse('The account as it is now', adminUserChange),
            400: invalid('The id is not a positive integer'),
            ...adminAuthErrors,
            404: errorResponse('No such user'),
            409: errorResponse('The account is the caller\'s own (`conflict`)'),
          },
        },
      },
      '/admin/users/{id}/enable': {
        post: {
          operationId: 'adminEnableUser',
          summary: 'Enable a disabled account (site administrators)',
          description: `${ADMIN} The account can sign in again; what disabling revoked stays revoked. Recorded in the site's audit log (\`user.enable\`).`,
          parameters: [userIdParam],
          responses: {
            200: jsonResponse('The account as it is now', adminUserChange),
            400: invalid('The id is not a positive integer'),
            ...adminAuthErrors,
            404: errorResponse('No such user'),
          },
        },
      },
      '/admin/client-registration': {
        get: {
          operationId: 'adminGetClientRegistration',
          summary: 'Whether clients may register themselves, and the group they belong to (site administrators)',
          description: `${ADMIN} What Admin → Client registration shows: Client ID Metadata Documents and Dynamic Client Registration (RFC 7591), each off until an administrator turns it on, and the group that owns such clients. Without a group (none chosen, or it was deleted) both read as off.`,
          responses: {
            200: jsonResponse('The switches', data(ClientRegistration)),
            ...adminAuthErrors,
          },
        },
        put: {
          operationId: 'adminSetClientRegistration',
          summary: 'Turn client registration on or off, and choose the group (site administrators)',
          description: `${ADMIN} Every field is required. Anyone can then register a client the way that is on; the consent page tells people such a client was not reviewed, and the group's owners see it among the group's applications, marked as registered automatically. Recorded in the site's audit log (\`client_registration.update\`).`,
          requestBody: jsonBody(ClientRegistrationChanges, 'The switches and the group; an unknown field is a 400', true),
          responses: {
            200: jsonResponse('The switches as they are now', data(ClientRegistration)),
            400: invalid('A field is missing, of the wrong type or unknown, `group` is not the path of an existing group, or it is null while a switch is on'),
            ...adminAuthErrors,
          },
        },
      },
      '/admin/audit-events': {
        get: {
          operationId: 'adminListAuditEvents',
          summary: 'The site\'s audit log (site administrators)',
          description: `${ADMIN} What the Admin area's Audit log shows: administrators' acts on accounts and sign-in providers, and deleted groups. Newest first, paginated, with a \`Link\` header that keeps the filters.`,
          parameters: auditParams,
          responses: {
            200: pageResponse('One page of events', AuditEvent),
            400: invalid('A pagination parameter, `action`, `since` or `until` is invalid'),
            ...adminAuthErrors,
          },
        },
      },
      '/groups/{id}/members/{userId}': {
        delete: {
          operationId: 'removeGroupMember',
          summary: 'Leave a group, or remove a member from it',
          description:
            'Scope `groups:read-write`. With the caller\'s own user id (`GET /user`), the caller leaves the group, whatever their role; the last owner cannot (409: another member must be made an owner first, or the group deleted). With another member\'s id, the caller removes them: an owner removes anyone, a maintainer removes members and maintainers but not owners, a member no one. Recorded in the group\'s audit log (`member.leave` or `member.remove`).',
          parameters: [groupIdParam, parameter('userId', 'path', recordIdText, 'The member\'s user id: the caller\'s own to leave')],
          responses: {
            204: noContent('Left, or removed'),
            400: errorResponse('The id or the user id is not a positive integer'),
            401: authErrors[401],
            403: errorResponse(
              'The token lacks `groups:read-write` (`insufficient_scope`, with a WWW-Authenticate challenge naming the scope), the caller may not remove this member (`forbidden`: a member removing anyone else, or a maintainer removing an owner), ' + GROUP_REFUSALS,
              { 'WWW-Authenticate': { required: false, ...textHeader('RFC 6750 Bearer challenge; only with insufficient_scope') } },
            ),
            404: errorResponse('No such group, the caller is not a member, or the user is not a member of it'),
            409: errorResponse('The caller is the group\'s last owner, who cannot leave it (`conflict`)'),
          },
        },
      },
      '/groups/{id}/oauth-apps': {
        get: {
          operationId: 'listOAuthApps',
          summary: 'The OAuth applications of a group (owners only)',
          description: 'Scope `groups:read-write`; the caller must be an owner of the group. Ascending `id`, paginated, with a `Link` header. Secrets are not listed here; read one application for its masked secrets.',
          parameters: [groupIdParam, ...pageParams],
          responses: {
            200: pageResponse('One page of applications', OAuthApp),
            400: invalid('The id or a pagination parameter is invalid'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
        post: {
          operationId: 'createOAuthApp',
          summary: 'Create an OAuth application of a group (owners only)',
          description: `${PERSONAL} The response of a \`confidential\` application carries its first client secret (\`clientSecret\`), shown this once; a \`public\` one has none.`,
          parameters: [groupIdParam],
          requestBody: jsonBody(NewOAuthApp, 'The application\'s fields; an unknown field is a 400', true),
          responses: {
            201: jsonResponse('The application, with its client secret shown once', data(CreatedOAuthApp), {
              Location: textHeader('The application\'s URL in this API'),
            }),
            400: invalid('A field is missing, of the wrong type, unknown or invalid'),
            ...personalOwnerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
      },
      '/oauth-apps/{clientID}': {
        get: {
          operationId: 'getOAuthApp',
          summary: 'One OAuth application, with its secrets masked (owners only)',
          description: 'Scope `groups:read-write`; the caller must be an owner of the application\'s group.',
          parameters: [clientIdParam],
          responses: {
            200: jsonResponse('The application', data(OAuthAppWithSecrets)),
            ...ownerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
          },
        },
        patch: {
          operationId: 'updateOAuthApp',
          summary: 'Edit any of the fields of an OAuth application (owners only)',
          description: `${PERSONAL} Fields left out keep their value. A new \`callbackURL\` ends every user's authorization of the application (each grant, with its codes and tokens): each must authorize it again; the audit log says how many.`,
          parameters: [clientIdParam],
          requestBody: jsonBody(OAuthAppChanges, 'The fields to change; an unknown field is a 400'),
          responses: {
            200: jsonResponse('The application as it is now', data(OAuthAppWithSecrets)),
            400: invalid('A field is of the wrong type, unknown or invalid'),
            ...personalOwnerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
          },
        },
        delete: {
          operationId: 'deleteOAuthApp',
          summary: 'Delete an OAuth application (owners only)',
          description: `${PERSONAL} Every code, access token and refresh token issued to it stops working at once, and its secrets no longer authenticate.`,
          parameters: [clientIdParam],
          responses: {
            204: noContent('Deleted'),
            ...personalOwnerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
          },
        },
      },
      '/oauth-apps/{clientID}/grants': {
        delete: {
          operationId: 'revokeAllUserTokens',
          summary: 'Revoke all user tokens of an OAuth application (owners only)',
          description:
            `${PERSONAL} Every user's grant of the application ends, with each code, access token and refresh token issued under it; each user is asked to authorize again. The application and its client secrets stay.`,
          parameters: [clientIdParam],
          responses: {
            204: noContent('Every grant ended'),
            ...personalOwnerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
          },
        },
      },
      '/oauth-apps/{clientID}/secrets': {
        post: {
          operationId: 'createClientSecret',
          summary: 'A new client secret, shown once (owners only)',
          description: `${PERSONAL} An application holds at most ${MAX_ACTIVE_SECRETS} active secrets, so a server can rotate without downtime; one more is a 409, as is any for a \`public\` application, which has no secret.`,
          parameters: [clientIdParam],
          requestBody: jsonBody(rules.newSecret, 'Nothing, or an empty object'),
          responses: {
            201: jsonResponse('The secret, shown this once', data(NewClientSecret)),
            400: invalid('The body has a field (none is taken)'),
            ...personalOwnerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
            409: errorResponse(`The application already holds ${MAX_ACTIVE_SECRETS} active secrets (revoke one first), or it is a public application`),
          },
        },
      },
      '/oauth-apps/{clientID}/secrets/{secretID}': {
        delete: {
          operationId: 'revokeClientSecret',
          summary: 'Revoke one client secret (owners only)',
          description: `${PERSONAL} From the next request on, on every instance, the secret no longer authenticates.`,
          parameters: [clientIdParam, parameter('secretID', 'path', recordIdText)],
          responses: {
            204: noContent('Revoked'),
            400: invalid('The secretID is not a positive integer'),
            ...personalOwnerAuthErrors,
            404: errorResponse('No such application or secret, or the caller is not a member of the group'),
          },
        },
      },
      '/groups/{id}/webhooks': {
        get: {
          operationId: 'listWebhooks',
          summary: 'The webhooks of a group (owners only)',
          description: `Scope \`groups:read-write\`; the caller must be an owner of the group. Ascending \`id\`, paginated, with a \`Link\` header; a group has at most ${MAX_WEBHOOKS_PER_GROUP}. A webhook's secret is never shown.`,
          parameters: [groupIdParam, ...pageParams],
          responses: {
            200: pageResponse('One page of webhooks', Webhook),
            400: invalid('The id or a pagination parameter is invalid'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
        post: {
          operationId: 'createWebhook',
          summary: 'Create a webhook of a group (owners only)',
          description:
            `${PERSONAL} Each event of the group named in \`events\` is POSTed to \`url\` as JSON (\`{event, occurred_at, group, actor, data}\`) with the headers \`X-Horizon-Event\`, \`X-Horizon-Delivery\` (a GUID), \`X-Horizon-Hook-ID\` and \`X-Horizon-Signature-256: sha256=<hex HMAC-SHA256 of the body with the secret>\` (GitHub's scheme). A delivery not answered with a 2xx is tried again, waiting twice as long each time, for ${RETRY_FOR_MS / 3_600_000} hours from the event. A group has at most ${MAX_WEBHOOKS_PER_GROUP} webhooks (one more is a 409). Recorded in the group's audit log (\`webhook.create\`).`,
          parameters: [groupIdParam],
          requestBody: jsonBody(NewWebhook, 'The webhook\'s fields; an unknown field is a 400', true),
          responses: {
            201: jsonResponse('The webhook (never its secret)', data(Webhook), { Location: textHeader('The webhook\'s URL in this API') }),
            400: invalid(`A field is missing, of the wrong type, unknown or invalid, or ${REFUSED_URL}`),
            ...webhookChangeAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
            409: errorResponse(`The group already has ${MAX_WEBHOOKS_PER_GROUP} webhooks (\`conflict\`)`),
          },
        },
      },
      '/groups/{id}/webhooks/{hookId}': {
        get: {
          operationId: 'getWebhook',
          summary: 'One webhook of a group (owners only)',
          description: 'Scope `groups:read-write`; the caller must be an owner of the group. Its secret is never shown.',
          parameters: [groupIdParam, hookIdParam],
          responses: {
            200: jsonResponse('The webhook', data(Webhook)),
            400: invalid('The id or the hookId is not a positive integer'),
            ...ownerAuthErrors,
            404: errorResponse(NO_WEBHOOK),
          },
        },
        patch: {
          operationId: 'updateWebhook',
          summary: 'Edit any of the fields of a webhook (owners only)',
          description: `${PERSONAL} Fields left out keep their value; the secret is kept unless a new one is given. Deliveries already made keep the URL and secret they were made with. Each change is recorded in the group's audit log (\`webhook.update\`; a new secret as changed, never its value).`,
          parameters: [groupIdParam, hookIdParam],
          requestBody: jsonBody(WebhookChanges, 'The fields to change; an unknown field is a 400'),
          responses: {
            200: jsonResponse('The webhook as it is now', data(Webhook)),
            400: invalid(`The id or the hookId is not a positive integer, a field is of the wrong type, unknown or invalid, or ${REFUSED_URL}`),
            ...webhookChangeAuthErrors,
            404: errorResponse(NO_WEBHOOK),
          },
        },
        delete: {
          operationId: 'deleteWebhook',
          summary: 'Delete a webhook (owners only)',
          description: `${PERSONAL} Nothing more is delivered to it; deliveries already made are still sent. Recorded in the group's audit log (\`webhook.delete\`).`,
          parameters: [groupIdParam, hookIdParam],
          responses: {
            204: noContent('Deleted'),
            400: invalid('The id or the hookId is not a positive integer'),
            ...webhookChangeAuthErrors,
            404: errorResponse(NO_WEBHOOK),
          },
        },
      },
      '/groups/{id}/webhooks/{hookId}/deliveries': {
        get: {
          operationId: 'listWebhookDeliveries',
          summary: 'A webhook\'s deliveries, newest first (owners only)',
          description: `Scope \`groups:read-write\`; the caller must be an owner of the group. Each delivery with its request (headers, but never the signature, and body) and the answer to its last attempt. Newest first, paginated, with a \`Link\` header. Deliveries are kept for ${DAYS(KEPT_FOR_MS)} days from when they were made (a pending one until it is over).`,
          parameters: [groupIdParam, hookIdParam, ...pageParams],
          responses: {
            200: pageResponse('One page of deliveries', WebhookDelivery),
            400: invalid('The id, the hookId or a pagination parameter is invalid'),
            ...ownerAuthErrors,
            404: errorResponse(NO_WEBHOOK),
          },
        },
      },
      '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}': {
        get: {
          operationId: 'getWebhookDelivery',
          summary: 'One delivery of a webhook (owners only)',
          description: 'Scope `groups:read-write`; the caller must be an owner of the group.',
          parameters: [groupIdParam, hookIdParam, deliveryIdParam],
          responses: {
            200: jsonResponse('The delivery', data(WebhookDelivery)),
            400: invalid('The id, the hookId or the deliveryId is not a positive integer'),
            ...ownerAuthErrors,
            404: errorResponse(NO_DELIVERY),
          },
        },
      },
      '/groups/{id}/webhooks/{hookId}/deliveries/{deliveryId}/attempts': {
        post: {
          operationId: 'redeliverWebhookDelivery',
          summary: 'Redeliver a delivery (owners only)',
          description: `${PERSONAL} The delivery's event is sent again, with the same \`X-Horizon-Delivery\` and body, to the webhook's URL and with its secret as they are now: a new delivery (\`redelivery: true\`), due at once and tried again like any other. While a copy of that event still waits to be sent, the answer is that copy: one waits at a time.`,
          parameters: [groupIdParam, hookIdParam, deliveryIdParam],
          requestBody: jsonBody(redeliveryRequest, 'Nothing, or an empty object'),
          responses: {
            202: jsonResponse('The new delivery (or the copy of the event still waiting), not sent yet', data(WebhookDelivery), { Location: textHeader('That delivery\'s URL in this API') }),
            400: invalid('The id, the hookId or the deliveryId is not a positive integer, or the body has a field (none is taken)'),
            ...webhookChangeAuthErrors,
            404: errorResponse(NO_DELIVERY),
          },
        },
      },
      '/groups/{id}/resources': {
        get: {
          operationId: 'listResources',
          summary: 'The resources of a group (owners only)',
          description: `Scope \`groups:read-write\`; the caller must be an owner of the group. The protected APIs (an MCP server, say) the group registered, whose tokens clients ask for with \`resource=<identifier>\` (RFC 8707). Ascending \`id\`, paginated, with a \`Link\` header; a group has at most ${MAX_RESOURCES_PER_GROUP}. An introspection secret is never shown here.`,
          parameters: [groupIdParam, ...pageParams],
          responses: {
            200: pageResponse('One page of resources', Resource),
            400: invalid('The id or a pagination parameter is invalid'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
        post: {
          operationId: 'createResource',
          summary: 'Register a resource of a group (owners only)',
          description:
            `${PERSONAL} A client that sends \`resource=<identifier>\` at authorize and at the token endpoint gets an access token bound to it (\`aud\`), carrying only the resource's scopes the person granted, in its \`tokenFormat\`. The answer carries the client id and secret its server introspects with (HTTP Basic at \`introspectionEndpoint\`); the secret is shown this once. A group has at most ${MAX_RESOURCES_PER_GROUP} resources (one more is a 409); an identifier is registered once on the site (another is a 409). Recorded in the group's audit log (\`resource.create\`).`,
          parameters: [groupIdParam],
          requestBody: jsonBody(NewResource, 'The resource\'s fields; an unknown field is a 400', true),
          responses: {
            201: jsonResponse('The resource, with its introspection secret shown once', data(ResourceWithSecret), { Location: textHeader('The resource\'s URL in this API') }),
            400: invalid(`A field is missing, or ${BAD_RESOURCE}`),
            ...resourceChangeAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
            409: errorResponse(`The identifier is already registered on this site, or the group already has ${MAX_RESOURCES_PER_GROUP} resources (\`conflict\`)`),
          },
        },
      },
      '/groups/{id}/resources/{resourceId}': {
        get: {
          operationId: 'getResource',
          summary: 'One resource of a group (owners only)',
          description: 'Scope `groups:read-write`; the caller must be an owner of the group. Its introspection secret is never shown.',
          parameters: [groupIdParam, resourceIdParam],
          responses: {
            200: jsonResponse('The resource', data(Resource)),
            400: invalid('The id or the resourceId is not a positive integer'),
            ...ownerAuthErrors,
            404: errorResponse(NO_RESOURCE),
          },
        },
        patch: {
          operationId: 'updateResource',
          summary: 'Edit any of the fields of a resource (owners only)',
          description: `${PERSONAL} Fields left out keep their value; the introspection credentials stay. Tokens already issued keep the audience and scopes they were issued with. Each change is recorded in the group's audit log (\`resource.update\`).`,
          parameters: [groupIdParam, resourceIdParam],
          requestBody: jsonBody(ResourceChanges, 'The fields to change; an unknown field is a 400'),
          responses: {
            200: jsonResponse('The resource as it is now', data(Resource)),
            400: invalid(`The id or the resourceId is not a positive integer, or ${BAD_RESOURCE}`),
            ...resourceChangeAuthErrors,
            404: errorResponse(NO_RESOURCE),
            409: errorResponse('The new identifier is already registered on this site (`conflict`)'),
          },
        },
        delete: {
          operationId: 'deleteResource',
          summary: 'Delete a resource (owners only)',
          description: `${PERSONAL} Clients can no longer ask for it (\`invalid_target\`), and its server can no longer introspect; JWT access tokens already issued for it stay valid signatures until they expire. Recorded in the group's audit log (\`resource.delete\`).`,
          parameters: [groupIdParam, resourceIdParam],
          responses: {
            204: noContent('Deleted'),
            400: invalid('The id or the resourceId is not a positive integer'),
            ...resourceChangeAuthErrors,
            404: errorResponse(NO_RESOURCE),
          },
        },
      },
      '/groups/{id}/resources/{resourceId}/secret': {
        post: {
          operationId: 'replaceResourceSecret',
          summary: 'Replace a resource\'s introspection secret, shown once (owners only)',
          description: `${PERSONAL} The old secret stops authenticating at once, on every instance; the client id stays. Recorded in the group's audit log (\`resource.secret.regenerate\`, with the new secret's last four characters).`,
          parameters: [groupIdParam, resourceIdParam],
          requestBody: jsonBody(newResourceSecretRequest, 'Nothing, or an empty object'),
          responses: {
            201: jsonResponse('The resource, with its new introspection secret shown once', data(ResourceWithSecret)),
            400: invalid('The id or the resourceId is not a positive integer, or the body has a field (none is taken)'),
            ...resourceChangeAuthErrors,
            404: errorResponse(NO_RESOURCE),
          },
        },
      },
      '/credentials/revoke': {
        post: {
          operationId: 'revokeReportedCredentials',
          summary: 'Report credentials found in public; the live ones are revoked',
          description: `No token: anyone (a secret scanner) may report. Each value is trimmed of the whitespace around it and checked for its checksum first; anything that is not then a well-formed token (control characters included) is ignored and never looked up. The well-formed values are looked up with one storage read per kind. Each live one is revoked at once: an \`ha_\` personal access token (its user sees why in Account settings → Access tokens), an \`hs_\` client secret (recorded in its group's audit log; the application keeps any other secret), an \`ho_\` access token, or an \`hr_\` refresh token with its whole grant (recorded in the application's group's audit log). The answer is the same whatever was sent: live, already revoked, malformed or unknown. At most ${MAX_REPORTED} values a request; requests are limited per client address, an IPv6 client by its /64 (\`RATE_LIMIT_CREDENTIAL_REPORTS_IP\`).`,
          security: [],
          requestBody: jsonBody(credentialReport, 'The values found', true, false),
          responses: {
            202: jsonResponse('Received; the same answer whatever the values were', ReportAccepted),
            400: invalid('The body is not an object with `credentials`: an array of 1 to 1,000 strings'),
            429: errorResponse('Too many reports from this address', { 'Retry-After': textHeader('Seconds until the address may report again') }),
          },
        },
      },
      '/user': {
        get: {
          operationId: 'getUser',
          summary: 'The token\'s user',
          description:
            'Any scope; what comes back is what the scopes allow, as the consent page words them: the `id` always (all an `openid`-only token gets); `username` and `name` with `profile`, `groups:read-only` or `groups:read-write`; `emailVerified`, and `email` once the address is verified, with `email`. A personal access token gets every field. An address that is not verified is never returned.',
          responses: {
            200: jsonResponse('The user', data(User)),
            401: authErrors[401],
            403: errorResponse('The token was issued to an application acting as itself (client credentials grant): it has no user (`no_user`)'),
          },
        },
      },
    }),
  };
  return withComponentSchemas(document);
}

type Operation = { security?: unknown[]; requestBody?: unknown; responses: Record<string, unknown> };

/**
 * Every operation refers to the shared 400 (unless it describes its own), 413 (if it takes a
 * body), 415 (whether or not it takes one), 429 (a token's allowance: the operations that
 * take one; an operation without a token describes its own) and 503. The answers of an operation that takes a token, but for a 401 (no known token), say
 * where the token stands.
 */
function withSharedResponses<T extends Record<string, Record<string, Operation>>>(paths: T): T {
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      const { responses } = operation;
      const counted = operation.security?.length !== 0;
      for (const [status, response] of Object.entries(responses)) {
        if (!counted || status === '401') continue;
        const { headers, ...rest } = response as { headers?: object };
        // A copy: the same response object serves several operations.
        responses[status] = { ...rest, headers: { ...headers, ...optionalRateLimitHeaders } };
      }
      responses[400] ??= shared('BadRequest');
      if (operation.requestBody) responses[413] ??= shared('PayloadTooLarge');
      responses[415] ??= shared('UnsupportedMediaType');
      if (counted) responses[429] ??= shared('TooManyRequests');
      responses[503] ??= shared('ServiceUnavailable');
    }
  }
  return paths;
}

/**
 * Gathers the named schemas, which each conversion put in its own `$defs`, into the document's
 * components once, and points every `$ref` there.
 */
function withComponentSchemas<T extends { components: object }>(document: T) {
  const schemas: Record<string, unknown> = {};
  const gathered = JSON.parse(JSON.stringify(document), (key, value) => {
    if (key === '$ref') return String(value).replace(/^#\/\$defs\//, '#/components/schemas/');
    if (key !== '$defs') return value;
    Object.assign(schemas, value);
    return undefined;
  }) as T;
  return { ...gathered, components: { ...gathered.components, schemas } };
}
