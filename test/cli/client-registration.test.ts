import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { idp as cli, json, refusal } from '../helpers/cli.js';
import { makeGroup, makeUser } from '../helpers/factories.js';

describeEachProfile('idp client-registration', function (profile) {
  // Each test starts the CLI (a new Node.js process) a few times.
  this.timeout(180_000);
  const running = useIdp(profile);
  const run = (args: string[]) => cli(running.database.url, args, '', { ISSUER: running.url });

  it('shows the switches, sets them a flag at a time (the others stay), and records each change as the CLI\'s', async () => {
    const owner = await makeUser(running.db);
    const group = await makeGroup(running.db, owner.id);
    expect(json(await run(['client-registration', 'show', '--json']))).to.deep.equal({ metadataDocuments: false, dynamicRegistration: false, group: null, registrationEndpoint: `${running.url}/login/oauth/register` });

    const set = await run(['client-registration', 'set', '--metadata-documents', 'on', '--group', group.path]);
    expect(set.code, set.stderr).to.equal(0);
    expect(set.stdout).to.contain('metadata documents:     on').and.contain('dynamic registration:   off').and.contain(`group:                  ${group.path}`);

    expect(json(await run(['client-registration', 'set', '--dynamic-registration', 'on', '--json']))).to.deep.include({ metadataDocuments: true, dynamicRegistration: true, group: group.path });
    expect(json(await run(['client-registration', 'set', '--metadata-documents', 'off', '--json']))).to.deep.include({ metadataDocuments: false, dynamicRegistration: true, group: group.path });
    const shown = await run(['client-registration', 'show']);
    expect(shown.stdout).to.contain('dynamic registration:   on').and.contain(`registration endpoint:  ${running.url}/login/oauth/register`);

    const rows = await running.db('audit_events').where({ action: 'client_registration.update' }).orderBy('id').select('actor_id', 'details', 'target');
    expect(rows).to.have.length(3);
    for (const row of rows) {
      expect(row.actor_id).to.equal(null);
      expect(JSON.parse(row.details).via).to.equal('cli');
      expect(row.target).to.equal(group.path);
    }
    expect(json(await run(['client-registration', 'set', '--dynamic-registration', 'off', '--group', '', '--json']))).to.deep.include({ metadataDocuments: false, dynamicRegistration: false, group: null });
  });

  it('refuses bad input with one line naming the flag, exit 2, changing nothing', async () => {
    expect(refusal(await run(['client-registration', 'set']))).to.contain('nothing to change');
    expect(refusal(await run(['client-registration', 'set', '--metadata-documents', 'yes']))).to.equal('idp: --metadata-documents: must be on or off');
    expect(refusal(await run(['client-registration', 'set', '--metadata-documents', 'on', '--group', '']))).to.match(/^idp: --group: group is required while client registration is on/);
    expect(refusal(await run(['client-registration', 'set', '--metadata-documents', 'on', '--group', 'no-such-group-here']))).to.equal('idp: --group: group must be the path of an existing group');
    expect(json(await run(['client-registration', 'show', '--json']))).to.deep.include({ metadataDocuments: false, dynamicRegistration: false });
  });
});
