import { expect } from 'chai';
import { setSiteAdmin } from '../../src/services/admin.js';
import { createProvider } from '../../src/services/federation/manage.js';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { makeGroup, makeUser } from '../helpers/factories.js';
import { directorySettings, startSlapd, type Slapd } from '../helpers/slapd.js';
import { signInThroughPage, useChromium } from './support.js';

const PHONE = { width: 390, height: 844 };

/**
 * A directory's (LDAP) provider page on a phone, in a real browser against a real slapd: the
 * answers of Test connection, Test a user and Check linked accounts now stay within 390 px, long
 * DNs and filters wrapping, and the buttons and the username field are reached by their words.
 */
describeEachProfile('A directory\'s provider page in a real browser', function (profile) {
  this.timeout(60_000);
  const idp = useIdp(profile);
  const chromium = useChromium();
  let slapd: Slapd;

  before(async function () {
    this.timeout(30_000);
    slapd = await startSlapd();
  });
  after(async () => {
    await slapd?.close();
  });

  it('at 390 px the answers, with a long DN, its groups and the mapping, stay within the screen', async () => {
    const admin = await makeUser(idp.db);
    await setSiteAdmin(idp.db, { userId: 0, ip: null, admin: true }, admin, true);
    const group = await makeGroup(idp.db, admin.id, { path: `p${'l'.repeat(60)}` });
    // A person whose DN is one long word, in a group of a long name.
    const uid = `someone-with-a-very-long-uid-${'x'.repeat(90)}`;
    const groupDn = `cn=${'g'.repeat(100)},ou=groups,${slapd.baseDn}`;
    await slapd.modify(`dn: uid=${uid},ou=people,${slapd.baseDn}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: ${uid}\ncn: Long Name\nsn: Name\nmail: long@example.org\nuserPassword: long-pass-1\n`);
    await slapd.modify(`dn: ${groupDn}\nchangetype: add\nobjectClass: groupOfNames\ncn: ${'g'.repeat(100)}\nmember: uid=${uid},ou=people,${slapd.baseDn}\n`);
    const row = await createProvider({ db: idp.db, cipher: undefined }, { userId: 0, ip: null, admin: true }, {
      kind: 'ldap',
      slug: `corp-${profile.replace(/\W/g, '')}`,
      name: 'Corp Directory',
      client_id: slapd.serviceDn,
      client_secret: slapd.servicePassword,
      settings: directorySettings(slapd, `${groupDn} = ${group.path} maintainer`, { user_filter: '(&(objectClass=inetOrgPerson)(|(uid={{username}})(mail={{username}})))' }),
    });

    const page = await chromium.newPage({ viewport: PHONE, deviceScaleFactor: 1 });
    const width = () => page.evaluate(() => document.documentElement.scrollWidth);
    await signInThroughPage(page, idp.url, admin);
    await page.goto(`${idp.url}/admin/providers/${row.slug}`);
    expect(await width(), 'the provider page, its CA certificate and mapping shown').to.be.at.most(PHONE.width);

    await page.getByRole('button', { name: 'Test connection' }).click();
    expect(await page.getByTestId('connection-ok').textContent()).to.match(/^Connected/);
    expect(await width(), 'after Test connection').to.be.at.most(PHONE.width);

    await page.getByLabel('Username').fill(uid);
    await page.getByRole('button', { name: 'Look up' }).click();
    expect(await page.getByTestId('user-dn').textContent()).to.equal(`uid=${uid},ou=people,${slapd.baseDn}`);
    expect(await page.getByTestId('mapped-group').textContent()).to.equal(`${group.path}: Maintainer`);
    expect(await width(), 'after Test a user').to.be.at.most(PHONE.width);
    // The answer is where the page scrolled to: the browser went to the form's #test-user.
    expect(new URL(page.url()).hash).to.equal('#test-user');
    expect(await page.getByTestId('user-result').isVisible()).to.equal(true);
    if (process.env.SHOT_DIR) await page.screenshot({ path: `${process.env.SHOT_DIR}/user-${profile}.png` });

    await page.getByRole('button', { name: 'Check linked accounts now' }).click();
    expect(await page.getByTestId('check-checked').textContent()).to.equal('0');
    expect(await width(), 'after the check').to.be.at.most(PHONE.width);
  });
});
