import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { REPORT_ACCEPTED } from '../../src/api/credentials/routes.js';
import { generateToken, type TokenPrefix } from '../../src/tokens.js';
import { call, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, useIdp, type RunningIdp } from '../helpers/app.js';
import { TEST_REDIS_URL } from '../helpers/db.js';
import { signIn } from '../helpers/browser.js';
import { makeClient, makeUser, personalToken } from '../helpers/factories.js';
import { unescapeHtml } from '../helpers/html.js';
import { basicAuth, oauthTokens, refresh, tokenRequest } from '../helpers/oauth.js';

const report = (idp: { url: string }, credentials: unknown) =>
  call(idp, '/apis/v2/credentials/revoke', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ credentials }) });

/** A value of the right shape whose checksum does not match. */
function badChecksum(prefix: TokenPrefix): string {
  const good = generateToken(prefix);
  const last = good.at(-1) === 'A' ? 'B' : 'A';
  return good.slice(0, -1) + last;
}

/** The one answer every accepted report gets. */
function expectAccepted(res: ApiResponse): string {
  expect(res.status, res.text).to.equal(202);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(res.headers.get('www-authenticate')).to.equal(null);
  return res.text;
}

describeEachProfile('reports of leaked credentials', (profile) => {
  const idp = useIdp(profile);

  it('revokes live ha_, hs_, ho_ and hr_ values, each recorded where its owner reads it', async () => {
    const user = await makeUser(idp.db);
    const client = await makeClient(idp.db);
    const pat = await personalToken(idp.db, user.id, { name: 'pushed to github' });
    const keptPat = await personalToken(idp.db, user.id, { name: 'kept' });
    const oauth = await oauthTokens(idp.url, client, user, 'groups:read-only');
    const other = await oauthTokens(idp.url, client, await makeUser(idp.db), 'groups:read-only');
    const rotated = await oauthTokens(idp.url, client, await makeUser(idp.db), 'groups:read-only');
    expect((await call(idp, '/apis/v2/user', { token: pat })).status).to.equal(200);

    expectAccepted(await report(idp, [pat, client.clientSecret, other.accessToken, rotated.refreshToken]));

    expect((await call(idp, '/apis/v2/user', { token: pat })).status, 'the reported personal token').to.equal(401);
    expect((await call(idp, '/apis/v2/user', { token: keptPat })).status, 'the user’s other token').to.equal(200);
    expect((await call(idp, '/apis/v2/user', { token: other.accessToken })).status, 'the reported access token').to.equal(401);
    expect((await call(idp, '/apis/v2/user', { token: oauth.accessToken })).status, 'an access token not reported').to.equal(200);
    // The refresh token's grant ends with it: its access token too.
    expect((await call(idp, '/apis/v2/user', { token: rotated.accessToken })).status).to.equal(401);
    expect((await refresh(idp.url, client, rotated.refreshToken)).body?.error).to.be.oneOf(['invalid_grant', 'invalid_client']);
    // The secret no longer authenticates: the application has no valid secret left.
    const secretCheck = await tokenRequest(idp.url, {
      authorization: basicAuth(client.clientId, client.clientSecret),
      form: { grant_type: 'refresh_token', refresh_token: oauth.refreshToken },
    });
    expect(secretCheck.status).to.equal(401);
    expect(secretCheck.body.error).to.equal('invalid_client');

    const groupLog = await idp.db('audit_events').where({ group_id: client.group.id }).whereIn('action', ['app.secret.report.revoke', 'app.token.report.revoke']).orderBy('id');
    expect(groupLog.map((r) => r.action)).to.deep.equal(['app.secret.report.revoke', 'app.token.report.revoke', 'app.token.report.revoke']);
    expect(groupLog.every((r) => r.actor_id === null && r.target === client.clientId)).to.equal(true);
    expect(JSON.parse(groupLog[0].details)).to.deep.equal({ lastFour: client.clientSecret.slice(-4) });
    expect(JSON.parse(groupLog[1].details).token).to.equal('access token');
    expect(JSON.parse(groupLog[2].details).token).to.equal('refresh token and its grant');
    const userLog = await idp.db('audit_events').where({ user_id: user.id });
    expect(userLog.map((r) => [r.action, r.target, r.group_id])).to.deep.equal([['token.report.revoke', 'pushed to github', null]]);

    // The group's owner reads it in the audit log; the user on the Access tokens page.
    const ownerBrowser = await signIn(idp.url, client.user);
    const audit = unescapeHtml((await ownerBrowser.get(`/groups/${client.group.path}/settings/audit`).expect(200)).text);
    expect(audit).to.include('Client secret revoked: reported public').and.include('OAuth token revoked: reported public').and.include('leaked-credential report');
    const page = unescapeHtml((await (await signIn(idp.url, user)).get('/account/settings/tokens').expect(200)).text);
    expect(page).to.match(/The token “pushed to github” was revoked because it was reported public on <time datetime="\d{4}-\d\d-\d\dT[^"]+">[A-Z][a-z]{2} \d{1,2}, \d{4}, [^<]+ UTC<\/time>/);
    // Not the site's own log.
    const admin = await idp.db('audit_events').whereNull('group_id').whereNull('user_id').whereLike('action', '%report%');
    expect(admin).to.deep.equal([]);
  });

  it('answers the same to live, revoked, malformed and foreign values, and revokes nothing it should not', async () => {
    const user = await makeUser(idp.db);
    const live = await personalToken(idp.db, user.id);
    const bystander = await personalToken(idp.db, user.id);
    const answers = [
      await report(idp, [live]),
      await report(idp, [live]),
      await report(idp, [badChecksum('ha_'), badChecksum('ho_'), badChecksum('hs_'), badChecksum('hr_')]),
      await report(idp, [generateToken('ha_'), generateToken('ho_'), generateToken('hs_'), generateToken('hr_')]),
      await report(idp, ['', 'password123', `${bystander}x`, bystander.slice(0, -1)]),
    ].map(expectAccepted);
    expect(new Set(answers).size).to.equal(1);
    expect(JSON.parse(answers[0]!)).to.have.all.keys('message');
    expect((await call(idp, '/apis/v2/user', { token: bystander })).status, 'a near miss revokes nothing').to.equal(200);
    expect(await idp.db('audit_events').where({ user_id: user.id }).count({ n: '*' }).first().then((r) => Number((r as { n: number }).n))).to.equal(1);
  });

  it('takes 1 to 1,000 strings; anything else is a 400 naming the field', async () => {
    expectAccepted(await report(idp, Array.from({ length: 1000 }, () => generateToken('ho_'))));
    for (const [credentials, words] of [
      [Array.from({ length: 1001 }, () => generateToken('ho_')), /^credentials must hold at most 1000 values/],
      [[], /^credentials must hold at least one value/],
      ['ho_x', /^credentials /],
      [[1], /^credentials\[0\] /],
      [undefined, /^credentials is required/],
    ] as const) {
      const res = await report(idp, credentials);
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.match(words);
    }
    const unknownField = await call(idp, '/apis/v2/credentials/revoke', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ credentials: ['x'], extra: 1 }) });
    expectApiError(unknownField, 400, 'invalid_request');
  });
});

describeEachProfile('reports of leaked credentials: the per-address limit', (profile) => {
  const idp = useIdp(profile, { RATE_LIMIT_CREDENTIAL_REPORTS_IP: '2/1h' });

  it('refuses the third report from one address within the window with 429 and Retry-After, before reading it', async () => {
    const user = await makeUser(idp.db);
    const token = await personalToken(idp.db, user.id);
    expectAccepted(await report(idp, [generateToken('ha_')]));
    expectAccepted(await report(idp, ['x']));
    const refused = await report(idp, [token]);
    expectApiError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 3600);
    expect(refused.body.error_description).to.equal(`Too many credential reports from this address: at most 2 per 1 hour; retry after ${refused.headers.get('retry-after')} seconds.`);
    expect((await call(idp, '/apis/v2/user', { token })).status, 'the refused report revoked nothing').to.equal(200);
    const invalid = await call(idp, '/apis/v2/credentials/revoke', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(invalid.status, 'counted before the body is read').to.equal(429);
  });
});

/**
 * What one report costs storage, counted where it happens: every SQL statement the service's
 * knex sends (its `query` event), and every command its Redis connection sends (the server's
 * MONITOR, filtered to that connection; commands a script runs inside Redis are not sent).
 */
async function storageCalls(idp: RunningIdp, fn: () => Promise<void>): Promise<{ sql: number; redis: number }> {
  const counted = { sql: 0, redis: 0 };
  const onQuery = () => {
    counted.sql += 1;
  };
  idp.db.on('query', onQuery);
  const service = idp.idp.redis as Redis | undefined;
  const monitor = service ? await new Redis(TEST_REDIS_URL!).monitor() : undefined;
  const source = service ? `${service.stream.localAddress}:${service.stream.localPort}` : '';
  const marker = `end-of-report-${randomBytes(4).toString('hex')}`;
  const ended = new Promise<void>((resolve) =>
    monitor?.on('monitor', (_time: string, args: string[], from: string) => {
      if (from === source) counted.redis += 1;
      if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) resolve();
    }),
  );
  try {
    await fn();
    if (service) {
      // MONITOR reports commands in the order they ran: once this one arrives, every earlier one has.
      await service.echo(marker);
      await ended;
      counted.redis -= 1;
    }
  } finally {
    idp.db.off('query', onQuery);
    monitor?.disconnect();
  }
  return counted;
}

describeEachProfile('reports of leaked credentials: values as they are found', (profile) => {
  const idp = useIdp(profile);

  it('revokes the live tokens of a report whose values carry a tab, a line ending or a control character, and ignores what is not a token', async () => {
    const user = await makeUser(idp.db);
    const client = await makeClient(idp.db);
    const pat = await personalToken(idp.db, user.id);
    const spared = await personalToken(idp.db, user.id);
    const oauth = await oauthTokens(idp.url, client, user, 'groups:read-only');
    const answer = await report(idp, [`${pat}\t`, `${oauth.accessToken}\r\n`, `${spared.slice(0, 10)}\u0000${spared.slice(10)}`, 'pasted\u0007junk']);
    expectAccepted(answer);
    expect(answer.body).to.deep.equal(REPORT_ACCEPTED);
    expect((await call(idp, '/apis/v2/user', { token: pat })).status, 'the tab-suffixed personal token').to.equal(401);
    expect((await call(idp, '/apis/v2/user', { token: oauth.accessToken })).status, 'the access token with its line ending').to.equal(401);
    expect((await call(idp, '/apis/v2/user', { token: spared })).status, 'a token with a control character inside is not that token').to.equal(200);
  });

  it('looks up 1,000 reported values with a bounded number of storage calls, not one per value', async () => {
    const values = (['ha_', 'hs_', 'ho_', 'hr_'] as const).flatMap((prefix) => Array.from({ length: 250 }, () => generateToken(prefix)));
    const calls = await storageCalls(idp, async () => {
      expectAccepted(await report(idp, values));
    });
    // One per kind, and the few the rate limit and the request itself take.
    expect(calls.sql + calls.redis, JSON.stringify(calls)).to.be.at.most(12);
  });
});
