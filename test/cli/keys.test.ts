import { expect } from 'chai';
import { loadOrCreateKeys, signingKeyStatuses } from '../../src/provider/keys.js';
import { describeEachProfile } from '../helpers/app.js';
import { idp, json, refusal } from '../helpers/cli.js';
import { freshDatabase, type TestDatabase } from '../helpers/db.js';

const HOUR = 3600 * 1000;

/** The signing keys' rows, oldest first. */
function signingRows(t: TestDatabase): Promise<Array<{ id: number; created_at: Date | string; active_from: Date | string | null }>> {
  return t.db('keys').where({ kind: 'signing' }).select('id', 'created_at', 'active_from').orderBy('id');
}

/** Moves a key's creation and activation into the past, as if it had been rotated in `hoursAgo` hours ago. */
async function backdate(t: TestDatabase, id: number, hoursAgo: number): Promise<void> {
  const at = new Date(Date.now() - hoursAgo * HOUR).toISOString();
  await t.db('keys').where({ id }).update({ created_at: at, active_from: at });
}

/** `idp keys …` beyond the rotation on running instances (test/ops/key-rotation.test.ts): the rules of retiring, and existing databases. */
describeEachProfile('idp keys', function (profile) {
  // Each test runs the CLI two or three times, a process each.
  this.timeout(60_000);
  let t: TestDatabase;
  beforeEach(async () => {
    t = await freshDatabase(profile);
  });
  afterEach(() => t.drop());

  const keys = (...args: string[]) => idp(t.url, ['keys', ...args], '', { REDIS_URL: '' });

  it('rotate on a database where no key signs yet makes a key that signs at once', async () => {
    const rotated = json(await keys('rotate', '--json'));
    expect(rotated.activeFrom).to.equal(rotated.createdAt);
    const { keys: listed } = json(await keys('list', '--json')) as { keys: Array<Record<string, unknown>> };
    expect(listed).to.deep.equal([{ kid: rotated.kid, createdAt: rotated.createdAt, activeFrom: rotated.activeFrom, state: 'signing' }]);
  });

  it('retire removes a previous key without --force once the tokens it signed have expired', async () => {
    await loadOrCreateKeys(t.db);
    const rotated = json(await keys('rotate', '--json'));
    const [old, current] = await signingRows(t);
    // The old key stopped signing two hours ago: its ID tokens (one hour) have expired.
    await backdate(t, old!.id, 3);
    await backdate(t, current!.id, 2);
    const { keys: listed } = json(await keys('list', '--json')) as { keys: Array<{ kid: string; state: string; retirableFrom?: string }> };
    expect(listed.map((key) => key.state)).to.deep.equal(['signing', 'previous']);
    expect(Date.parse(listed[1]!.retirableFrom!)).to.be.below(Date.now());

    expect(json(await keys('retire', listed[1]!.kid, '--json'))).to.deep.equal({ kid: listed[1]!.kid, state: 'previous', retired: true });
    expect((await signingRows(t)).map((row) => row.id)).to.deep.equal([current!.id]);
    expect((await loadOrCreateKeys(t.db)).signing.map((key) => key.kid)).to.deep.equal([rotated.kid]);
  });

  it('retire calls off a rotation: a key that has not signed yet goes without --force', async () => {
    await loadOrCreateKeys(t.db);
    const rotated = json(await keys('rotate', '--json'));
    expect(Date.parse(String(rotated.activeFrom)) - Date.parse(String(rotated.createdAt))).to.equal(HOUR);
    const run = await keys('retire', String(rotated.kid));
    expect(run).to.deep.include({ code: 0, stderr: '' });
    expect(run.stdout).to.include(`retired signing key ${String(rotated.kid)}`).and.include('it had not signed yet');
    expect(await signingRows(t)).to.have.length(1);
  });

  it('retire without a kid is refused with exit 2', async () => {
    expect(refusal(await keys('retire'))).to.equal('idp: <kid> is required');
  });

  it('treats the keys of a database from before activation times as active: the newest signs, the others verify', async () => {
    await loadOrCreateKeys(t.db);
    await keys('rotate');
    // Back to the schema before the activation column, then forward again, as an upgrade runs it.
    await t.db.migrate.down({ name: '0016_signing_key_activation' });
    await t.db.migrate.latest();
    const rows = await signingRows(t);
    for (const row of rows) expect(new Date(row.active_from!).toISOString()).to.equal(new Date(row.created_at).toISOString());
    const { signing } = await loadOrCreateKeys(t.db);
    expect(signingKeyStatuses(signing, Date.now()).map((key) => key.state)).to.deep.equal(['signing', 'previous']);
  });
});
