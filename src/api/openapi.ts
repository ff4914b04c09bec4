/**
 * The OpenAPI 3.1 description of /apis/v2, served at /apis/v2/openapi.json. A test validates it
 * with a real OpenAPI validator and checks live responses against it, so it stays true.
 */
const error = { $ref: '#/components/schemas/Error' };
const json = (schema: object) => ({ 'application/json': { schema } });

const requestIdHeader = { 'X-Request-Id': { schema: { type: 'string' }, description: 'Identifies the request in the server logs' } };

const errorResponse = (description: string) => ({ description, headers: requestIdHeader, content: json(error) });
const authErrors = {
  401: {
    description: 'No token, or a malformed, unknown, expired or revoked one',
    headers: { ...requestIdHeader, 'WWW-Authenticate': { schema: { type: 'string' }, description: 'RFC 6750 Bearer challenge' } },
    content: json(error),
  },
  403: {
    description: 'The token lacks the scope this endpoint needs (or the user may not do this)',
    headers: { ...requestIdHeader, 'WWW-Authenticate': { schema: { type: 'string' }, description: 'RFC 6750 Bearer challenge naming the scope needed' } },
    content: json(error),
  },
};

const pageParams = [
  { name: 'pageNumber', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1_000_000_000, default: 1 }, description: 'Page to return (1-based). Empty counts as absent; anything else invalid is a 400.' },
  { name: 'pageSize', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 50, default: 20 }, description: 'Items per page, at most 50.' },
];

const listOf = (item: object) => ({
  type: 'object',
  required: ['data', 'pageNumber', 'pageSize'],
  additionalProperties: false,
  properties: {
    data: {
      type: 'object',
      required: ['total', 'items'],
      additionalProperties: false,
      properties: { total: { type: 'integer', minimum: 0 }, items: { type: 'array', items: item } },
    },
    pageNumber: { type: 'integer', minimum: 1 },
    pageSize: { type: 'integer', minimum: 1, maximum: 50 },
  },
});
const single = (item: object) => ({ type: 'object', required: ['data'], additionalProperties: false, properties: { data: item } });

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonBody = (schema: object, description: string) => ({ required: false, description, content: json(schema) });
const noContent = (description: string) => ({ description, headers: requestIdHeader });
const groupIdParam = { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 2_147_483_647 } };
const clientIdParam = { name: 'clientID', in: 'path', required: true, schema: { type: 'string', maxLength: 64 }, description: 'The application\'s client ID' };
/** The applications' endpoints answer 403 for a missing scope (with a challenge) and for a non-owner (without). */
const ownerAuthErrors = {
  401: authErrors[401],
  403: {
    description: 'The token lacks `groups:read-write` (`insufficient_scope`, with a WWW-Authenticate challenge naming the scope), or the user is not an owner of the group (`forbidden`)',
    headers: {
      ...requestIdHeader,
      'WWW-Authenticate': { required: false, schema: { type: 'string' }, description: 'RFC 6750 Bearer challenge; only with insufficient_scope' },
    },
    content: json(error),
  },
};
const bodyErrors = {
  413: errorResponse('The request body is larger than 64 KiB'),
  415: errorResponse('The request body is not application/json'),
};
const appFieldProperties = {
  name: { type: 'string', minLength: 1, maxLength: 100, description: 'Trimmed; 1–100 characters' },
  homepageURL: { type: 'string', maxLength: 2048, description: 'An absolute http(s) URL' },
  description: { type: 'string', maxLength: 400, description: 'At most 400 characters; default empty' },
  callbackURL: {
    type: 'string',
    maxLength: 2048,
    description: 'An absolute URL without a fragment: https, or http only for localhost, 127.0.0.1 or [::1]. The authorize request\'s redirect_uri must equal it exactly.',
  },
  signOutRedirectURLs: {
    type: 'array',
    maxItems: 10,
    items: { type: 'string', maxLength: 2048 },
    description:
      'Sign-out redirect URLs: where RP-initiated logout (`GET /login/oauth/logout?client_id=…&post_logout_redirect_uri=…`) may send a person back to after signing out. Each follows the callback URL\'s rules and is matched exactly; a repeated URL counts once. Default empty; an edit that names the field replaces the whole list.',
  },
};
const appFields = {
  clientID: { type: 'string', description: 'Public; the OAuth client_id' },
  ...appFieldProperties,
  groupId: { type: 'integer', description: 'The group that owns the application' },
  createdAt: { type: 'string', format: 'date-time' },
  updatedAt: { type: 'string', format: 'date-time' },
};
const appRequired = ['clientID', 'name', 'homepageURL', 'description', 'callbackURL', 'signOutRedirectURLs', 'groupId', 'createdAt', 'updatedAt'];

export function openApiDocument(issuer: string) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Horizon ID API',
      version: '2',
      description:
        'Call with `Authorization: Bearer <token>`: an OAuth access token (`ho_…`, from the authorization code flow) or a personal access token (`ha_…`, from Account settings → Access tokens). Both act as their user, limited by their scopes.',
    },
    servers: [{ url: `${issuer}/apis/v2` }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: '`ho_` OAuth access token or `ha_` personal access token' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error', 'error_description'],
          properties: { error: { type: 'string' }, error_description: { type: 'string' } },
        },
        Group: {
          type: 'object',
          required: ['id', 'name', 'path', 'description', 'visibilityLevel', 'createdAt', 'updatedAt', 'role'],
          additionalProperties: false,
          properties: {
            id: { type: 'integer' },
            name: { type: 'string' },
            path: { type: 'string' },
            description: { type: 'string' },
            visibilityLevel: { type: 'string', enum: ['private', 'internal', 'public'] },
            createdAt: { type: 'string', format: 'date-time' },
            updatedAt: { type: 'string', format: 'date-time' },
            role: { type: 'string', enum: ['owner', 'maintainer', 'member'], description: "The caller's role in the group" },
          },
        },
        OAuthApp: {
          type: 'object',
          required: appRequired,
          additionalProperties: false,
          properties: appFields,
        },
        OAuthAppWithSecrets: {
          type: 'object',
          required: [...appRequired, 'secrets'],
          additionalProperties: false,
          properties: { ...appFields, secrets: { type: 'array', maxItems: 2, items: ref('ClientSecret') } },
        },
        CreatedOAuthApp: {
          type: 'object',
          required: [...appRequired, 'clientSecret', 'secretId', 'secrets'],
          additionalProperties: false,
          properties: {
            ...appFields,
            clientSecret: { type: 'string', pattern: '^hs_[0-9A-Za-z]{36}$', description: 'Shown in this response only: the service keeps a digest' },
            secretId: { type: 'integer', description: 'The id of that secret, for revoking it later' },
            secrets: { type: 'array', maxItems: 2, items: ref('ClientSecret') },
          },
        },
        ClientSecret: {
          type: 'object',
          required: ['id', 'lastFour', 'createdAt', 'lastUsedAt'],
          additionalProperties: false,
          properties: {
            id: { type: 'integer' },
            lastFour: { type: 'string', minLength: 4, maxLength: 4, description: 'The secret\'s last four characters' },
            createdAt: { type: 'string', format: 'date-time' },
            lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'Its last successful use at the token endpoint (recorded at most once a minute); null if never' },
          },
        },
        NewClientSecret: {
          type: 'object',
          required: ['id', 'secret', 'lastFour', 'createdAt'],
          additionalProperties: false,
          properties: {
            id: { type: 'integer' },
            secret: { type: 'string', pattern: '^hs_[0-9A-Za-z]{36}$', description: 'Shown in this response only' },
            lastFour: { type: 'string', minLength: 4, maxLength: 4 },
            createdAt: { type: 'string', format: 'date-time' },
          },
        },
        NewOAuthApp: {
          type: 'object',
          required: ['name', 'homepageURL', 'callbackURL'],
          additionalProperties: false,
          properties: appFieldProperties,
        },
        OAuthAppChanges: {
          type: 'object',
          additionalProperties: false,
          properties: appFieldProperties,
        },
        User: {
          type: 'object',
          required: ['id', 'username', 'name'],
          additionalProperties: false,
          properties: {
            id: { type: 'integer' },
            username: { type: 'string' },
            name: { type: 'string' },
            email: { type: 'string', description: 'Only with the `email` scope (OAuth tokens) or for personal access tokens' },
          },
        },
      },
    },
    paths: {
      '/groups': {
        get: {
          operationId: 'listGroups',
          summary: 'The groups the token\'s user is a member of',
          description: 'Scope `groups:read-only` (or `groups:read-write`). Ascending `id`. Sends an RFC 8288 `Link` header with first, prev, next and last.',
          parameters: [
            ...pageParams,
            { name: 'filter', in: 'query', required: false, schema: { type: 'string', maxLength: 100 }, description: 'Case-insensitive match on name or path' },
          ],
          responses: {
            200: {
              description: 'One page of groups',
              headers: { ...requestIdHeader, Link: { schema: { type: 'string' } } },
              content: json(listOf({ $ref: '#/components/schemas/Group' })),
            },
            400: errorResponse('A pagination or filter parameter is invalid (the description names it)'),
            ...authErrors,
          },
        },
      },
      '/groups/{id}': {
        get: {
          operationId: 'getGroup',
          summary: 'One group the token\'s user belongs to',
          description: 'Scope `groups:read-only`. A group the user is not a member of is a 404.',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 2_147_483_647 } }],
          responses: {
            200: { description: 'The group', headers: requestIdHeader, content: json(single({ $ref: '#/components/schemas/Group' })) },
            400: errorResponse('The id is not a positive integer'),
            ...authErrors,
            404: errorResponse('No such group, or the user is not a member'),
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
            200: {
              description: 'One page of applications',
              headers: { ...requestIdHeader, Link: { schema: { type: 'string' } } },
              content: json(listOf(ref('OAuthApp'))),
            },
            400: errorResponse('The id or a pagination parameter is invalid (the description names it)'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
          },
        },
        post: {
          operationId: 'createOAuthApp',
          summary: 'Create an OAuth application of a group (owners only)',
          description: 'Scope `groups:read-write`; the caller must be an owner. The response carries the first client secret (`clientSecret`), shown this once.',
          parameters: [groupIdParam],
          requestBody: { ...jsonBody(ref('NewOAuthApp'), 'The application\'s fields; an unknown field is a 400'), required: true },
          responses: {
            201: {
              description: 'The application, with its client secret shown once',
              headers: { ...requestIdHeader, Location: { schema: { type: 'string' }, description: 'The application\'s URL in this API' } },
              content: json(single(ref('CreatedOAuthApp'))),
            },
            400: errorResponse('A field is missing, of the wrong type, unknown or invalid (the description names it)'),
            ...ownerAuthErrors,
            404: errorResponse('No such group, or the caller is not a member'),
            ...bodyErrors,
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
            200: { description: 'The application', headers: requestIdHeader, content: json(single(ref('OAuthAppWithSecrets'))) },
            ...ownerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
          },
        },
        patch: {
          operationId: 'updateOAuthApp',
          summary: 'Edit any of the fields of an OAuth application (owners only)',
          description: 'Scope `groups:read-write`. Fields left out keep their value.',
          parameters: [clientIdParam],
          requestBody: jsonBody(ref('OAuthAppChanges'), 'The fields to change; an unknown field is a 400'),
          responses: {
            200: { description: 'The application as it is now', headers: requestIdHeader, content: json(single(ref('OAuthAppWithSecrets'))) },
            400: errorResponse('A field is of the wrong type, unknown or invalid (the description names it)'),
            ...ownerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
            ...bodyErrors,
          },
        },
        delete: {
          operationId: 'deleteOAuthApp',
          summary: 'Delete an OAuth application (owners only)',
          description: 'Scope `groups:read-write`. Every code, access token and refresh token issued to it stops working at once, and its secrets no longer authenticate.',
          parameters: [clientIdParam],
          responses: {
            204: noContent('Deleted'),
            ...ownerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
          },
        },
      },
      '/oauth-apps/{clientID}/secrets': {
        post: {
          operationId: 'createClientSecret',
          summary: 'A new client secret, shown once (owners only)',
          description: 'Scope `groups:read-write`. An application holds at most two active secrets, so a server can rotate without downtime; a third is a 409.',
          parameters: [clientIdParam],
          requestBody: jsonBody({ type: 'object', additionalProperties: false, properties: {} }, 'Nothing, or an empty object'),
          responses: {
            201: { description: 'The secret, shown this once', headers: requestIdHeader, content: json(single(ref('NewClientSecret'))) },
            400: errorResponse('The body has a field (none is taken)'),
            ...ownerAuthErrors,
            404: errorResponse('No such application, or the caller is not a member of its group'),
            409: errorResponse('The application already holds two active secrets; revoke one first'),
            ...bodyErrors,
          },
        },
      },
      '/oauth-apps/{clientID}/secrets/{secretID}': {
        delete: {
          operationId: 'revokeClientSecret',
          summary: 'Revoke one client secret (owners only)',
          description: 'Scope `groups:read-write`. From the next request on, on every instance, the secret no longer authenticates.',
          parameters: [clientIdParam, { name: 'secretID', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 2_147_483_647 } }],
          responses: {
            204: noContent('Revoked'),
            400: errorResponse('The secretID is not a positive integer'),
            ...ownerAuthErrors,
            404: errorResponse('No such application or secret, or the caller is not a member of the group'),
          },
        },
      },
      '/user': {
        get: {
          operationId: 'getUser',
          summary: 'The token\'s user',
          description: 'Any scope.',
          responses: {
            200: { description: 'The user', headers: requestIdHeader, content: json(single({ $ref: '#/components/schemas/User' })) },
            401: authErrors[401],
          },
        },
      },
    },
  };
}
