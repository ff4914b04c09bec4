import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { USER_AGENT } from '../../src/services/webhooks/sender.js';
import { createWebhook } from '../../src/services/webhooks/manage.js';
import { apiChallenge, call, escapeRegExp, expectApiError, type ApiResponse } from '../helpers/api.js';
import { describeEachProfile, freePort, listen, useHooks, useIdp, waitFor, type RunningIdp } from '../helpers/app.js';
import { CALLBACK, groupAccess, joinGroup, makeApp, makeGroup, makeUser, ownerWithToken, personalToken, type TestUser } from '../helpers/factories.js';
import { oauthTokens } from '../helpers/oauth.js';

/** A secret of its own for each webhook, so a test can look for it in every answer. */
const newSecret = () => `whsec-${randomBytes(12).toString('hex')}`;

/** What a receiver got: one POST each. */
interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on a loopback port answering `status` and `body` to every POST, and what it got. */
function useReceiver(answer: { status: number; body: string } = { status: 200, body: 'thanks' }) {
  return useHooks(
    async () => {
      const received: Received[] = [];
      const server = await listen((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(answer.body);
        });
      });
      return { ...server, received };
    },
    (server) => server.close(),
  );
}

/** The API as a script calls it: JSON in, JSON out, with a token. */
function apiOf(idp: RunningIdp) {
  return (token: string, method: string, path: string, body?: unknown): Promise<ApiResponse> =>
    call(idp, `/apis/v2${path}`, {
      token,
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
}

describeEachProfile('API: webhooks', (profile) => {
  const idp = useIdp(profile, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_POLL_MS: '50', WEBHOOKS_RETRY_MS: '100' });
  const receiver = useReceiver();
  const api = apiOf(idp);
  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);
  const hookRow = (id: number) => idp.db('webhooks').where({ id }).first();

  /** A valid new webhook, to the receiver, with a secret of its own. */
  const valid = (fields: Record<string, unknown> = {}) => ({ url: `${receiver.url}/hook`, secret: newSecret(), events: ['member.added'], ...fields });

  /** An owner with a read-write personal token, and their group. */
  const owned = () => ownerWithToken(idp.db);

  async function join(group: GroupRow, owner: TestUser, role: 'owner' | 'maintainer' | 'member'): Promise<{ user: TestUser; token: string }> {
    const user = await joinGroup(idp.db, group, owner, role);
    return { user, token: await personalToken(idp.db, user.id, { scopes: ['groups:read-write'] }) };
  }

  async function created(token: string, groupId: number, fields: Record<string, unknown> = valid()) {
    const res = await api(token, 'POST', `/groups/${groupId}/webhooks`, fields);
    expect(res.status, res.text).to.equal(201);
    return res.body.data as { id: number; url: string; events: string[]; active: boolean; createdAt: string; updatedAt: string };
  }

  /** Sends what is due now, and waits until the receiver has got `n` deliveries for the webhook; returns them, oldest first. */
  async function delivered(hookId: number, n: number): Promise<Received[]> {
    const got = () => receiver.received.filter((r) => r.headers['x-horizon-hook-id'] === String(hookId));
    await idp.idp.webhooks.sendDue();
    await waitFor(async () => got().length >= n, () => `the receiver got ${got().length} of ${n} deliveries for webhook ${hookId}`);
    return got();
  }

  describe('an owner', () => {
    it('creates a webhook: 201, a Location, and the webhook without its secret', async () => {
      const { group, token } = await owned();
      const fields = valid({ events: ['member.removed', 'member.added'] });
      const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, fields);
      expect(res.status, res.text).to.equal(201);
      const data = res.body.data;
      expect(Object.keys(data).sort()).to.deep.equal(['active', 'createdAt', 'events', 'id', 'updatedAt', 'url']);
      // The events in the service's own order, whatever order they were given in.
      expect(data).to.deep.include({ url: fields.url, events: ['member.added', 'member.removed'], active: true });
      expect(res.headers.get('location')).to.equal(`${idp.url}/apis/v2/groups/${group.id}/webhooks/${data.id}`);
      expect(res.text).not.to.include(fields.secret);
      expect(await hookRow(data.id)).to.include({ group_id: group.id, url: fields.url });
    });

    it('creates an inactive webhook when asked', async () => {
      const { group, token } = await owned();
      const hook = await created(token, group.id, valid({ active: false }));
      expect(hook.active).to.equal(false);
    });

    it('reads a webhook by the Location it was given', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, valid());
      const read = await call(idp, new URL(res.headers.get('location')!).pathname, { token });
      expect(read.status, read.text).to.equal(200);
      expect(read.body.data).to.deep.equal(res.body.data);
    });

    it('lists the group’s webhooks in ascending order, paginated with a Link header', async () => {
      const { group, token } = await owned();
      const hooks = [];
      for (const path of ['one', 'two', 'three']) hooks.push(await created(token, group.id, valid({ url: `${receiver.url}/${path}` })));
      const first = await api(token, 'GET', `/groups/${group.id}/webhooks?pageSize=2`);
      expect(first.status, first.text).to.equal(200);
      expect(first.body).to.deep.include({ pageNumber: 1, pageSize: 2 });
      expect(first.body.data.total).to.equal(3);
      expect(first.body.data.items).to.deep.equal(hooks.slice(0, 2));
      expect(first.headers.get('link')).to.include(`<${idp.url}/apis/v2/groups/${group.id}/webhooks?pageNumber=2&pageSize=2>; rel="next"`);
      const second = await api(token, 'GET', `/groups/${group.id}/webhooks?pageSize=2&pageNumber=2`);
      expect(second.body.data.items).to.deep.equal(hooks.slice(2));
    });

    it('lists only the group’s own webhooks', async () => {
      const { owner, group, token } = await owned();
      const other = await makeGroup(idp.db, owner.id);
      await created(token, other.id);
      const res = await api(token, 'GET', `/groups/${group.id}/webhooks`);
      expect(res.body.data).to.deep.equal({ total: 0, items: [] });
    });

    it('edits each field, keeping the ones left out', async () => {
      const { group, token } = await owned();
      const hook = await created(token, group.id);
      const secretBefore = (await hookRow(hook.id)).secret;
      const changes = { url: `${receiver.url}/moved`, events: ['group.updated'], active: false };
      let expected = { url: hook.url, events: hook.events, active: true };
      for (const [field, value] of Object.entries(changes)) {
        const res = await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, { [field]: value });
        expect(res.status, res.text).to.equal(200);
        expected = { ...expected, [field]: value };
        expect(res.body.data).to.deep.include(expected);
        expect((await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}`)).body.data).to.deep.equal(res.body.data);
      }
      expect((await hookRow(hook.id)).secret, 'the secret is kept when none is given').to.equal(secretBefore);
    });

    it('replaces the secret on an edit that gives one, and answers without it', async () => {
      const { group, token } = await owned();
      const hook = await created(token, group.id);
      const before = (await hookRow(hook.id)).secret;
      const secret = newSecret();
      const res = await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, { secret });
      expect(res.status, res.text).to.equal(200);
      expect(res.text).not.to.include(secret);
      expect((await hookRow(hook.id)).secret).not.to.equal(before);
    });

    it('leaves updatedAt and the audit log alone on an edit that changes nothing', async () => {
      const { group, token } = await owned();
      const hook = await created(token, group.id);
      const audit = await count('audit_events', { group_id: group.id });
      for (const body of [{}, { url: hook.url, events: hook.events, active: true }]) {
        const res = await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, body);
        expect(res.status, res.text).to.equal(200);
        expect(res.body.data).to.deep.equal(hook);
      }
      expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
    });

    it('deletes a webhook: 204, then 404', async () => {
      const { group, token } = await owned();
      const hook = await created(token, group.id);
      const res = await api(token, 'DELETE', `/groups/${group.id}/webhooks/${hook.id}`);
      expect(res.status, res.text).to.equal(204);
      expect(res.text).to.equal('');
      expectApiError(await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}`), 404, 'not_found');
      expectApiError(await api(token, 'DELETE', `/groups/${group.id}/webhooks/${hook.id}`), 404, 'not_found');
      expect(await hookRow(hook.id)).to.equal(undefined);
    });

    it('records the creation, each edit and the deletion in the group’s audit log, never the secret', async () => {
      const { owner, group, token } = await owned();
      const fields = valid();
      const hook = await created(token, group.id, fields);
      const secret = newSecret();
      await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, { secret, active: false });
      await api(token, 'DELETE', `/groups/${group.id}/webhooks/${hook.id}`);
      const events = (await idp.db('audit_events').where({ group_id: group.id }).whereLike('action', 'webhook.%').orderBy('id')) as Array<{ action: string; actor_id: number; target: string; details: string }>;
      expect(events.map((e) => e.action)).to.deep.equal(['webhook.create', 'webhook.update', 'webhook.delete']);
      for (const e of events) expect(e).to.include({ actor_id: owner.id, target: fields.url });
      const details = events.map((e) => e.details).join();
      expect(details).not.to.include(fields.secret);
      expect(details).not.to.include(secret);
    });

    it('refuses a webhook past the group’s twentieth with 409', async () => {
      const { group, token } = await owned();
      for (let i = 0; i < 20; i += 1) await created(token, group.id, valid({ url: `${receiver.url}/${i}` }));
      const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, valid());
      expectApiError(res, 409, 'conflict');
      expect(await count('webhooks', { group_id: group.id })).to.equal(20);
    });

    it('keeps the limit under 16 parallel additions at the nineteenth: one is added, the rest get 409', async () => {
      const { group, token } = await owned();
      for (let i = 0; i < 19; i += 1) await created(token, group.id, valid({ url: `${receiver.url}/${i}` }));
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => api(token, 'POST', `/groups/${group.id}/webhooks`, valid({ url: `${receiver.url}/parallel-${i}` }))));
      expect(answers.map((res) => res.status).sort()).to.deep.equal([201, ...Array<number>(15).fill(409)]);
      expect(await count('webhooks', { group_id: group.id })).to.equal(20);
    });
  });

  describe('deliveries', () => {
    /** A group with a webhook on the receiver for member.added, and a member added since. */
    async function oneDelivery(url = `${receiver.url}/hook`) {
      const { owner, group, token } = await owned();
      const hook = await created(token, group.id, valid({ url }));
      const { user } = await join(group, owner, 'member');
      return { owner, group, token, hook, member: user };
    }

    it('lists the delivery of a member added, with the request as the receiver got it and its answer', async () => {
      const { group, token, hook, member } = await oneDelivery();
      const [got] = await delivered(hook.id, 1);
      const res = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data.total).to.equal(1);
      const [delivery] = res.body.data.items;
      expect(delivery).to.deep.include({ event: 'member.added', state: 'delivered', redelivery: false, attempts: 1, url: hook.url, nextAttemptAt: null, error: null });
      expect(delivery.guid).to.equal(got!.headers['x-horizon-delivery']);
      expect(delivery.request.body).to.equal(got!.body);
      expect(JSON.parse(delivery.request.body)).to.deep.include({ event: 'member.added' });
      expect(JSON.parse(delivery.request.body).data.member.username).to.equal(member.username);
      expect(delivery.request.headers).to.deep.equal({
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        'X-Horizon-Event': 'member.added',
        'X-Horizon-Delivery': got!.headers['x-horizon-delivery'],
        'X-Horizon-Hook-ID': String(hook.id),
      });
      expect(delivery.response).to.deep.equal({ status: 200, body: 'thanks' });
      expect(delivery.durationMs).to.be.a('number');
      expect(Date.parse(delivery.lastAttemptAt)).to.be.at.least(Date.parse(delivery.createdAt));
    });

    it('never shows the signature the receiver got', async () => {
      const { group, token, hook } = await oneDelivery();
      const [got] = await delivered(hook.id, 1);
      const signature = String(got!.headers['x-horizon-signature-256']);
      expect(signature).to.match(/^sha256=[0-9a-f]{64}$/);
      const list = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`);
      const one = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries/${list.body.data.items[0].id}`);
      for (const res of [list, one]) {
        expect(res.text).not.to.include(signature.slice('sha256='.length));
        expect(res.text).not.to.match(/Signature/i);
      }
    });

    it('reads one delivery by its id as the list shows it', async () => {
      const { group, token, hook } = await oneDelivery();
      await delivered(hook.id, 1);
      const [listed] = (await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`)).body.data.items;
      const res = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries/${listed.id}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data).to.deep.equal(listed);
    });

    it('shows an attempt nothing answered: no response, the error, and when it is tried next', async () => {
      const { group, token, hook } = await oneDelivery(`http://127.0.0.1:${await freePort()}/gone`);
      await idp.idp.webhooks.sendDue();
      const [delivery] = (await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`)).body.data.items;
      expect(delivery).to.deep.include({ state: 'pending', response: null, error: 'connection refused' });
      expect(delivery.attempts).to.be.at.least(1);
      expect(delivery.nextAttemptAt).to.be.a('string');
      await api(token, 'DELETE', `/groups/${group.id}/webhooks/${hook.id}`);
      await idp.db('webhook_deliveries').where({ url: hook.url }).delete();
    });

    it('lists deliveries newest first, paginated with a Link header', async () => {
      const { owner, group, token, hook } = await oneDelivery();
      await join(group, owner, 'member');
      await delivered(hook.id, 2);
      const first = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries?pageSize=1`);
      expect(first.body.data.total).to.equal(2);
      expect(first.headers.get('link')).to.include(`<${idp.url}/apis/v2/groups/${group.id}/webhooks/${hook.id}/deliveries?pageNumber=2&pageSize=1>; rel="next"`);
      const second = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries?pageSize=1&pageNumber=2`);
      expect(first.body.data.items[0].id).to.be.greaterThan(second.body.data.items[0].id);
    });

    it('redelivers: 202 with the new delivery, and the receiver gets the same X-Horizon-Delivery and body again', async () => {
      const { group, token, hook } = await oneDelivery();
      const [original] = await delivered(hook.id, 1);
      const [delivery] = (await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`)).body.data.items;
      const res = await api(token, 'POST', `/groups/${group.id}/webhooks/${hook.id}/deliveries/${delivery.id}/attempts`);
      expect(res.status, res.text).to.equal(202);
      const again = res.body.data;
      expect(again).to.deep.include({ guid: delivery.guid, event: 'member.added', redelivery: true, state: 'pending', attempts: 0, lastAttemptAt: null, response: null, error: null, durationMs: null });
      expect(Date.parse(again.nextAttemptAt)).to.be.at.most(Date.now());
      expect(again.id).not.to.equal(delivery.id);
      expect(again.request.body).to.equal(delivery.request.body);
      expect(res.headers.get('location')).to.equal(`${idp.url}/apis/v2/groups/${group.id}/webhooks/${hook.id}/deliveries/${again.id}`);
      const [, redelivered] = await delivered(hook.id, 2);
      expect(redelivered!.headers['x-horizon-delivery']).to.equal(original!.headers['x-horizon-delivery']);
      expect(redelivered!.body).to.equal(original!.body);
      const list = (await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`)).body.data.items;
      expect(list.map((d: { id: number }) => d.id)).to.deep.equal([again.id, delivery.id]);
      expect(list[0]).to.deep.include({ state: 'delivered', redelivery: true });
    });

    it('redelivers with an empty object as the body, and refuses a field', async () => {
      const { group, token, hook } = await oneDelivery();
      const [delivery] = (await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`)).body.data.items;
      const path = `/groups/${group.id}/webhooks/${hook.id}/deliveries/${delivery.id}/attempts`;
      expect((await api(token, 'POST', path, {})).status).to.equal(202);
      const res = await api(token, 'POST', path, { url: 'https://elsewhere.example.test/' });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('url');
    });

    it('answers a delivery of another webhook, or an unknown one, with 404', async () => {
      const { group, token, hook } = await oneDelivery();
      const other = await created(token, group.id, valid({ url: `${receiver.url}/other` }));
      const [delivery] = (await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries`)).body.data.items;
      for (const path of [`/groups/${group.id}/webhooks/${other.id}/deliveries/${delivery.id}`, `/groups/${group.id}/webhooks/${hook.id}/deliveries/9007199254740991`]) {
        expectApiError(await api(token, 'GET', path), 404, 'not_found');
        expectApiError(await api(token, 'POST', `${path}/attempts`), 404, 'not_found');
      }
      expect(await count('webhook_deliveries', { webhook_id: other.id })).to.equal(0);
    });

    for (const id of ['0', 'x', '1.5', '9007199254740992']) {
      it(`answers the delivery id ${id} with 400 naming deliveryId`, async () => {
        const { group, token, hook } = await oneDelivery();
        const res = await api(token, 'GET', `/groups/${group.id}/webhooks/${hook.id}/deliveries/${id}`);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.include('deliveryId');
      });
    }
  });

  describe('the secret', () => {
    it('appears in no answer: create, list, read, edit, deliveries, redelivery', async () => {
      const { owner, group, token } = await owned();
      const base = `/groups/${group.id}/webhooks`;
      const first = valid();
      const create = await api(token, 'POST', base, first);
      const hook = create.body.data as { id: number };
      const second = newSecret();
      const answers: ApiResponse[] = [create, await api(token, 'PATCH', `${base}/${hook.id}`, { secret: second })];
      await join(group, owner, 'member');
      await delivered(hook.id, 1);
      answers.push(await api(token, 'GET', base), await api(token, 'GET', `${base}/${hook.id}`));
      const deliveries = await api(token, 'GET', `${base}/${hook.id}/deliveries`);
      const id = deliveries.body.data.items[0].id;
      answers.push(deliveries, await api(token, 'GET', `${base}/${hook.id}/deliveries/${id}`), await api(token, 'POST', `${base}/${hook.id}/deliveries/${id}/attempts`));
      // A refused create names its bad field, never the secret it was given.
      answers.push(await api(token, 'POST', base, { ...valid(), secret: second, events: ['nope'] }));
      for (const res of answers) {
        expect(res.status, res.text).to.be.below(500);
        expect(res.text).not.to.include(first.secret);
        expect(res.text).not.to.include(second);
      }
    });
  });

  describe('bad fields', () => {
    const cases: Array<{ name: string; body: (base: Record<string, unknown>) => unknown; field: string }> = [
      { name: 'no url', body: ({ url: _, ...rest }) => rest, field: 'url' },
      { name: 'a url that is not one', body: (b) => ({ ...b, url: 'hooks.example.test/x' }), field: 'url' },
      { name: 'an ftp url', body: (b) => ({ ...b, url: 'ftp://hooks.example.test/' }), field: 'url' },
      { name: 'a url with a password', body: (b) => ({ ...b, url: 'https://me:pw@hooks.example.test/' }), field: 'url' },
      { name: 'a url with a fragment', body: (b) => ({ ...b, url: 'https://hooks.example.test/#x' }), field: 'url' },
      { name: 'a url of 2001 characters', body: (b) => ({ ...b, url: `https://hooks.example.test/${'a'.repeat(1975)}` }), field: 'url' },
      { name: 'a url that is a number', body: (b) => ({ ...b, url: 5 }), field: 'url' },
      { name: 'no secret', body: ({ secret: _, ...rest }) => rest, field: 'secret' },
      { name: 'a short secret', body: (b) => ({ ...b, secret: 'x'.repeat(15) }), field: 'secret' },
      { name: 'a secret of 257 characters', body: (b) => ({ ...b, secret: 'x'.repeat(257) }), field: 'secret' },
      { name: 'an unknown event', body: (b) => ({ ...b, events: ['member.added', 'push'] }), field: 'events' },
      { name: 'empty events', body: (b) => ({ ...b, events: [] }), field: 'events' },
      { name: 'events that are not a list', body: (b) => ({ ...b, events: 'member.added' }), field: 'events' },
      { name: 'an active that is not a boolean', body: (b) => ({ ...b, active: 'yes' }), field: 'active' },
      { name: 'an unknown field', body: (b) => ({ ...b, contentType: 'form' }), field: 'contentType' },
      { name: 'a JSON array', body: (b) => [b], field: 'body' },
    ];

    for (const c of cases) {
      it(`answers a create with ${c.name} with 400 naming ${c.field}, creating nothing`, async () => {
        const { group, token } = await owned();
        const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, c.body(valid()));
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(escapeRegExp(c.field)));
        expect(await count('webhooks', { group_id: group.id })).to.equal(0);
      });
    }

    for (const c of cases.filter((x) => !x.name.startsWith('no '))) {
      it(`answers an edit with ${c.name} with 400 naming ${c.field}, changing nothing`, async () => {
        const { group, token } = await owned();
        const hook = await created(token, group.id);
        const before = await hookRow(hook.id);
        const whole = c.body(valid()) as Record<string, unknown>;
        const body = Array.isArray(whole) ? whole : { [c.field]: whole[c.field] };
        const res = await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, body);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.match(new RegExp(escapeRegExp(c.field)));
        expect(await hookRow(hook.id)).to.deep.equal(before);
      });
    }

    it('names every bad field at once', async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, { url: 'nope', secret: 'short', events: [] });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.equal('url must be an absolute http:// or https:// URL; secret must be at least 16 characters; events must name at least one event');
    });

    for (const id of ['0', 'x', '2147483648']) {
      it(`answers the webhook id ${id} with 400 naming hookId`, async () => {
        const { group, token } = await owned();
        const res = await api(token, 'GET', `/groups/${group.id}/webhooks/${id}`);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.include('hookId');
      });
    }

    it('refuses a form body with 415', async () => {
      const { group, token } = await owned();
      const res = await call(idp, `/apis/v2/groups/${group.id}/webhooks`, { token, method: 'POST', form: { url: `${receiver.url}/hook`, secret: newSecret(), events: 'member.added' } });
      expectApiError(res, 415, 'unsupported_media_type');
      expect(await count('webhooks', { group_id: group.id })).to.equal(0);
    });
  });

  describe('who may', () => {
    /** Every operation on a group's webhook and its delivery. */
    function everyOperation(groupId: number, hookId: number, deliveryId: number): Array<[string, string, unknown?]> {
      const hook = `/groups/${groupId}/webhooks/${hookId}`;
      return [
        ['GET', `/groups/${groupId}/webhooks`],
        ['POST', `/groups/${groupId}/webhooks`, valid()],
        ['GET', hook],
        ['PATCH', hook, { url: 'https://attacker.example.test/hook' }],
        ['GET', `${hook}/deliveries`],
        ['GET', `${hook}/deliveries/${deliveryId}`],
        ['POST', `${hook}/deliveries/${deliveryId}/attempts`],
        ['DELETE', hook],
      ];
    }

    /** An owner's group with a webhook that has one delivery. */
    async function withDelivery() {
      const { owner, group, token } = await owned();
      const hook = await created(token, group.id);
      await join(group, owner, 'member');
      const delivery = await idp.db('webhook_deliveries').where({ webhook_id: hook.id }).first();
      return { owner, group, token, hook, deliveryId: Number(delivery.id) };
    }

    it('answers no token with 401 and a token without groups:read-write with 403 insufficient_scope', async () => {
      const { owner, group, hook, deliveryId } = await withDelivery();
      const readOnly = await personalToken(idp.db, owner.id, { scopes: ['groups:read-only'] });
      for (const [method, path, body] of everyOperation(group.id, hook.id, deliveryId)) {
        const none = await call(idp, `/apis/v2${path}`, { method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
        expectApiError(none, 401, 'unauthorized');
        const res = await api(readOnly, method, path, body);
        expectApiError(res, 403, 'insufficient_scope');
        expect(res.headers.get('www-authenticate')).to.equal(apiChallenge(idp, { error: 'insufficient_scope', scope: 'groups:read-write' }));
      }
      expect(await hookRow(hook.id)).to.include({ url: hook.url });
    });

    for (const role of ['maintainer', 'member'] as const) {
      it(`answers a ${role} with 403 forbidden on every operation and changes nothing`, async () => {
        const { owner, group, hook, deliveryId } = await withDelivery();
        const { token: theirs } = await join(group, owner, role);
        const audit = await count('audit_events', { group_id: group.id });
        const deliveries = await count('webhook_deliveries', { group_id: group.id });
        const before = await hookRow(hook.id);
        for (const [method, path, body] of everyOperation(group.id, hook.id, deliveryId)) {
          const res = await api(theirs, method, path, body);
          expectApiError(res, 403, 'forbidden');
        }
        expect(await hookRow(hook.id)).to.deep.equal(before);
        expect(await count('webhooks', { group_id: group.id })).to.equal(1);
        expect(await count('webhook_deliveries', { group_id: group.id })).to.equal(deliveries);
        expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
      });
    }

    it('answers an outsider with 404 for the group, as for one that does not exist', async () => {
      const { group, hook, deliveryId } = await withDelivery();
      const outsider = await makeUser(idp.db);
      const theirs = await personalToken(idp.db, outsider.id, { scopes: ['groups:read-write'] });
      for (const [method, path, body] of everyOperation(group.id, hook.id, deliveryId)) {
        const res = await api(theirs, method, path, body);
        expectApiError(res, 404, 'not_found');
        const missing = await api(theirs, method, path.replace(`/groups/${group.id}/`, '/groups/2147483647/'), body);
        expect(res.body.error_description, `${method} ${path}`).to.equal(missing.body.error_description);
      }
      expect(await hookRow(hook.id)).to.include({ url: hook.url });
    });

    it('answers a webhook of another group, even one the caller owns, with 404 through this group’s path', async () => {
      const { owner, group, token } = await owned();
      const theirs = await makeGroup(idp.db, owner.id);
      const hook = await created(token, theirs.id);
      await join(theirs, owner, 'member');
      const delivery = await idp.db('webhook_deliveries').where({ webhook_id: hook.id }).first();
      const audit = await count('audit_events', { group_id: theirs.id });
      const before = await hookRow(hook.id);
      for (const [method, path, body] of everyOperation(group.id, hook.id, Number(delivery.id)).slice(2)) {
        expectApiError(await api(token, method, path, body), 404, 'not_found');
      }
      expect(await hookRow(hook.id)).to.deep.equal(before);
      expect(await count('audit_events', { group_id: theirs.id })).to.equal(audit);
      expect(await count('webhook_deliveries', { webhook_id: hook.id })).to.equal(1);
    });

    it('lets another owner of the group manage the webhook', async () => {
      const { owner, group, token } = await owned();
      const hook = await created(token, group.id);
      const { token: coOwner } = await join(group, owner, 'owner');
      expect((await api(coOwner, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, { active: false })).status).to.equal(200);
      expect((await api(coOwner, 'DELETE', `/groups/${group.id}/webhooks/${hook.id}`)).status).to.equal(204);
    });

    describe('an application’s OAuth token (ho_) with groups:read-write', () => {
      /** The owner's group with a webhook, and a token a third-party application got from the owner. */
      async function ownerAndThirdParty() {
        const context = await withDelivery();
        const otherOwner = await makeUser(idp.db);
        const third = await makeApp(idp.db, otherOwner.id, (await makeGroup(idp.db, otherOwner.id)).id);
        const { accessToken } = await oauthTokens(idp.url, { clientId: third.clientId, clientSecret: third.clientSecret, redirectUri: CALLBACK }, context.owner, 'groups:read-write');
        return { ...context, ho: accessToken };
      }

      it('cannot create, change, delete or redeliver: 403 personal_token_required', async () => {
        const { group, hook, deliveryId, ho } = await ownerAndThirdParty();
        const before = await hookRow(hook.id);
        const deliveries = await count('webhook_deliveries', { group_id: group.id });
        for (const [method, path, body] of everyOperation(group.id, hook.id, deliveryId).filter(([method]) => method !== 'GET')) {
          const res = await api(ho, method, path, body);
          expectApiError(res, 403, 'personal_token_required');
          expect(res.body.error_description, `${method} ${path}`).to.match(/webhooks/).and.match(/personal access token \(ha_\)/);
        }
        expect(await hookRow(hook.id)).to.deep.equal(before);
        expect(await count('webhooks', { group_id: group.id })).to.equal(1);
        expect(await count('webhook_deliveries', { group_id: group.id })).to.equal(deliveries);
      });

      it('still reads the webhooks and their deliveries', async () => {
        const { group, hook, deliveryId, ho } = await ownerAndThirdParty();
        for (const [method, path] of everyOperation(group.id, hook.id, deliveryId).filter(([method]) => method === 'GET')) {
          const res = await api(ho, method, path);
          expect(res.status, `${method} ${path} ${res.text}`).to.equal(200);
        }
      });
    });
  });
});

describeEachProfile('API: webhook targets, private ones not allowed', (profile) => {
  const idp = useIdp(profile);
  const api = apiOf(idp);
  const secret = newSecret();

  const owned = () => ownerWithToken(idp.db);

  const refused = [
    'http://127.0.0.1:8080/hook',
    'http://10.0.0.1/',
    'http://[::1]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://192.168.1.10/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://localhost:8080/hook',
  ];

  for (const url of refused) {
    it(`refuses to create a webhook to ${url} with 400 naming url`, async () => {
      const { group, token } = await owned();
      const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, { url, secret, events: ['member.added'] });
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.match(/^url is refused: /);
      expect(await idp.db('webhooks').where({ group_id: group.id }).first()).to.equal(undefined);
    });
  }

  it('refuses a host name that does not resolve, naming url', async () => {
    const { group, token } = await owned();
    const res = await api(token, 'POST', `/groups/${group.id}/webhooks`, { url: 'https://no-such-host.invalid/hook', secret, events: ['member.added'] });
    expectApiError(res, 400, 'invalid_request');
    expect(res.body.error_description).to.match(/^url is refused: /);
  });

  it('refuses to move a webhook to a loopback address, and keeps its URL', async () => {
    const { owner, group, token } = await owned();
    // A webhook made before the operator turned private targets off.
    const hook = await createWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await groupAccess(idp.db, owner.id, group.id), { url: 'https://hooks.example.test/x', secret, events: ['member.added'] });
    const res = await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, { url: 'http://localhost/x' });
    expectApiError(res, 400, 'invalid_request');
    expect(res.body.error_description).to.match(/^url is refused: /);
    expect(await idp.db('webhooks').where({ id: hook.id }).first()).to.include({ url: 'https://hooks.example.test/x' });
  });

  it('lets an edit that keeps the URL through', async () => {
    const { owner, group, token } = await owned();
    const hook = await createWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await groupAccess(idp.db, owner.id, group.id), { url: 'http://10.0.0.1/x', secret, events: ['member.added'] });
    const res = await api(token, 'PATCH', `/groups/${group.id}/webhooks/${hook.id}`, { active: false });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data).to.include({ url: 'http://10.0.0.1/x', active: false });
  });
});
