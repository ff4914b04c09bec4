import { expect } from 'chai';
import { describeEachProfile, useIdp } from '../helpers/app.js';
import { signIn, visit } from '../helpers/browser.js';
import { makeGroup, makeUser } from '../helpers/factories.js';
import { fieldError, unescapeHtml } from '../helpers/html.js';

/** Every message a page shows is a sentence: it starts with a capital letter. */
describeEachProfile('messages on the pages', (profile) => {
  const idp = useIdp(profile);

  it('names the bad address on Reset your password with a capital letter', async () => {
    const client = await visit(idp.url, '/forgot-password');
    const page = await client.get('/forgot-password').expect(200);
    const res = await client.fill(page, '/forgot-password', { Email: 'not an address' }).expect(400);
    expect(fieldError(res.text, 'email')).to.equal('Email must be a valid email address');
  });

  it('asks for the group’s path on Delete this group with a capital letter', async () => {
    const owner = await makeUser(idp.db);
    const group = await makeGroup(idp.db, owner.id);
    const client = await signIn(idp.url, owner);
    const page = await client.get(`/groups/${group.path}/settings/delete`).expect(200);
    const res = await client.fill(page, '/settings/delete', { [`Type ${group.path} to confirm`]: 'not the path' }).expect(400);
    expect(unescapeHtml(fieldError(res.text, 'confirm')!)).to.equal(`Type the group's path, ${group.path}, to confirm`);
  });

  it('says the username takes ASCII letters, in the sign-up hint and the refusal', async () => {
    const client = await visit(idp.url, '/signup');
    const page = await client.get('/signup').expect(200);
    expect(unescapeHtml(page.text)).to.include('2–39 ASCII letters, digits, "-", "_" or "."');
    const res = await client.fill(page, '/signup', { Username: 'jürgen' }).expect(400);
    expect(unescapeHtml(fieldError(res.text, 'username')!)).to.equal('Username may contain only ASCII letters, digits, "-", "_" and "."');
  });
});
