import { execFile } from 'node:child_process';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { expect } from 'chai';
import { ldapGroups, ldapPeople, startSlapd, type Slapd } from '../helpers/slapd.js';

type Entry = Record<string, string[]> & { dn: string[] };

/**
 * The directory the LDAP sign-in tests run against (test/helpers/slapd.ts), checked with
 * OpenLDAP's own client tools (ldapsearch, ldapwhoami from ldap-utils): TLS with the test CA,
 * StartTLS, binds, what the service account may read, locking, stop and start, and changes.
 */
describe('The test directory (Debian slapd)', function () {
  let slapd: Slapd;
  before(async () => {
    slapd = await startSlapd();
  });
  after(async () => {
    await slapd?.close();
  });

  /** Runs an ldap-utils tool trusting the test CA; its exit code and what it printed. */
  function tool(name: 'ldapsearch' | 'ldapwhoami', args: string[]) {
    return new Promise<{ code: number; out: string; err: string }>((resolve) => {
      execFile(name, ['-x', ...args], { env: { ...process.env, LDAPTLS_CACERT: slapd.caFile, LDAPTLS_REQCERT: 'demand' } }, (error, out, err) => {
        resolve({ code: error ? Number((error as NodeJS.ErrnoException).code) : 0, out, err });
      });
    });
  }

  /** ldapsearch over ldaps bound as `dn`, its entries parsed from LDIF (base64 values decoded). */
  async function search(dn: string, password: string, base: string, filter: string, ...attrs: string[]): Promise<Entry[]> {
    const r = await tool('ldapsearch', ['-H', slapd.ldapsUrl, '-D', dn, '-w', password, '-LLL', '-o', 'ldif_wrap=no', '-b', base, filter, ...attrs]);
    expect(r.code, r.err).to.equal(0);
    return r.out
      .split(/\n\n+/)
      .filter((block) => block.trim())
      .map((block) => {
        const entry = {} as Entry;
        for (const line of block.split('\n')) {
          const m = /^([^:]+):(:?) (.*)$/.exec(line);
          if (!m) continue;
          const value = m[2] ? Buffer.from(m[3]!, 'base64').toString('utf8') : m[3]!;
          (entry[m[1]!] ??= []).push(value);
        }
        return entry;
      });
  }

  const asService = (filter: string, ...attrs: string[]) => search(slapd.serviceDn, slapd.servicePassword, slapd.baseDn, filter, ...attrs);
  const whoami = (dn: string, password: string, url = slapd.ldapsUrl, ...extra: string[]) => tool('ldapwhoami', ['-H', url, '-D', dn, '-w', password, ...extra]);

  /** The server's certificate, from a TLS connection to the ldaps port checked for `name` (the address when none). */
  function tlsPeer(name?: string, ca?: string) {
    return new Promise<PeerCertificate>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: Number(new URL(slapd.ldapsUrl).port), ...(name ? { servername: name } : {}), ...(ca ? { ca } : {}) }, () => {
        const peer = socket.getPeerCertificate();
        socket.end();
        resolve(peer);
      });
      socket.on('error', reject);
    });
  }

  it('serves ldaps with a certificate for 127.0.0.1 and localhost that only the test CA vouches for', async () => {
    for (const name of [undefined, 'localhost']) {
      const peer = await tlsPeer(name, slapd.caPem);
      expect(peer.subjectaltname).to.include('IP Address:127.0.0.1').and.include('DNS:localhost');
    }
    const untrusted = await tlsPeer('localhost').then(() => null, (err: NodeJS.ErrnoException) => err);
    expect(untrusted?.code).to.equal('SELF_SIGNED_CERT_IN_CHAIN');
    const otherName = await tlsPeer('ldap.example.org', slapd.caPem).then(() => null, (err: NodeJS.ErrnoException) => err);
    expect(otherName?.code).to.equal('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(slapd.ldapsUrl).to.match(/^ldaps:\/\/127\.0\.0\.1:\d+$/);
    expect(slapd.ldapUrl).to.match(/^ldap:\/\/127\.0\.0\.1:\d+$/);
  });

  it('lets the service account read people (entryUUID, memberOf) and groups over ldaps, never a password', async () => {
    const [alice, ...others] = await asService('(uid=alice)', '*', 'entryUUID', 'memberOf', 'userPassword');
    expect(others).to.have.length(0);
    expect(alice!.dn).to.deep.equal([ldapPeople.alice.dn]);
    expect(alice!.mail).to.deep.equal(['alice@example.org']);
    expect(alice!.cn).to.deep.equal(['Alice Liddell']);
    expect(alice!.displayName).to.deep.equal(['Alice Liddell']);
    expect(alice!.entryUUID?.[0]).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(alice!.memberOf).to.have.members([ldapGroups.developers.dn, ldapGroups.admins.dn]);
    expect(alice).not.to.have.property('userPassword');
    // It is there, stored hashed: the root DN sees it.
    const [asRoot] = await search(slapd.rootDn, slapd.rootPassword, ldapPeople.alice.dn, '(objectClass=*)', 'userPassword');
    expect(asRoot!.userPassword?.[0]).to.match(/^\{SSHA\}/);

    const [dave] = await asService('(uid=dave)', '*');
    expect(dave).not.to.have.property('mail');
    const [carol] = await asService('(uid=carol)', 'pwdAccountLockedTime');
    expect(carol!.pwdAccountLockedTime).to.deep.equal(['000001010000Z']);
    // The * in star*man's uid matched as a character, not as a wildcard.
    const star = await asService('(uid=star\\2aman)', 'mail');
    expect(star.map((e) => e.dn[0])).to.deep.equal([ldapPeople.starman.dn]);
    expect(star[0]!.mail).to.deep.equal(['star@example.org']);

    const groups = await asService(`(&(objectClass=groupOfNames)(member=${ldapPeople.alice.dn}))`, 'cn', 'member');
    expect(groups.map((g) => g.cn![0])).to.have.members(['developers', 'admins']);
    expect(groups.find((g) => g.cn![0] === 'developers')!.member).to.have.members([ldapPeople.alice.dn, ldapPeople.bob.dn]);
  });

  it('binds people with their password; a wrong password, and a locked account with the right one, fail', async () => {
    for (const p of [ldapPeople.alice, ldapPeople.bob, ldapPeople.dave, ldapPeople.starman]) {
      const r = await whoami(p.dn, p.password);
      expect(r.code, `${p.uid}: ${r.err}`).to.equal(0);
      expect(r.out.trim()).to.equal(`dn:${p.dn}`);
    }
    expect((await whoami(slapd.serviceDn, slapd.servicePassword)).code).to.equal(0);
    expect((await whoami(ldapPeople.alice.dn, 'alice-pass-2')).code).to.equal(49);
    expect((await whoami(ldapPeople.carol.dn, ldapPeople.carol.password)).code).to.equal(49);
    // Failed binds do not lock anyone.
    expect((await whoami(ldapPeople.alice.dn, ldapPeople.alice.password)).code).to.equal(0);
    // A person reads their own entry, and not another's.
    expect(await search(ldapPeople.bob.dn, ldapPeople.bob.password, ldapPeople.bob.dn, '(objectClass=*)', 'mail')).to.have.length(1);
    const other = await tool('ldapsearch', ['-H', slapd.ldapsUrl, '-D', ldapPeople.bob.dn, '-w', ldapPeople.bob.password, '-LLL', '-b', ldapPeople.alice.dn, '(objectClass=*)']);
    expect(other.out.trim()).to.equal('');
  });

  it('offers StartTLS on ldap:// and refuses a password sent without it', async () => {
    const tls = await whoami(ldapPeople.alice.dn, ldapPeople.alice.password, slapd.ldapUrl, '-ZZ');
    expect(tls.code, tls.err).to.equal(0);
    expect(tls.out.trim()).to.equal(`dn:${ldapPeople.alice.dn}`);
    const plain = await whoami(ldapPeople.alice.dn, ldapPeople.alice.password, slapd.ldapUrl);
    expect(plain.code).to.equal(13);
    expect(plain.err).to.include('Confidentiality required');
  });

  it('applies changes as the root DN: lock and unlock, add and delete (groups follow), and rejects a failing one', async () => {
    await slapd.modify(`dn: ${ldapPeople.bob.dn}\nchangetype: modify\nreplace: pwdAccountLockedTime\npwdAccountLockedTime: 000001010000Z\n`);
    expect((await whoami(ldapPeople.bob.dn, ldapPeople.bob.password)).code).to.equal(49);
    await slapd.modify(`dn: ${ldapPeople.bob.dn}\nchangetype: modify\ndelete: pwdAccountLockedTime\n`);
    expect((await whoami(ldapPeople.bob.dn, ldapPeople.bob.password)).code).to.equal(0);

    const erin = `uid=erin,ou=people,${slapd.baseDn}`;
    await slapd.modify(
      `dn: ${erin}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: erin\ncn: Erin Example\nsn: Example\nuserPassword: erin-pass-1\n\n` +
        `dn: ${ldapGroups.developers.dn}\nchangetype: modify\nadd: member\nmember: ${erin}\n`,
    );
    expect((await whoami(erin, 'erin-pass-1')).code).to.equal(0);
    expect((await asService('(uid=erin)', 'memberOf'))[0]!.memberOf).to.deep.equal([ldapGroups.developers.dn]);
    await slapd.modify(`dn: ${erin}\nchangetype: delete\n`);
    expect(await asService('(uid=erin)')).to.have.length(0);
    const [developers] = await asService('(cn=developers)', 'member');
    expect(developers!.member).to.have.members([ldapPeople.alice.dn, ldapPeople.bob.dn]);

    const failed = await slapd.modify(`dn: uid=nobody,ou=people,${slapd.baseDn}\nchangetype: delete\n`).then(() => null, (err: Error) => err);
    expect(failed?.message).to.include('No such object');
  });

  it('goes down on stop() and comes back on start() on the same ports with its data', async () => {
    await slapd.modify(`dn: ${ldapPeople.dave.dn}\nchangetype: modify\nadd: mail\nmail: dave@example.org\n`);
    await slapd.stop();
    expect((await whoami(ldapPeople.alice.dn, ldapPeople.alice.password)).code).to.equal(255); // Can't contact LDAP server
    const refused = await tlsPeer('localhost', slapd.caPem).then(() => null, (err: NodeJS.ErrnoException) => err);
    expect(refused?.code).to.equal('ECONNREFUSED');

    await slapd.start();
    expect((await whoami(ldapPeople.alice.dn, ldapPeople.alice.password)).code).to.equal(0);
    expect((await asService('(uid=dave)', 'mail'))[0]!.mail).to.deep.equal(['dave@example.org']);
    await slapd.modify(`dn: ${ldapPeople.dave.dn}\nchangetype: modify\ndelete: mail\n`);
  });
});
