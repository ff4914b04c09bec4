import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { isUniqueViolation } from '../../src/db/knex.js';
import { describeEachProfile, useDatabase, useIdp } from '../helpers/app.js';
import { Browser, visit } from '../helpers/browser.js';
import { makeUser, PASSWORD } from '../helpers/factories.js';
import { errorMessage, fieldError, inputValue } from '../helpers/html.js';

const unique = () => randomBytes(4).toString('hex');

describeEachProfile('account pages', (profile) => {
  const idp = useIdp(profile);

  const countUsers = async () => Number(((await idp.db('users').count({ n: '*' }).first()) as { n: number | string }).n);

  describe('sign up', () => {
    it('answers "check your inbox" and makes no account until the mailed link is followed', async () => {
      const before = await countUsers();
      const client = await visit(idp.url, '/signup');
      const username = `new-${unique()}`;
      await client
        .submit('/signup', { username, email: `${username}@example.test`, name: 'New Person', password: PASSWORD })
        .expect(302, '/signup/sent');
      const sent = await client.get('/signup/sent').expect(200);
      expect(sent.text).to.include('Check your inbox').and.include(`${username}@example.test`);
      // A reload no longer names the address (it rode in a one-time cookie, never in the URL).
      expect((await client.get('/signup/sent').expect(200)).text).not.to.include(`${username}@example.test`);
      await client.get('/groups').expect(302, '/login?return_to=%2Fgroups');
      expect(await countUsers()).to.equal(before);
    });

    it('re-shows the form naming the username when it is taken in another case, keeping the typed values but not the password', async () => {
      const existing = await makeUser(idp.db, { username: `Taken-${unique()}` });
      const client = await visit(idp.url, '/signup');
      const typed = { username: existing.username.toUpperCase(), email: `other-${unique()}@example.test`, name: 'Someone Else', password: 'a-secret-typed-password' };
      const res = await client.submit('/signup', typed).expect(409);
      expect(fieldError(res.text, 'username')).to.include('already taken');
      expect(fieldError(res.text, 'email')).to.equal(undefined);
      expect(inputValue(res.text, 'username')).to.equal(typed.username);
      expect(inputValue(res.text, 'email')).to.equal(typed.email);
      expect(inputValue(res.text, 'name')).to.equal(typed.name);
      expect(res.text).not.to.include(typed.password);
    });

    it('refuses a username with characters outside [a-zA-Z0-9-_.]', async () => {
      const before = await countUsers();
      const client = await visit(idp.url, '/signup');
      const res = await client
        .submit('/signup', { username: 'bad name!', email: `bad-${unique()}@example.test`, name: '', password: PASSWORD })
        .expect(400);
      expect(fieldError(res.text, 'username')).to.include('Username may contain only ASCII letters, digits');
      expect(inputValue(res.text, 'username')).to.equal('bad name!');
      expect(await countUsers()).to.equal(before);
    });

    it('shows every bad field at once, each in its label’s words, keeping what was typed but the password', async () => {
      const before = await countUsers();
      const client = await visit(idp.url, '/signup');
      const res = await client.submit('/signup', { username: 'x', email: 'not an address', name: 'Kept', password: 'short' }).expect(400);
      expect(fieldError(res.text, 'username')).to.equal('Username must be 2–39 characters');
      expect(fieldError(res.text, 'email')).to.equal('Email must be a valid email address');
      expect(fieldError(res.text, 'password')).to.equal('Password must be at least 8 characters');
      expect(fieldError(res.text, 'name')).to.equal(undefined);
      expect(inputValue(res.text, 'email')).to.equal('not an address');
      expect(inputValue(res.text, 'name')).to.equal('Kept');
      expect(inputValue(res.text, 'password')).to.equal(undefined);
      expect(await countUsers()).to.equal(before);
    });

    it('refuses a name longer than 100 characters', async () => {
      const before = await countUsers();
      const client = await visit(idp.url, '/signup');
      const username = `long-${unique()}`;
      const res = await client
        .submit('/signup', { username, email: `${username}@example.test`, name: 'x'.repeat(101), password: PASSWORD })
        .expect(400);
      expect(fieldError(res.text, 'name')).to.equal('Name must be at most 100 characters');
      expect(await countUsers()).to.equal(before);
    });
  });

  describe('sign in', () => {
    it('signs in with the username', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url);
      await client.submit('/login', { login: user.username, password: user.password }).expect(302, '/groups');
      const res = await client.get('/groups').expect(200);
      expect(res.text).to.include(`title="Signed in as ${user.username}"`);
    });

    it('signs in with the email', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url);
      await client.submit('/login', { login: user.email, password: user.password }).expect(302, '/groups');
      const res = await client.get('/groups').expect(200);
      expect(res.text).to.include(`title="Signed in as ${user.username}"`);
    });

    it('answers a wrong password with a 401 page that says so and keeps the login', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url);
      const res = await client.submit('/login', { login: user.username, password: 'not the password' }).expect(401);
      expect(fieldError(res.text, 'login')).to.equal('Incorrect username, email or password.');
      expect(inputValue(res.text, 'login')).to.equal(user.username);
      expect(res.text).not.to.include('not the password');
      await client.get('/groups').expect(302, '/login?return_to=%2Fgroups');
    });
  });

  describe('CSRF', () => {
    it('refuses a sign-in without a CSRF token', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url);
      await client.postForm('/login', { login: user.username, password: user.password }).expect(403);
      await client.get('/groups').expect(302);
    });

    it('refuses a sign-in with a wrong CSRF token', async () => {
      const user = await makeUser(idp.db);
      const client = await visit(idp.url);
      const wrong = client.csrf.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
      await client.postForm('/login', { login: user.username, password: user.password, _csrf: wrong }).expect(403);
      await client.get('/groups').expect(302);
    });

    it('refuses a sign-up without a CSRF token and creates no account', async () => {
      const username = `nocsrf-${unique()}`;
      const res = await new Browser(idp.url).postForm('/signup', { username, email: `${username}@example.test`, password: PASSWORD }).expect(403);
      expect(errorMessage(res.text)).to.include('did not come from this site');
      expect(await idp.db('users').where({ username_key: username }).first()).to.equal(undefined);
    });

    it('refuses a sign-up whose CSRF token belongs to another visitor and creates no account', async () => {
      const other = await visit(idp.url, '/signup');
      const client = await visit(idp.url, '/signup');
      const username = `foreign-${unique()}`;
      await client.postForm('/signup', { username, email: `${username}@example.test`, password: PASSWORD, _csrf: other.csrf }).expect(403);
      expect(await idp.db('users').where({ username_key: username }).first()).to.equal(undefined);
    });
  });
});

describeEachProfile('users schema', (profile) => {
  const database = useDatabase(profile);

  const row = (username: string, email: string) => ({
    username,
    username_key: username.toLowerCase(),
    email,
    email_key: email.toLowerCase(),
    name: '',
    password_hash: 'x',
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString(),
  });

  it('rejects a second username that differs only in case, written straight through knex', async () => {
    const name = `Case-${unique()}`;
    await database.db('users').insert(row(name, `${unique()}@example.test`));
    await assert.rejects(database.db('users').insert(row(name.toUpperCase(), `${unique()}@example.test`)), isUniqueViolation);
    const stored = await database.db('users').where({ username_key: name.toLowerCase() }).count({ n: '*' }).first();
    expect(Number((stored as { n: number | string }).n)).to.equal(1);
  });

  it('rejects a second email that differs only in case, written straight through knex', async () => {
    const email = `Mail-${unique()}@Example.test`;
    await database.db('users').insert(row(`a-${unique()}`, email));
    await assert.rejects(database.db('users').insert(row(`b-${unique()}`, email.toUpperCase())), isUniqueViolation);
  });
});
