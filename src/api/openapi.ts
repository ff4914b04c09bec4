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
