import { expect } from 'chai';
import { recordAudit } from '../../src/db/audit.js';
import { claimDueDeliveries } from '../../src/db/webhooks.js';
import { keyCipher } from '../../src/key-encryption.js';
import { deleteApplication, generateClientSecret, revokeClientSecret, updateApplication } from '../../src/services/apps.js';
import { deleteGroup } from '../../src/services/group-deletion.js';
import { addMember, changeRole, removeMember, updateGroupSettings } from '../../src/services/groups.js';
import { deleteWebhook, deliveriesOf, DELETED, redeliver, TURNED_OFF, updateWebhook } from '../../src/services/webhooks/manage.js';
import { now } from '../../src/time.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from '../../src/vocabulary.js';
import { call } from '../helpers/api.js';
import { describeEachProfile, freePort, startIdp, useDatabase, useIdp, waitFor } from '../helpers/app.js';
import { appAccess, groupAccess, makeApp, makeGroup, makeUser } from '../helpers/factories.js';
import { makeWebhook, SECRET, startReceiver, type Receiver } from './helpers.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Quick retries and polls, so a test sees what a day of backoff would do; loopback receivers allowed. */
const FAST = { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_POLL_MS: '20', WEBHOOKS_RETRY_MS: '50' };

async function until(receiver: Receiver, count: number, what = 'deliveries'): Promise<void> {
  await waitFor(async () => receiver.received.length >= count, () => `expected ${count} ${what}, the receiver got ${receiver.received.length}: ${receiver.received.map((r) => r.event).join(', ')}`);
}

describeEachProfile('Webhook deliveries', (profile) => {
  const idp = useIdp(profile, FAST);
  const receivers: Receiver[] = [];
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.close();
  });
  async function receiver(answer?: Parameters<typeof startReceiver>[1]) {
    const started = await startReceiver(SECRET, answer);
    receivers.push(started);
    return started;
  }

  async function ownedGroup() {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    return { owner, group, access: () => groupAccess(idp.db, owner.id, group.id) };
  }

  it('delivers a member.added event as a JSON POST signed so that GitHub\'s verifier accepts it', async () => {
    const { owner, group, access } = await ownedGroup();
    const hook = await receiver();
    await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
    const member = await makeUser(idp.db);
    await addMember(idp.db, await access(), { user: member.username, role: 'member' });
    await until(hook, 1);
    const [got] = hook.received;
    expect(got!.event).to.equal('member.added');
    expect(got!.delivery).to.match(UUID);
    expect(got!.signature).to.match(/^sha256=[0-9a-f]{64}$/);
    expect(got!.verified, 'the signature verifies with the secret').to.equal(true);
    expect(got!.contentType).to.equal('application/json');
    expect(got!.userAgent).to.match(/^Horizon-ID-Hookshot\//);
    expect(got!.json).to.deep.include({ event: 'member.added', actor: { type: 'user', id: owner.id, username: owner.username } });
    expect(got!.json.group).to.deep.equal({ id: group.id, path: group.path, name: group.name });
    expect(got!.json.data).to.deep.equal({ member: { username: member.username }, role: 'member' });
    expect(Date.parse(String(got!.json.occurred_at))).to.be.closeTo(Date.now(), 60_000);
  });

  it('signs with the webhook\'s own secret: a receiver with another secret rejects the delivery', async () => {
    const { owner, group, access } = await ownedGroup();
    const hook = await receiver();
    await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
    const other = await startReceiver('another-secret-of-enough-length', () => false);
    receivers.push(other);
    await makeWebhook(idp.db, owner.id, group.id, other.url, ['member.added']);
    await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
    await until(hook, 1);
    await until(other, 1);
    // `other` checks with its own secret a delivery signed with SECRET (both webhooks were made with it).
    expect(hook.received[0]!.verified).to.equal(true);
    expect(other.received[0]!.verified).to.equal(false);
  });

  it('tells each kind of change of a group as its event, the group\'s deletion included', async () => {
    const { owner, group, access } = await ownedGroup();
    const hook = await receiver();
    await makeWebhook(idp.db, owner.id, group.id, hook.url, WEBHOOK_EVENTS);
    const member = await makeUser(idp.db);
    await addMember(idp.db, await access(), { user: member.username, role: 'member' });
    await changeRole(idp.db, await access(), member.id, 'maintainer');
    await removeMember(idp.db, await access(), member.id);
    const { clientId, clientSecret } = await makeApp(idp.db, owner.id, group.id, { name: 'Told App' });
    const app = () => appAccess(idp.db, owner.id, clientId);
    await updateApplication(idp.db, undefined, await app(), { name: 'Renamed App' });
    const second = await generateClientSecret(idp.db, await app());
    await revokeClientSecret(idp.db, await app(), second.id);
    const report = await call(idp, '/apis/v2/credentials/revoke', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ credentials: [clientSecret] }) });
    expect(report.status).to.equal(202);
    await deleteApplication(idp.db, idp.idp.provider, await app());
    await updateGroupSettings(idp.db, await access(), { name: 'Renamed Group', description: '', visibilityLevel: 'private' });
    await deleteGroup(idp.db, idp.idp.provider, await access());

    const expected: WebhookEvent[] = [
      'member.added', 'member.role_changed', 'member.removed',
      'application.created', 'application.updated', 'client_secret.created', 'client_secret.revoked',
      'credentials.revoked', 'application.deleted', 'group.updated', 'group.deleted',
    ];
    await until(hook, expected.length);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Deliveries are sent in parallel, so they may arrive in any order: each carries occurred_at.
    const byTime = [...hook.received].sort((a, b) => String(a.json.occurred_at).localeCompare(String(b.json.occurred_at)));
    expect(hook.received.map((r) => r.event).sort()).to.deep.equal([...expected].sort());
    expect(new Set(hook.received.map((r) => r.delivery)).size).to.equal(expected.length);
    expect(hook.received.every((r) => r.verified && r.json.event === r.event && r.json.group.id === group.id)).to.equal(true);
    const of = (event: WebhookEvent) => byTime.find((r) => r.event === event)!.json.data;
    expect(of('member.role_changed')).to.deep.equal({ member: { username: member.username }, role: 'maintainer', previous_role: 'member' });
    expect(of('member.removed')).to.deep.equal({ member: { username: member.username }, previous_role: 'maintainer', reason: 'removed' });
    expect(of('application.created')).to.deep.include({ application: { client_id: clientId, name: 'Told App', type: 'confidential' } });
    expect(of('application.updated')).to.deep.include({ application: { client_id: clientId }, changes: { name: { from: 'Told App', to: 'Renamed App' } } });
    expect(of('client_secret.revoked')).to.deep.equal({ application: { client_id: clientId }, secret: { last_four: second.lastFour } });
    expect(of('credentials.revoked')).to.deep.equal({ application: { client_id: clientId }, credential: 'client_secret', secret: { last_four: clientSecret.slice(-4) }, reason: 'reported_leaked' });
    expect(of('group.updated')).to.deep.include({ changes: { name: { from: group.name, to: 'Renamed Group' } } });
    expect(of('group.deleted')).to.deep.equal({ applications: 0, members: 1 });
    // The reported secret was revoked by the service itself: no actor.
    expect(byTime.find((r) => r.event === 'credentials.revoked')!.json.actor).to.equal(null);
  });

  it('delivers only the events a webhook listens to, and nothing to an inactive webhook', async () => {
    const { owner, group, access } = await ownedGroup();
    const roles = await receiver();
    const inactive = await receiver();
    await makeWebhook(idp.db, owner.id, group.id, roles.url, ['member.role_changed']);
    const off = await makeWebhook(idp.db, owner.id, group.id, inactive.url, WEBHOOK_EVENTS);
    await updateWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await access(), off.id, { active: false });
    const member = await makeUser(idp.db);
    await addMember(idp.db, await access(), { user: member.username, role: 'member' });
    await changeRole(idp.db, await access(), member.id, 'maintainer');
    await until(roles, 1);
    await idp.idp.webhooks.sendDue();
    expect(roles.received.map((r) => r.event)).to.deep.equal(['member.role_changed']);
    expect(inactive.received).to.have.length(0);
  });

  it('writes no delivery for a change whose transaction is rolled back', async () => {
    const { owner, group } = await ownedGroup();
    const hook = await receiver();
    await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
    const rolledBack = idp.db.transaction(async (trx) => {
      await recordAudit(trx, { groupId: group.id, actorId: owner.id, action: 'member.add', target: 'nobody', details: { role: 'member' }, ip: null }, now());
      throw new Error('the change failed after its audit row');
    });
    await rolledBack.then(() => expect.fail('the transaction committed'), (err: Error) => expect(err.message).to.equal('the change failed after its audit row'));
    expect(await idp.db('webhook_deliveries').where({ group_id: group.id }).count({ n: '*' }).first()).to.deep.include({ n: profile === 'sqlite' ? 0 : '0' });
  });

  it('retries a delivery the receiver answered with 5xx until it answers 2xx, keeping its delivery id', async () => {
    const { owner, group, access } = await ownedGroup();
    let refusals = 2;
    const hook = await receiver((_, res) => {
      if (refusals-- <= 0) return false;
      res.writeHead(503).end('down for maintenance');
      return true;
    });
    const webhook = await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
    await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
    await until(hook, 3);
    expect(new Set(hook.received.map((r) => r.delivery)).size, 'every attempt carries the same X-Horizon-Delivery').to.equal(1);
    await waitFor(async () => (await deliveriesOf(idp.db, await access(), webhook.id))[0]?.state === 'delivered', () => 'the delivery is not recorded as delivered');
    const [delivery] = await deliveriesOf(idp.db, await access(), webhook.id);
    expect(delivery).to.deep.include({ state: 'delivered', attempts: 3, responseStatus: 200, responseBody: 'thanks', error: null });
  });

  it('does not follow a redirect: the attempt fails and the target it points to gets nothing', async () => {
    const { owner, group, access } = await ownedGroup();
    const elsewhere = await receiver();
    const hook = await receiver((_, res) => {
      res.writeHead(307, { Location: elsewhere.url }).end();
      return true;
    });
    const webhook = await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
    await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
    await until(hook, 2, 'attempts');
    expect(elsewhere.received).to.have.length(0);
    const [delivery] = await deliveriesOf(idp.db, await access(), webhook.id);
    expect(delivery!.state).to.equal('pending');
    expect(delivery!.responseStatus).to.equal(307);
    expect(delivery!.error).to.equal(`redirect not followed (Location: ${elsewhere.url})`);
  });

  it('counts a delivery as failed once its retry period is over', async () => {
    const { owner, group, access } = await ownedGroup();
    const hook = await receiver((_, res) => {
      res.writeHead(500).end('broken');
      return true;
    });
    const webhook = await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
    await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
    await until(hook, 1, 'attempts');
    // As if 24 hours had passed since the event.
    await idp.db('webhook_deliveries').where({ webhook_id: webhook.id }).update({ give_up_at: new Date(Date.now() - 1000).toISOString() });
    await waitFor(async () => (await deliveriesOf(idp.db, await access(), webhook.id))[0]?.state === 'failed', () => 'the delivery was not given up');
    const attempts = hook.received.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.received.length, 'a failed delivery is not tried again').to.equal(attempts);
    const [delivery] = await deliveriesOf(idp.db, await access(), webhook.id);
    expect(delivery).to.deep.include({ state: 'failed', responseStatus: 500, responseBody: 'broken', nextAttemptAt: null });
  });

  for (const ending of ['turned off', 'deleted'] as const) {
    it(`stops retrying a webhook's deliveries once it is ${ending}`, async () => {
      const { owner, group, access } = await ownedGroup();
      const hook = await receiver((_, res) => {
        res.writeHead(503).end();
        return true;
      });
      const webhook = await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
      await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
      await until(hook, 2, 'attempts');
      if (ending === 'turned off') await updateWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await access(), webhook.id, { active: false });
      else await deleteWebhook(idp.db, await access(), webhook.id);
      // An attempt under way when it ended may still reach the receiver; none starts after it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const attempts = hook.received.length;
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(hook.received.length).to.equal(attempts);
      const row = (await idp.db('webhook_deliveries').where({ group_id: group.id }).first()) as { state: string; error: string };
      expect(row).to.deep.include({ state: 'failed', error: ending === 'deleted' ? DELETED : TURNED_OFF });
    });
  }

  it('redelivers a delivery with the same delivery id and body, to the webhook\'s URL as it is now', async () => {
    const { owner, group, access } = await ownedGroup();
    const first = await receiver();
    const moved = await receiver();
    const webhook = await makeWebhook(idp.db, owner.id, group.id, first.url, ['member.added']);
    await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
    await until(first, 1);
    await updateWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await access(), webhook.id, { url: moved.url });
    const [delivered] = await deliveriesOf(idp.db, await access(), webhook.id);
    const again = await redeliver(idp.db, await access(), webhook.id, delivered!.id);
    expect(again).to.deep.include({ redelivery: true, guid: delivered!.guid, state: 'pending' });
    await until(moved, 1);
    expect(moved.received[0]!.delivery).to.equal(first.received[0]!.delivery);
    expect(moved.received[0]!.body).to.equal(first.received[0]!.body);
    expect(moved.received[0]!.verified).to.equal(true);
  });

  it('keeps one copy of an event waiting however often it is redelivered: 16 at once answer with the same delivery', async () => {
    const { owner, group, access } = await ownedGroup();
    const first = await receiver();
    const webhook = await makeWebhook(idp.db, owner.id, group.id, first.url, ['member.added']);
    await addMember(idp.db, await access(), { user: (await makeUser(idp.db)).username, role: 'member' });
    await until(first, 1);
    // Nothing answers at the new URL: the redelivery waits for its retries.
    await updateWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await access(), webhook.id, { url: `http://127.0.0.1:${await freePort()}/gone` });
    const [delivered] = await deliveriesOf(idp.db, await access(), webhook.id);
    const answers = await Promise.all(Array.from({ length: 16 }, async () => redeliver(idp.db, await access(), webhook.id, delivered!.id)));
    expect(new Set(answers.map((a) => a.id)).size).to.equal(1);
    expect(answers[0]).to.deep.include({ guid: delivered!.guid, redelivery: true, state: 'pending' });
    expect(await idp.db('webhook_deliveries').where({ webhook_id: webhook.id }).count({ n: '*' }).first()).to.deep.include({ n: profile === 'sqlite' ? 2 : '2' });
  });
});

describeEachProfile('Webhook delivery timeouts', (profile) => {
  const idp = useIdp(profile, { ...FAST, WEBHOOKS_TIMEOUT_MS: '500' });

  it('cuts an attempt that takes longer than the timeout and tries again later', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const hook = await startReceiver(SECRET, () => true); // never answers
    try {
      const webhook = await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added']);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
      await until(hook, 2, 'attempts');
      const [delivery] = await deliveriesOf(idp.db, await groupAccess(idp.db, owner.id, group.id), webhook.id);
      expect(delivery).to.deep.include({ state: 'pending', responseStatus: null, error: 'no answer within 0.5 s' });
      expect(delivery!.durationMs).to.be.within(450, 3000);
    } finally {
      await hook.close();
    }
  });
});

describeEachProfile('Webhook secrets at rest', (profile) => {
  const KEYS_SECRET = 'a-keys-secret-of-at-least-32-characters';
  const idp = useIdp(profile, { ...FAST, KEYS_SECRET });

  it('stores the secret encrypted with KEYS_SECRET, and still signs with it', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const hook = await startReceiver(SECRET);
    try {
      const webhook = await makeWebhook(idp.db, owner.id, group.id, hook.url, ['member.added'], { cipher: keyCipher(KEYS_SECRET) });
      const stored = (await idp.db('webhooks').where({ id: webhook.id }).first()) as { secret: string };
      expect(stored.secret).to.match(/^enc:v1:/);
      expect(stored.secret).not.to.include(SECRET);
      await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
      await until(hook, 1);
      expect(hook.received[0]!.verified).to.equal(true);
      const delivery = (await idp.db('webhook_deliveries').where({ webhook_id: webhook.id }).first()) as { secret: string };
      expect(delivery.secret).to.match(/^enc:v1:/);
    } finally {
      await hook.close();
    }
  });
});

describeEachProfile('Webhook deliveries across restarts and instances', (profile) => {
  const database = useDatabase(profile);

  it('delivers an event told while the receiver was down, after a restart of the service in between', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/hook`;
    const first = await startIdp(profile, FAST, database);
    const owner = await makeUser(first.db);
    const group = await makeGroup(first.db, owner.id);
    await makeWebhook(first.db, owner.id, group.id, url, ['member.added']);
    const member = await makeUser(first.db);
    await addMember(first.db, await groupAccess(first.db, owner.id, group.id), { user: member.username, role: 'member' });
    // Nothing listens on the port: the first attempts are refused.
    await waitFor(async () => Number(((await first.db('webhook_deliveries').where({ group_id: group.id }).first()) as { attempts: number }).attempts) >= 2, () => 'no failed attempt was recorded');
    await first.stop();

    const receiver = await startReceiver(SECRET, undefined, port);
    const second = await startIdp(profile, FAST, database);
    try {
      await until(receiver, 1);
      expect(receiver.received[0]!.event).to.equal('member.added');
      expect(receiver.received[0]!.json.data).to.deep.include({ member: { username: member.username } });
      expect(receiver.received[0]!.verified).to.equal(true);
    } finally {
      await second.stop();
      await receiver.close();
    }
  });

  it('delivers each event exactly once when two instances send from one outbox', async () => {
    const keyPrefix = `idp-test:webhooks-${Date.now()}:`;
    const a = await startIdp(profile, { ...FAST, WEBHOOKS_POLL_MS: '10' }, database, keyPrefix);
    const b = await startIdp(profile, { ...FAST, WEBHOOKS_POLL_MS: '10' }, database, keyPrefix);
    const hook = await startReceiver(SECRET);
    try {
      const owner = await makeUser(a.db);
      const group = await makeGroup(a.db, owner.id);
      await makeWebhook(a.db, owner.id, group.id, hook.url, ['member.added']);
      const members = 40;
      for (let i = 0; i < members; i++) {
        const db = i % 2 ? a.db : b.db;
        await addMember(db, await groupAccess(db, owner.id, group.id), { user: (await makeUser(db)).username, role: 'member' });
      }
      await until(hook, members);
      // Both senders keep polling a while longer: a second send of any delivery would show now.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const ids = hook.received.map((r) => r.delivery);
      expect(ids).to.have.length(members);
      expect(new Set(ids).size).to.equal(members);
      const states = await a.db('webhook_deliveries').where({ group_id: group.id }).select('state', 'attempts');
      expect(states.every((row: { state: string; attempts: number }) => row.state === 'delivered' && Number(row.attempts) === 1)).to.equal(true);
    } finally {
      await hook.close();
      await a.stop();
      await b.stop();
    }
  });

  it('never hands one delivery to two senders that claim at the same moment', async () => {
    const a = await startIdp(profile, { ...FAST, WEBHOOKS_POLL_MS: '60000' }, database);
    const b = await startIdp(profile, { ...FAST, WEBHOOKS_POLL_MS: '60000' }, database);
    try {
      const owner = await makeUser(a.db);
      const group = await makeGroup(a.db, owner.id);
      await makeWebhook(a.db, owner.id, group.id, 'http://127.0.0.1:9/never-sent', ['member.added']);
      for (let i = 0; i < 30; i++) await addMember(a.db, await groupAccess(a.db, owner.id, group.id), { user: (await makeUser(a.db)).username, role: 'member' });
      const at = new Date();
      const until = new Date(at.getTime() + 60_000).toISOString();
      const claims = await Promise.all([a.db, b.db, a.db, b.db].map((db) => claimDueDeliveries(db, at.toISOString(), until, 30)));
      const ids = claims.flat().map((row) => String(row.id));
      expect(ids, 'every due delivery is claimed').to.have.length(30);
      expect(new Set(ids).size, 'and by one sender only').to.equal(30);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describeEachProfile('Webhook targets that are not public (SSRF)', (profile) => {
  // WEBHOOKS_ALLOW_PRIVATE is not set: loopback and private addresses are refused.
  const idp = useIdp(profile, { WEBHOOKS_POLL_MS: '20', WEBHOOKS_RETRY_MS: '50' });

  /** A webhook row as if its URL had passed the check when it was saved (its name resolved elsewhere then). */
  async function savedEarlier(groupId: number, url: string): Promise<number> {
    const at = now();
    const [row] = (await idp.db('webhooks').insert({ group_id: groupId, url, secret: SECRET, events: JSON.stringify(['member.added']), active: true, created_at: at, updated_at: at }).returning('id')) as Array<{ id: number }>;
    return Number(row!.id);
  }

  for (const target of ['localhost', '127.0.0.1']) {
    it(`refuses at delivery time a URL whose host (${target}) is a loopback address, and the receiver gets nothing`, async () => {
      const owner = await makeUser(idp.db);
      const group = await makeGroup(idp.db, owner.id);
      const hook = await startReceiver(SECRET);
      try {
        const url = hook.url.replace('127.0.0.1', target);
        const webhookId = await savedEarlier(group.id, url);
        await addMember(idp.db, await groupAccess(idp.db, owner.id, group.id), { user: (await makeUser(idp.db)).username, role: 'member' });
        await waitFor(async () => ((await deliveriesOf(idp.db, await groupAccess(idp.db, owner.id, group.id), webhookId))[0]?.attempts ?? 0) >= 1, () => 'no attempt was recorded');
        const [delivery] = await deliveriesOf(idp.db, await groupAccess(idp.db, owner.id, group.id), webhookId);
        expect(delivery!.state).to.equal('pending');
        expect(delivery!.error).to.match(/^refused: .*(127\.0\.0\.1|::1).* not a public address/);
        expect(hook.received).to.have.length(0);
      } finally {
        await hook.close();
      }
    });
  }

  it('refuses to save a URL on a loopback, private or link-local address, naming the url field', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://10.0.0.7/hook', 'http://192.168.1.1/hook', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/hook', 'http://[fd00::1]/hook', 'http://[::ffff:127.0.0.1]/hook', 'http://0.0.0.0/hook']) {
      const attempt = makeWebhook(idp.db, owner.id, group.id, url, ['member.added'], { allowPrivate: false });
      const err = await attempt.then(() => undefined, (e: { field?: string; message: string }) => e);
      expect(err, url).to.deep.include({ field: 'url' });
      expect(err!.message, url).to.match(/^url is refused: .* is a private, loopback or reserved address/);
    }
    expect(await idp.db('webhooks').where({ group_id: group.id }).count({ n: '*' }).first()).to.deep.include({ n: profile === 'sqlite' ? 0 : '0' });
  });
});
