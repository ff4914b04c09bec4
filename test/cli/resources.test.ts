import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { ROUTES } from '../../src/provider/configuration.js';
import { describeEachProfile, useDatabase } from '../helpers/app.js';
import { idp, json, refusal } from '../helpers/cli.js';
import { makeGroup, makeUser } from '../helpers/factories.js';

const ISSUER = 'https://id.example.test';
const SECRET_SHAPE = /^hs_[0-9A-Za-z]{36}$/;
const FIELDS = ['clientId', 'createdAt', 'id', 'identifier', 'introspectionEndpoint', 'metadataUrl', 'name', 'scopes', 'secretLastFour', 'tokenFormat', 'updatedAt'];

/** An identifier of its own for each resource: identifiers are unique on the site. */
const identifierFor = () => `https://tools-${randomBytes(4).toString('hex')}.example.test/mcp`;

describeEachProfile('idp CLI: resources', function (profile) {
  // Each run is a process of its own (tsx start-up: seconds on a loaded machine).
  this.timeout(120_000);
  const t = useDatabase(profile);
  /** The CLI, with the issuer the resource's addresses are made from. */
  const cli = (args: string[]) => idp(t.url, args, '', { ISSUER });

  async function ownedGroup() {
    const owner = await makeUser(t.db);
    return makeGroup(t.db, owner.id);
  }

  it('resource create prints the resource with its client ID and the secret once, and stores only the secret’s digest', async () => {
    const group = await ownedGroup();
    const identifier = identifierFor();
    const created = json(await cli([
      'resource', 'create', '--group', group.path, '--identifier', identifier, '--name', 'Tools',
      '--scope', 'tools:read=Read your tools', '--scope', 'tools:write=Change your tools (a = b)', '--token-format', 'jwt', '--json',
    ]));
    expect(Object.keys(created).sort()).to.deep.equal([...FIELDS, 'clientSecret'].sort());
    expect(created).to.deep.include({
      identifier,
      name: 'Tools',
      tokenFormat: 'jwt',
      scopes: [{ name: 'tools:read', description: 'Read your tools' }, { name: 'tools:write', description: 'Change your tools (a = b)' }],
      introspectionEndpoint: `${ISSUER}${ROUTES.introspection}`,
      metadataUrl: `${ISSUER}/login/oauth/resource-metadata?${new URLSearchParams({ resource: identifier })}`,
    });
    expect(created.clientId).to.match(/^rs_[0-9a-f]{20}$/);
    const secret = String(created.clientSecret);
    expect(secret).to.match(SECRET_SHAPE);
    const row = await t.db('resources').where({ id: created.id }).first();
    expect(row).to.include({ group_id: group.id, client_id: created.clientId, secret_last_four: secret.slice(-4) });
    expect(row.secret_digest).to.equal(createHash('sha256').update(secret).digest('base64url'));
    const everything = JSON.stringify([await t.db('resources').select(), await t.db('audit_events').select()]);
    expect(everything).not.to.include(secret.slice(3, 33));
    const audit = await t.db('audit_events').where({ group_id: group.id, action: 'resource.create' }).select('target');
    expect(audit).to.deep.equal([{ target: identifier }]);
  });

  it('resource create without --token-format makes opaque tokens, and tells a person the secret will not be shown again', async () => {
    const group = await ownedGroup();
    const run = await cli(['resource', 'create', '--group', group.path, '--identifier', identifierFor(), '--name', 'Human', '--scope', 'read=Read']);
    expect(run).to.include({ code: 0, stderr: '' });
    expect(run.stdout).to.match(/token format:\s+opaque/);
    expect(run.stdout).to.match(/clientID:\s+rs_[0-9a-f]{20}/);
    expect(/clientSecret:\s+(\S+)/.exec(run.stdout)?.[1]).to.match(SECRET_SHAPE);
    expect(run.stdout).to.match(/will not be shown again/);
    expect(run.stdout).to.include(`${ISSUER}${ROUTES.introspection}`);
  });

  it('resource list shows the group’s resources and never a secret; resource delete removes one by its identifier', async () => {
    const group = await ownedGroup();
    const other = await ownedGroup();
    const identifiers = [identifierFor(), identifierFor()];
    const secrets: string[] = [];
    // One after the other, so that the list's order is known.
    for (const identifier of identifiers) {
      secrets.push(String(json(await cli(['resource', 'create', '--group', group.path, '--identifier', identifier, '--name', 'Listed', '--scope', 'read=Read', '--json'])).clientSecret));
    }
    await cli(['resource', 'create', '--group', other.path, '--identifier', identifierFor(), '--name', 'Elsewhere', '--scope', 'read=Read']);

    const [listedRun, text] = await Promise.all([cli(['resource', 'list', '--group', group.path, '--json']), cli(['resource', 'list', '--group', group.path])]);
    const listed = json(listedRun) as { resources: Array<Record<string, unknown>> };
    expect(listed.resources.map((r) => r.identifier)).to.deep.equal(identifiers);
    for (const r of listed.resources) expect(Object.keys(r).sort()).to.deep.equal(FIELDS);
    for (const output of [JSON.stringify(listed), text.stdout]) {
      for (const secret of secrets) expect(output).not.to.include(secret);
    }
    expect(text.stdout).to.include(identifiers[0]).and.include(identifiers[1]).and.not.include('Elsewhere');

    // Named as typed by hand: the host in capitals is the same identifier.
    const gone = json(await cli(['resource', 'delete', '--group', group.path, '--identifier', identifiers[0]!.replace('.example.test', '.EXAMPLE.TEST'), '--json']));
    expect(gone).to.deep.include({ identifier: identifiers[0], deleted: true, groupId: group.id });
    expect(await t.db('resources').where({ identifier: identifiers[0] }).first()).to.equal(undefined);
    expect(await t.db('audit_events').where({ group_id: group.id, action: 'resource.delete' }).select('target')).to.deep.equal([{ target: identifiers[0] }]);
    const [afterRun, otherRun] = await Promise.all([cli(['resource', 'list', '--group', group.path, '--json']), cli(['resource', 'list', '--group', other.path])]);
    const after = json(afterRun) as { resources: Array<Record<string, unknown>> };
    expect(after.resources.map((r) => r.identifier)).to.deep.equal([identifiers[1]]);
    expect(otherRun.stdout).to.include('Elsewhere').and.not.include(identifiers[1]);
  });

  // Each refusal is a process of its own (tsx start-up: seconds on a loaded machine), so they run side by side.
  it('refuses bad input naming the flag, and creates nothing', async () => {
    const group = await ownedGroup();
    const elsewhere = await ownedGroup();
    const taken = identifierFor();
    json(await cli(['resource', 'create', '--group', elsewhere.path, '--identifier', taken, '--name', 'Taken', '--scope', 'read=Read', '--json']));
    const create = (...flags: string[]) => cli(['resource', 'create', '--group', group.path, '--name', 'Bad', ...flags]);
    const [ftp, query, reserved, twice, noEquals, noScope, format, duplicate, unknownDelete] = await Promise.all([
      create('--identifier', 'ftp://tools.example.test/', '--scope', 'read=Read'),
      create('--identifier', 'https://tools.example.test/mcp?x=1', '--scope', 'read=Read'),
      create('--identifier', identifierFor(), '--scope', 'openid=Sign in'),
      create('--identifier', identifierFor(), '--scope', 'read=Read', '--scope', 'read=Again'),
      create('--identifier', identifierFor(), '--scope', 'read'),
      create('--identifier', identifierFor()),
      create('--identifier', identifierFor(), '--scope', 'read=Read', '--token-format', 'paseto'),
      create('--identifier', taken, '--scope', 'read=Read'),
      cli(['resource', 'delete', '--group', group.path, '--identifier', taken]),
    ]);
    expect(refusal(ftp)).to.match(/^idp: --identifier: identifier must be an https:\/\/ URL/);
    expect(refusal(query)).to.match(/^idp: --identifier: .*query/);
    expect(refusal(reserved)).to.match(/^idp: --scope: .*service's own/);
    expect(refusal(twice)).to.match(/^idp: --scope: scopes names read twice/);
    expect(refusal(noEquals)).to.match(/^idp: --scope "read": give the scope as name=description/);
    expect(refusal(noScope)).to.match(/^idp: --scope is required/);
    expect(refusal(format)).to.equal('idp: --token-format: tokenFormat must be opaque or jwt');
    expect(refusal(duplicate)).to.match(/identifier is already registered/);
    expect(refusal(unknownDelete)).to.equal(`idp: --identifier: ${group.path} has no resource "${taken}"`);
    expect(await t.db('resources').where({ group_id: group.id }).first()).to.equal(undefined);
    expect(await t.db('resources').where({ identifier: taken }).first()).to.include({ group_id: elsewhere.id });
  });
});
