import type { IncomingHttpHeaders } from 'node:http';
import { verify } from '@octokit/webhooks-methods';
import { expect } from 'chai';
import type { GroupRow } from '../../src/db/groups.js';
import { createWebhook } from '../../src/services/webhooks/manage.js';
import { describeEachProfile, listen, startIdp, useHooks, useIdp, waitFor } from '../helpers/app.js';
import { Browser, signIn, visit, type Page } from '../helpers/browser.js';
import { groupAccess, joinGroup, makeGroup, makeUser, signedInOwner, type TestUser } from '../helpers/factories.js';
import { fieldError, formAction, inputValue, unescapeHtml } from '../helpers/html.js';
import { formsIn } from '../helpers/forms.js';

/** What the receiver got: one POST. */
interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** The label of an event's checkbox on the webhook form: its code, then its words. */
const EVENT = {
  memberAdded: 'member.added Member added',
  memberRemoved: 'member.removed Member removed',
};

/** The rows of Recent deliveries (or of another table), as plain text, tags removed. */
function rows(html: string, testId: string): string[] {
  return [...html.matchAll(new RegExp(`<tr data-testid="${testId}"[^>]*>([\\s\\S]*?)</tr>`, 'g'))].map((m) =>
    unescapeHtml(m[1]!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()),
  );
}

/** The state of each delivery row, newest first. */
function deliveryStates(html: string): string[] {
  return [...html.matchAll(/data-testid="delivery-state" data-state="([a-z]+)"/g)].map((m) => m[1]!);
}

function notice(page: Page): string | undefined {
  const found = /data-testid="notice">([^<]*)</.exec(page.text)?.[1];
  return found === undefined ? undefined : unescapeHtml(found);
}

describeEachProfile('Group settings → Webhooks', (profile) => {
  // A receiver on loopback: /fail/… answers 500, anything else 200.
  const received: Received[] = [];
  const receiver = useHooks(
    () =>
      listen((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
          const failing = (req.url ?? '').startsWith('/fail/');
          res.writeHead(failing ? 500 : 200, { 'content-type': 'text/plain' }).end(failing ? 'receiver is down' : 'thanks');
        });
      }),
    (server) => server.close(),
  );
  const idp = useIdp(profile, { WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_POLL_MS: '50', WEBHOOKS_RETRY_MS: '100' });

  let receivers = 0;
  /** A receiver URL of this test's own, and what arrives there. */
  function endpoint(kind: 'ok' | 'fail' = 'ok') {
    const path = `/${kind}/${profile.replace(/\W/g, '-')}-${(receivers += 1)}`;
    return { url: `${receiver.url}${path}`, arrived: () => received.filter((r) => r.path === path) };
  }

  const webhooks = (group: GroupRow) => `/groups/${group.path}/settings/webhooks`;
  const count = async (table: string, where: Record<string, unknown>) =>
    Number(((await idp.db(table).where(where).count({ n: '*' }).first()) as { n: number | string }).n);

  const groupWithOwner = () => signedInOwner(idp);

  const join = (group: GroupRow, owner: TestUser, role: 'owner' | 'maintainer' | 'member') => joinGroup(idp.db, group, owner, role);

  /** Opens Add webhook from the Webhooks page's button, fills it in as a person would, and sends it. */
  async function addThroughForm(client: Browser, group: GroupRow, byLabel: Record<string, string>) {
    const list = await client.get(webhooks(group)).expect(200);
    const href = /<a class="button primary" href="([^"]+)" data-testid="add-webhook">/.exec(list.text)?.[1];
    expect(href).to.equal(`${webhooks(group)}/new`);
    const form = await client.get(href!).expect(200);
    const secret = inputValue(form.text, 'secret')!;
    return { form, secret, sent: client.fill(form, '/webhooks/new', byLabel) };
  }

  /** Adds a webhook through the form, opens its page, and returns it with the secret the form offered. */
  async function addWebhook(client: Browser, group: GroupRow, url: string, byLabel: Record<string, string> = {}) {
    const { secret, sent } = await addThroughForm(client, group, { 'Payload URL': url, ...byLabel });
    const created = await sent.expect(302, new RegExp(`^${webhooks(group)}/\\d+\\?notice=created$`));
    const page = await client.follow(created).expect(200);
    const id = Number(/\/webhooks\/(\d+)\?/.exec(created.headers.get('location')!)![1]);
    return { id, secret, page, href: `${webhooks(group)}/${id}` };
  }

  /** Waits until the webhook's page shows `n` deliveries, none of them pending any more. */
  async function deliveriesShown(client: Browser, href: string, n: number): Promise<Page> {
    let page: Page | undefined;
    await waitFor(
      async () => {
        page = await client.get(href).expect(200);
        const states = deliveryStates(page.text);
        return states.length === n && states.every((s) => s !== 'pending');
      },
      () => `expected ${n} deliveries on ${href}, saw ${deliveryStates(page?.text ?? '').join(', ')}`,
    );
    return page!;
  }

  describe('the Webhooks page', () => {
    it('says what webhooks are for when the group has none, with an Add webhook button', async () => {
      const { group, client } = await groupWithOwner();
      const page = await client.get(webhooks(group)).expect(200);
      expect(unescapeHtml(page.text)).to.include('Webhooks tell another server when something happens in this group').and.include('each delivery is signed with your secret');
      expect(page.text).to.include('data-testid="no-webhooks"').and.include(`href="${webhooks(group)}/new"`);
    });

    it('is a tab of the group settings for an owner', async () => {
      const { group, client } = await groupWithOwner();
      const general = await client.get(`/groups/${group.path}/settings`).expect(200);
      expect(general.text).to.include(`href="${webhooks(group)}"`);
      const page = await client.get(webhooks(group)).expect(200);
      expect(page.text).to.match(new RegExp(`href="${webhooks(group)}" aria-current="page"`));
    });

    it('lists each webhook with its URL, its events in words, whether it is active and its latest delivery', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      // All events but one, and then one inactive webhook of a single event.
      const first = await addWebhook(client, group, target.url, { [EVENT.memberRemoved]: 'unchecked' });
      await addWebhook(client, group, `${target.url}/quiet`, Object.fromEntries([
        ...['member.removed Member removed', 'member.role_changed Role changed', 'application.created Application created', 'application.updated Application changed',
          'application.deleted Application deleted', 'client_secret.created Client secret generated', 'client_secret.revoked Client secret revoked',
          'group.updated Group settings changed', 'group.deleted Group deleted', 'credentials.revoked Credentials revoked after a leak'].map((label) => [label, 'unchecked']),
        ['Active', 'unchecked'],
      ]));
      await join(group, owner, 'member');
      await deliveriesShown(client, first.href, 1);
      const list = await client.get(webhooks(group)).expect(200);
      const [one, two] = rows(list.text, 'webhook-row');
      expect(one).to.include(target.url).and.include('Member added, Role changed, Application created').and.include('Active').and.include('Delivered 200');
      expect(one).not.to.include('Member removed');
      expect(two).to.include(`${target.url}/quiet`).and.include('Member added').and.include('Inactive').and.include('None yet');
    });
  });

  describe('Add webhook', () => {
    it('offers a fresh random 32-byte secret in hex, a new one each time, with how the signature is made', async () => {
      const { group, client } = await groupWithOwner();
      const form = await client.get(`${webhooks(group)}/new`).expect(200);
      const again = await client.get(`${webhooks(group)}/new`).expect(200);
      expect(inputValue(form.text, 'secret')).to.match(/^[0-9a-f]{64}$/);
      expect(inputValue(again.text, 'secret')).to.match(/^[0-9a-f]{64}$/).and.not.equal(inputValue(form.text, 'secret'));
      expect(unescapeHtml(form.text)).to.include('X-Horizon-Signature-256: sha256=…').and.include('shown only here');
      expect(form.headers.get('cache-control')).to.equal('no-store');
    });

    it('offers every event as a checkbox with its code and words, all checked, and Active on', async () => {
      const { group, client } = await groupWithOwner();
      const form = await client.get(`${webhooks(group)}/new`).expect(200);
      const boxes = [...form.text.matchAll(/<input type="checkbox" id="event-([a-z_.]+)" name="events" value="\1"[^>]*>/g)];
      expect(boxes.map((m) => m[1])).to.deep.equal(['member.added', 'member.removed', 'member.role_changed', 'application.created', 'application.updated', 'application.deleted',
        'client_secret.created', 'client_secret.revoked', 'group.updated', 'group.deleted', 'credentials.revoked']);
      expect(boxes.every((m) => m[0].includes(' checked'))).to.equal(true);
      expect(unescapeHtml(form.text)).to.include('Someone was added to the group, with their role.');
      expect(form.text).to.match(/<input type="checkbox" id="active" name="active" value="on"[^>]* checked>/);
    });

    it('adds the webhook and opens its page with a notice, the secret shown no more, and records it in the audit log', async () => {
      const { group, client } = await groupWithOwner();
      const target = endpoint();
      const { page, secret } = await addWebhook(client, group, target.url);
      expect(notice(page)).to.equal('Webhook added. Its events are delivered from now on; the secret is not shown again.');
      expect(page.text).to.include(`data-testid="webhook-url">${target.url}<`);
      expect(inputValue(page.text, 'secret')).to.equal('');
      expect(page.text).not.to.include(secret);
      const audit = await client.get(`/groups/${group.path}/settings/audit`).expect(200);
      expect(unescapeHtml(audit.text)).to.include('Webhook added').and.include(target.url);
    });

    it('delivers a member added to the webhook, signed with the secret the form offered', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      const { secret } = await addWebhook(client, group, target.url);
      const member = await join(group, owner, 'member');
      await waitFor(async () => target.arrived().length === 1, () => 'no delivery arrived');
      const [delivery] = target.arrived();
      expect(delivery!.headers['x-horizon-event']).to.equal('member.added');
      expect(delivery!.headers['user-agent']).to.equal('Horizon-ID-Hookshot/1');
      expect(await verify(secret, delivery!.body, String(delivery!.headers['x-horizon-signature-256']))).to.equal(true);
      expect(JSON.parse(delivery!.body)).to.deep.include({ event: 'member.added', data: { member: { username: member.username }, role: 'member' } });
    });

    it('shows the delivery under Recent deliveries: event, delivery GUID, Delivered, 200, one attempt, and the request and response', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      const { href } = await addWebhook(client, group, target.url);
      const member = await join(group, owner, 'member');
      const page = await deliveriesShown(client, href, 1);
      const guid = String(target.arrived()[0]!.headers['x-horizon-delivery']);
      const [row] = rows(page.text, 'delivery-row');
      expect(row).to.include('member.added').and.include(guid).and.include('Delivered').and.include('200');
      expect(/data-testid="attempts">(\d+)</.exec(page.text)?.[1]).to.equal('1');
      const headers = unescapeHtml(/data-testid="request-headers">([^<]*)</.exec(page.text)![1]!);
      expect(headers).to.include('Content-Type: application/json').and.include('User-Agent: Horizon-ID-Hookshot/1')
        .and.include('X-Horizon-Event: member.added').and.include(`X-Horizon-Delivery: ${guid}`).and.include('X-Horizon-Signature-256: sha256=…');
      const body = unescapeHtml(/data-testid="request-body">([^<]*)</.exec(page.text)![1]!);
      expect(body).to.include('\n  "event": "member.added"');
      expect(JSON.parse(body)).to.deep.equal(JSON.parse(target.arrived()[0]!.body));
      expect(body).to.include(member.username);
      expect(/data-testid="response-body">([^<]*)</.exec(page.text)?.[1]).to.equal('thanks');
    });

    it('shows a delivery the receiver refused as pending, with the next attempt, the status and the response body', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint('fail');
      const { href } = await addWebhook(client, group, target.url);
      await join(group, owner, 'member');
      let page: Page | undefined;
      await waitFor(async () => /data-testid="attempts">[1-9]/.test((page = await client.get(href).expect(200)).text), () => 'no attempt recorded');
      expect(deliveryStates(page!.text)).to.deep.equal(['pending']);
      expect(rows(page!.text, 'delivery-row')[0]).to.include('Pending').and.include('Next attempt:').and.include('500');
      expect(/data-testid="response-body">([^<]*)</.exec(page!.text)?.[1]).to.equal('receiver is down');
    });

    it('keeps what was typed, the secret too, when it refuses the form', async () => {
      const { group, client } = await groupWithOwner();
      const { secret, sent } = await addThroughForm(client, group, { 'Payload URL': 'ftp://files.example.test/hook', [EVENT.memberRemoved]: 'unchecked' });
      const page = await sent.expect(400);
      expect(inputValue(page.text, 'url')).to.equal('ftp://files.example.test/hook');
      expect(inputValue(page.text, 'secret')).to.equal(secret);
      expect(page.text).to.match(/id="event-member.added"[^>]* checked/);
      expect(page.text).not.to.match(/id="event-member.removed"[^>]* checked/);
    });

    const refusals: Array<{ what: string; byLabel: Record<string, string>; field: string; error: string }> = [
      { what: 'a URL that is not http(s)', byLabel: { 'Payload URL': 'not a url' }, field: 'url', error: 'Payload URL must be an absolute http:// or https:// URL' },
      { what: 'an empty URL', byLabel: { 'Payload URL': '' }, field: 'url', error: 'Payload URL is required' },
      { what: 'a URL with a fragment', byLabel: { 'Payload URL': 'https://hooks.example.test/x#frag' }, field: 'url', error: 'Payload URL must not have a fragment (#…)' },
      { what: 'a secret shorter than 16 characters', byLabel: { 'Payload URL': 'http://127.0.0.1:9/hook', Secret: 'too-short' }, field: 'secret', error: 'Secret must be at least 16 characters' },
      {
        what: 'no event',
        byLabel: {
          'Payload URL': 'http://127.0.0.1:9/hook',
          ...Object.fromEntries(['member.added Member added', 'member.removed Member removed', 'member.role_changed Role changed', 'application.created Application created',
            'application.updated Application changed', 'application.deleted Application deleted', 'client_secret.created Client secret generated',
            'client_secret.revoked Client secret revoked', 'group.updated Group settings changed', 'group.deleted Group deleted',
            'credentials.revoked Credentials revoked after a leak'].map((label) => [label, 'unchecked'])),
        },
        field: 'events',
        error: 'Events must name at least one event',
      },
    ];
    for (const { what, byLabel, field, error } of refusals) {
      it(`refuses ${what} beside its field and saves nothing`, async () => {
        const { group, client } = await groupWithOwner();
        const audit = await count('audit_events', { group_id: group.id });
        const page = await (await addThroughForm(client, group, byLabel)).sent.expect(400);
        expect(fieldError(page.text, field)).to.equal(error);
        expect(await count('webhooks', { group_id: group.id })).to.equal(0);
        expect(await count('audit_events', { group_id: group.id })).to.equal(audit);
      });
    }

    it('refuses a loopback address beside the URL where the operator does not allow private targets', async () => {
      // A second instance on the same database, configured as deployed by default.
      const strict = await startIdp(profile, {}, idp.database);
      try {
        const owner = await makeUser(strict.db);
        const group = await makeGroup(strict.db, owner.id);
        const { sent } = await addThroughForm(await signIn(strict.url, owner), group, { 'Payload URL': 'http://127.0.0.1:9/hook' });
        const page = await sent.expect(400);
        expect(fieldError(page.text, 'url')).to.equal('Payload URL is refused: 127.0.0.1 is a private, loopback or reserved address; webhooks go to public addresses only (set WEBHOOKS_ALLOW_PRIVATE=true to allow them)');
        expect(await count('webhooks', { group_id: group.id })).to.equal(0);
      } finally {
        await strict.stop();
      }
    });

    it('adds one webhook when the same form is sent twice, and shows it on the second', async () => {
      const { group, client } = await groupWithOwner();
      const target = endpoint();
      const { form, sent } = await addThroughForm(client, group, { 'Payload URL': target.url });
      await sent.expect(302, /\?notice=created$/);
      const again = await client.fill(form, '/webhooks/new', { 'Payload URL': target.url }).expect(302, /\?notice=repeated$/);
      const page = await client.follow(again).expect(200);
      expect(notice(page)).to.equal('This form was submitted already: this is the webhook it added.');
      expect(await count('webhooks', { group_id: group.id })).to.equal(1);
    });
  });

  describe('a webhook\'s page', () => {
    it('sends a delivery again through its Redeliver button, with the same X-Horizon-Delivery, marked as a redelivery', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      const { href } = await addWebhook(client, group, target.url);
      await join(group, owner, 'member');
      const page = await deliveriesShown(client, href, 1);
      const id = /data-testid="delivery-row" data-delivery-id="(\d+)"/.exec(page.text)![1]!;
      const action = formAction(page.text, `/deliveries/${id}/redeliver`);
      const sent = await client.submit(action).expect(302, `${href}?notice=redelivered`);
      expect(notice(await client.follow(sent).expect(200))).to.equal('Delivery queued again: it is sent in a moment, with the same X-Horizon-Delivery.');
      await waitFor(async () => target.arrived().length === 2, () => `${target.arrived().length} deliveries arrived`);
      const [first, second] = target.arrived();
      expect(second!.headers['x-horizon-delivery']).to.equal(first!.headers['x-horizon-delivery']);
      expect(second!.body).to.equal(first!.body);
      const after = await deliveriesShown(client, href, 2);
      const [newest, oldest] = rows(after.text, 'delivery-row');
      expect(newest).to.include('redelivery').and.include(String(first!.headers['x-horizon-delivery']));
      expect(oldest).not.to.include('redelivery');
    });

    it('keeps the secret when it is saved with the Secret box left empty: deliveries still verify with it', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      const { href, secret, page } = await addWebhook(client, group, target.url);
      expect(unescapeHtml(page.text)).to.include('Leave it empty to keep the current secret');
      const saved = await client.fill(page, href, { [EVENT.memberRemoved]: 'unchecked' }).expect(302, `${href}?notice=saved`);
      expect(notice(await client.follow(saved).expect(200))).to.equal('Webhook saved.');
      await join(group, owner, 'member');
      await waitFor(async () => target.arrived().length === 1, () => 'no delivery arrived');
      const [delivery] = target.arrived();
      expect(await verify(secret, delivery!.body, String(delivery!.headers['x-horizon-signature-256']))).to.equal(true);
    });

    it('signs with a new secret typed into the Secret box', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      const { href, secret, page } = await addWebhook(client, group, target.url);
      const fresh = 'a-brand-new-secret-of-the-owner';
      await client.fill(page, href, { Secret: fresh }).expect(302, `${href}?notice=saved`);
      await join(group, owner, 'member');
      await waitFor(async () => target.arrived().length === 1, () => 'no delivery arrived');
      const [delivery] = target.arrived();
      const signature = String(delivery!.headers['x-horizon-signature-256']);
      expect(await verify(fresh, delivery!.body, signature)).to.equal(true);
      expect(await verify(secret, delivery!.body, signature)).to.equal(false);
    });

    it('saves the URL, the events and Active, and an inactive webhook is told nothing', async () => {
      const { owner, group, client } = await groupWithOwner();
      const target = endpoint();
      const moved = endpoint();
      const { href, page } = await addWebhook(client, group, target.url);
      await client.fill(page, href, { 'Payload URL': moved.url, [EVENT.memberAdded]: 'unchecked', Active: 'unchecked' }).expect(302);
      const saved = await client.get(href).expect(200);
      expect(inputValue(saved.text, 'url')).to.equal(moved.url);
      expect(saved.text).not.to.match(/id="event-member.added"[^>]* checked/);
      expect(saved.text).not.to.match(/id="active"[^>]* checked/);
      expect(rows((await client.get(webhooks(group)).expect(200)).text, 'webhook-row')[0]).to.include('Inactive');
      // Deliveries are written with the change itself, in its transaction: none now is none ever.
      await join(group, owner, 'member');
      expect(await count('webhook_deliveries', { group_id: group.id })).to.equal(0);
    });

    it('refuses a bad edit beside its field and changes nothing', async () => {
      const { group, client } = await groupWithOwner();
      const target = endpoint();
      const { href, page, id } = await addWebhook(client, group, target.url);
      const before = await idp.db('webhooks').where({ id }).first();
      const refused = await client.fill(page, href, { 'Payload URL': 'https://user:pw@hooks.example.test/', Secret: 'short' }).expect(400);
      expect(fieldError(refused.text, 'url')).to.equal('Payload URL must not carry a user name or password (the secret signs each delivery)');
      expect(fieldError(refused.text, 'secret')).to.equal('Secret must be at least 16 characters');
      expect(await idp.db('webhooks').where({ id }).first()).to.deep.equal(before);
    });

    it('deletes the webhook after a page that asks first, and lists it no more', async () => {
      const { group, client } = await groupWithOwner();
      const target = endpoint();
      const { href, page, id } = await addWebhook(client, group, target.url);
      expect(formAction(page.text, `${href}/delete`)).to.equal(`${href}/delete`);
      const ask = await client.get(`${href}/delete`).expect(200);
      expect(unescapeHtml(ask.text)).to.include(target.url);
      const deleted = await client.fill(ask, `${href}/delete`).expect(302, `${webhooks(group)}?notice=deleted`);
      const list = await client.follow(deleted).expect(200);
      expect(notice(list)).to.equal('Webhook deleted.');
      expect(list.text).to.include('data-testid="no-webhooks"');
      expect(await idp.db('webhooks').where({ id }).first()).to.equal(undefined);
      await client.get(href).expect(404);
    });

    it('answers an unknown webhook, and one of another group under this group\'s address, with 404', async () => {
      const { owner, group, client } = await groupWithOwner();
      const other = await makeGroup(idp.db, owner.id);
      const theirs = await createWebhook({ db: idp.db, cipher: undefined, allowPrivate: true }, await groupAccess(idp.db, owner.id, other.id), {
        url: endpoint().url, secret: 'another-groups-secret', events: ['member.added'],
      });
      for (const url of [`${webhooks(group)}/2147483647`, `${webhooks(group)}/abc`, `${webhooks(group)}/${theirs.id}`, `${webhooks(group)}/${theirs.id}/delete`]) {
        const res = await client.get(url).expect(404);
        expect(unescapeHtml(res.text), url).to.include('This group has no webhook at this address.');
      }
      await client.submit(`${webhooks(group)}/${theirs.id}/delete`).expect(404);
      expect(await count('webhooks', { id: theirs.id })).to.equal(1);
    });

    it('answers redelivering an unknown delivery with 404', async () => {
      const { group, client } = await groupWithOwner();
      const { href } = await addWebhook(client, group, endpoint().url);
      await client.submit(`${href}/deliveries/2147483647/redeliver`).expect(404);
      await client.submit(`${href}/deliveries/abc/redeliver`).expect(404);
    });
  });

  describe('who may', () => {
    for (const role of ['maintainer', 'member'] as const) {
      it(`shows a ${role} no Webhooks tab`, async () => {
        const { owner, group } = await groupWithOwner();
        const user = await signIn(idp.url, await join(group, owner, role));
        const show = await user.get(`/groups/${group.path}`).expect(200);
        expect(show.text).not.to.include(webhooks(group));
        if (role === 'maintainer') {
          for (const tab of ['members', 'audit']) expect((await user.get(`/groups/${group.path}/settings/${tab}`).expect(200)).text).not.to.include(webhooks(group));
        }
      });

      it(`answers a ${role} with 403 on every Webhooks page and form, changing nothing`, async () => {
        const { owner, group, client } = await groupWithOwner();
        const target = endpoint();
        const { href, id } = await addWebhook(client, group, target.url);
        await join(group, owner, 'member');
        await deliveriesShown(client, href, 1);
        const delivery = (await idp.db('webhook_deliveries').where({ webhook_id: id }).first()) as { id: number };
        const user = await signIn(idp.url, await join(group, owner, role));
        const before = await idp.db('webhooks').where({ id }).first();
        const deliveries = await count('webhook_deliveries', { webhook_id: id });
        for (const url of [webhooks(group), `${webhooks(group)}/new`, href, `${href}/delete`]) {
          const res = await user.get(url);
          expect(res.status, url).to.equal(403);
          expect(res.text, url).not.to.include(target.url);
        }
        // What the owner's own forms send, by their field names: the refusal must hold for the real forms.
        const ownForm = async (url: string) => {
          const form = formsIn((await client.get(url).expect(200)).text, new URL(url, idp.url)).find((f) => f.fields.some((field) => field.name === 'url'))!;
          return Object.fromEntries(form.fields.filter((field) => field.value !== undefined && !['_csrf', '_once'].includes(field.name)).map((field) => [field.name, field.value!]));
        };
        const posts: Array<[string, Record<string, string>]> = [
          [`${webhooks(group)}/new`, { ...(await ownForm(`${webhooks(group)}/new`)), url: target.url }],
          [href, { ...(await ownForm(href)), url: `${target.url}/taken` }],
          [`${href}/deliveries/${delivery.id}/redeliver`, {}],
          [`${href}/delete`, {}],
        ];
        for (const [url, fields] of posts) expect((await user.submit(url, fields)).status, url).to.equal(403);
        expect(await idp.db('webhooks').where({ id }).first()).to.deep.equal(before);
        expect(await count('webhooks', { group_id: group.id })).to.equal(1);
        expect(await count('webhook_deliveries', { webhook_id: id })).to.equal(deliveries);
      });
    }

    it('sends a signed-out visitor to the sign-in page', async () => {
      const { group, client } = await groupWithOwner();
      const { href } = await addWebhook(client, group, endpoint().url);
      for (const url of [webhooks(group), `${webhooks(group)}/new`, href]) {
        await new Browser(idp.url).get(url).expect(302, `/login?return_to=${encodeURIComponent(url)}`);
      }
      const anonymous = await visit(idp.url);
      await anonymous.submit(`${href}/delete`).expect(302);
      expect(await count('webhooks', { group_id: group.id })).to.equal(1);
    });
  });
});
