import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { now } from '../../src/time.js';
import { call, expectApiError } from '../helpers/api.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeGroup, makeUser, personalToken } from '../helpers/factories.js';

/** RFC 8288 Link header → { rel: {pageNumber, pageSize, url} }. */
function parseLinks(header: string | null): Record<string, { url: URL; pageNumber: number; pageSize: number }> {
  const out: Record<string, { url: URL; pageNumber: number; pageSize: number }> = {};
  for (const part of (header ?? '').split(/,\s*(?=<)/)) {
    const match = /^<([^>]+)>;\s*rel="([^"]+)"$/.exec(part.trim());
    if (!match) throw new Error(`not a link: ${part}`);
    const url = new URL(match[1]!);
    out[match[2]!] = { url, pageNumber: Number(url.searchParams.get('pageNumber')), pageSize: Number(url.searchParams.get('pageSize')) };
  }
  return out;
}

const pageNumbers = (links: ReturnType<typeof parseLinks>) =>
  Object.fromEntries(Object.entries(links).map(([rel, l]) => [rel, l.pageNumber]));

describeEachProfile('API pagination and filter', (profile) => {
  const idp = useIdp(profile);
  /** A user in 120 groups, and the groups' ids in ascending order. */
  let busy: { token: string; ids: number[] };

  before(async () => {
    const db = idp.db;
    const user = await makeUser(db);
    // 120 groups and memberships in two statements, not 120 service calls.
    const at = now();
    const tag = randomBytes(3).toString('hex');
    const rows = Array.from({ length: 120 }, (_, i) => ({
      name: `Bulk ${i}`,
      path: `bulk-${tag}-${i}`,
      description: '',
      visibility_level: 'private',
      created_at: at,
      updated_at: at,
    }));
    const inserted = (await db('groups').insert(rows).returning('id')) as Array<{ id: number } | number>;
    const ids = inserted.map((r) => Number(typeof r === 'object' ? r.id : r)).sort((a, b) => a - b);
    await db('memberships').insert(ids.map((id) => ({ group_id: id, user_id: user.id, role: 'member', created_at: at })));
    busy = { token: await personalToken(idp.db, user.id), ids };
  });

  const groups = (query: string, token = busy.token) => call(idp, `/apis/v2/groups${query}`, { token });

  describe('invalid pageNumber and pageSize', () => {
    const bad: Array<[string, string]> = [];
    for (const name of ['pageNumber', 'pageSize']) {
      for (const value of ['0', '-1', '1.5', 'abc', '1e3', '+1', ' 1', '0x10', '99999999999999999999']) bad.push([name, `${name}=${encodeURIComponent(value)}`]);
      bad.push([name, `${name}=10&${name}=10`]);
      bad.push([name, `${name}=1&${name}=`]);
    }
    bad.push(['pageSize', 'pageSize=51']);
    bad.push(['pageSize', 'pageSize=1000']);

    for (const [name, query] of bad) {
      it(`refuses ?${query} with 400 invalid_request naming ${name}`, async () => {
        const res = await groups(`?${query}`);
        expectApiError(res, 400, 'invalid_request');
        expect(res.body.error_description).to.include(name);
      });
    }
  });

  describe('defaults and limits', () => {
    it('treats empty pageNumber and pageSize as absent: page 1 of 20', async () => {
      const res = await groups('?pageNumber=&pageSize=');
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ pageNumber: 1, pageSize: 20 });
      expect(res.body.data.total).to.equal(120);
      expect(res.body.data.items.map((g: { id: number }) => g.id)).to.deep.equal(busy.ids.slice(0, 20));
    });

    it('uses page 1 of 20 when neither is given', async () => {
      const res = await groups('');
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ pageNumber: 1, pageSize: 20 });
      expect(res.body.data.items).to.have.length(20);
    });

    it('accepts pageSize 1 and 50, the bounds', async () => {
      expect((await groups('?pageSize=1')).body.data.items).to.have.length(1);
      expect((await groups('?pageSize=50')).body.data.items).to.have.length(50);
    });

    it('answers a page past the end with 200, no items and the right total', async () => {
      const res = await groups('?pageNumber=4&pageSize=50');
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.deep.equal({ data: { total: 120, items: [] }, pageNumber: 4, pageSize: 50 });
      const far = await groups('?pageNumber=1000000');
      expect(far.status).to.equal(200);
      expect(far.body.data).to.deep.equal({ total: 120, items: [] });
    });
  });

  describe('pages and the Link header', () => {
    it('covers all 120 groups with pageSize=50 on pages 1..3, each once, in ascending id', async () => {
      const seen: number[] = [];
      const sizes: number[] = [];
      for (const pageNumber of [1, 2, 3]) {
        const res = await groups(`?pageNumber=${pageNumber}&pageSize=50`);
        expect(res.status).to.equal(200);
        expect(res.body).to.include({ pageNumber, pageSize: 50 });
        expect(res.body.data.total).to.equal(120);
        const ids = res.body.data.items.map((g: { id: number }) => g.id);
        sizes.push(ids.length);
        seen.push(...ids);
      }
      expect(sizes).to.deep.equal([50, 50, 20]);
      expect(new Set(seen).size).to.equal(120);
      expect(seen).to.deep.equal(busy.ids);
      expect(seen).to.deep.equal([...seen].sort((a, b) => a - b));
    });

    it('links first and next (no prev) from page 1', async () => {
      const links = parseLinks((await groups('?pageNumber=1&pageSize=50')).headers.get('link'));
      expect(pageNumbers(links)).to.deep.equal({ first: 1, next: 2, last: 3 });
      for (const l of Object.values(links)) {
        expect(l.pageSize).to.equal(50);
        expect(l.url.origin + l.url.pathname).to.equal(`${idp.url}/apis/v2/groups`);
      }
    });

    it('links first, prev, next and last from a middle page', async () => {
      const links = parseLinks((await groups('?pageNumber=2&pageSize=50')).headers.get('link'));
      expect(pageNumbers(links)).to.deep.equal({ first: 1, prev: 1, next: 3, last: 3 });
    });

    it('links first, prev and last (no next) from the last page', async () => {
      const links = parseLinks((await groups('?pageNumber=3&pageSize=50')).headers.get('link'));
      expect(pageNumbers(links)).to.deep.equal({ first: 1, prev: 2, last: 3 });
    });

    it('links prev to the last page from a page past the end', async () => {
      const links = parseLinks((await groups('?pageNumber=9&pageSize=50')).headers.get('link'));
      expect(pageNumbers(links)).to.deep.equal({ first: 1, prev: 3, last: 3 });
    });

    it('uses the default pageSize in links when none was given', async () => {
      const links = parseLinks((await groups('')).headers.get('link'));
      expect(pageNumbers(links)).to.deep.equal({ first: 1, next: 2, last: 6 });
      expect(links.last!.pageSize).to.equal(20);
    });

    it('links page 1 as first and last for an empty list', async () => {
      const loner = await makeUser(idp.db);
      const res = await groups('', await personalToken(idp.db, loner.id));
      expect(res.body.data).to.deep.equal({ total: 0, items: [] });
      expect(pageNumbers(parseLinks(res.headers.get('link')))).to.deep.equal({ first: 1, last: 1 });
    });

    it('keeps the filter in every link', async () => {
      const res = await groups('?filter=Bulk%201&pageSize=5');
      const links = parseLinks(res.headers.get('link'));
      for (const l of Object.values(links)) expect(l.url.searchParams.get('filter')).to.equal('Bulk 1');
    });

    it('leaves parameters the list does not read out of the links, so a long query string cannot swell the header', async () => {
      // Four links of an 8 KB parameter each once made a head no Node client (16 KiB) or nginx buffer reads.
      const res = await groups(`?pageSize=5&filter=Bulk&${'x'.repeat(8000)}=${'y'.repeat(100)}`);
      expect(res.status).to.equal(200);
      const links = parseLinks(res.headers.get('link'));
      expect(Object.keys(links)).to.include.members(['first', 'next', 'last']);
      for (const l of Object.values(links)) expect([...l.url.searchParams.keys()].sort()).to.deep.equal(['filter', 'pageNumber', 'pageSize']);
      expect(res.headers.get('link')!.length).to.be.below(1000);
    });
  });

  describe('filter', () => {
    let token: string;
    let ids: Record<string, number>;

    before(async () => {
      const db = idp.db;
      const user = await makeUser(db);
      const tag = randomBytes(3).toString('hex');
      const made = {
        alpha: await makeGroup(db, user.id, { name: 'Alpha Team', path: `first-${tag}` }),
        beta: await makeGroup(db, user.id, { name: 'Second', path: `beta-squad-${tag}` }),
        percent: await makeGroup(db, user.id, { name: '100% Done', path: `pct-${tag}` }),
        underscore: await makeGroup(db, user.id, { name: 'Other', path: `under_score-${tag}` }),
      };
      ids = Object.fromEntries(Object.entries(made).map(([k, g]) => [k, g.id]));
      token = await personalToken(idp.db, user.id);
    });

    const matching = async (filter: string) => {
      const res = await groups(`?filter=${encodeURIComponent(filter)}`, token);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data.total).to.equal(res.body.data.items.length);
      return res.body.data.items.map((g: { id: number }) => g.id);
    };

    it('matches the name case-insensitively', async () => {
      expect(await matching('alpha')).to.deep.equal([ids.alpha]);
      expect(await matching('ALPHA TEAM')).to.deep.equal([ids.alpha]);
    });

    it('matches the path case-insensitively', async () => {
      expect(await matching('BETA-SQUAD')).to.deep.equal([ids.beta]);
    });

    it('takes % and _ literally, not as wildcards', async () => {
      expect(await matching('%')).to.deep.equal([ids.percent]);
      expect(await matching('_')).to.deep.equal([ids.underscore]);
    });

    it('returns nothing for a filter that matches nothing, and everything for an empty one', async () => {
      expect(await matching('no-such-group')).to.deep.equal([]);
      expect(await matching('')).to.have.length(4);
    });

    it('refuses a filter of more than 100 characters, naming it', async () => {
      const res = await groups(`?filter=${'a'.repeat(101)}`, token);
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('filter');
    });

    it('refuses a repeated filter, naming it', async () => {
      const res = await groups('?filter=a&filter=b', token);
      expectApiError(res, 400, 'invalid_request');
      expect(res.body.error_description).to.include('filter');
    });
  });
});
