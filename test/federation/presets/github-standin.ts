import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { json } from './harness.js';

/**
 * A local server standing in for GitHub (and GitHub Enterprise Server, whose layout it has: the web
 * endpoints at <base>/login/oauth/…, the REST API at <base>/api/v3), answering as GitHub's public
 * documentation says:
 * - "Authorizing OAuth apps" (docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps):
 *   GET /login/oauth/authorize redirects back with `code` and `state` (no `iss`); POST
 *   /login/oauth/access_token takes client_id, client_secret, code, redirect_uri, code_verifier and,
 *   with Accept: application/json, answers {access_token, scope, token_type: "bearer"}; a bad code is
 *   answered with HTTP 200 and {error: "bad_verification_code", error_description, error_uri}
 *   ("Troubleshooting OAuth app access token request errors").
 * - REST API "Get the authenticated user" (GET /user) and "List email addresses for the authenticated
 *   user" (GET /user/emails: email, primary, verified, visibility), bearer token, 401 {message:
 *   "Bad credentials"} for a bad one, 404 without the user:email scope.
 */
interface FakeGitHub {
  user: Record<string, unknown>;
  emails: Array<Record<string, unknown>>;
  emailsStatus: number;
  userStatus: number;
  userDelayMs: number;
  codes: Map<string, { challenge: string; redirectUri: string }>;
  seen: { token?: URLSearchParams; apiHeaders: Array<Record<string, string | string[] | undefined>> };
}

export function fakeGitHub(apiPrefix: string) {
  const state: FakeGitHub = {
    user: {},
    emails: [],
    emailsStatus: 200,
    userStatus: 200,
    userDelayMs: 0,
    codes: new Map(),
    seen: { apiHeaders: [] },
  };
  const token = `gho_${randomBytes(18).toString('hex')}`;
  const handler = async (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      // The person approves: a code bound to the PKCE challenge, back to the redirect URI with the state.
      const code = randomBytes(10).toString('hex');
      state.codes.set(code, { challenge: url.searchParams.get('code_challenge') ?? '', redirectUri: url.searchParams.get('redirect_uri') ?? '' });
      const back = new URL(url.searchParams.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.href });
      res.end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const form = new URLSearchParams(body);
      state.seen.token = form;
      const issued = state.codes.get(form.get('code') ?? '');
      state.codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      if (form.get('client_id') !== 'our-client-id' || form.get('client_secret') !== 'our-client-secret') {
        json(res, 200, { error: 'incorrect_client_credentials', error_description: 'The client_id and/or client_secret passed are incorrect.', error_uri: 'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials' });
        return;
      }
      if (!issued || issued.challenge !== challenge || issued.redirectUri !== form.get('redirect_uri')) {
        json(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.', error_uri: 'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code' });
        return;
      }
      json(res, 200, { access_token: token, scope: 'read:user,user:email', token_type: 'bearer' });
      return;
    }
    if (req.method === 'GET' && (url.pathname === `${apiPrefix}/user` || url.pathname === `${apiPrefix}/user/emails`)) {
      state.seen.apiHeaders.push({ ...req.headers });
      if (state.userDelayMs && url.pathname.endsWith('/user')) await new Promise((r) => setTimeout(r, state.userDelayMs));
      if (req.headers.authorization !== `Bearer ${token}`) {
        json(res, 401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
        return;
      }
      if (url.pathname.endsWith('/emails')) {
        if (state.emailsStatus === 404) json(res, 404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest/users/emails#list-email-addresses-for-the-authenticated-user' });
        else json(res, state.emailsStatus, state.emails);
        return;
      }
      if (state.userStatus !== 200) json(res, state.userStatus, { message: 'Server Error' });
      else json(res, 200, state.user);
      return;
    }
    json(res, 404, { message: 'Not Found' });
  };
  return { state, handler };
}

/** Plays the person at GitHub: follows the authorization URL to the redirect it answers with. */
export async function approve(url: URL): Promise<URL> {
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status).to.equal(302);
  return new URL(res.headers.get('location') ?? '');
}

export const octocat = {
  login: 'octocat', id: 583231, node_id: 'MDQ6VXNlcjU4MzIzMQ==', type: 'User', site_admin: false,
  name: 'The Octocat', company: '@github', email: null,
};
