import { expect } from 'chai';
import { parseCaCertificate, parseDirectoryUrl, parseGroupMapping, ldapDirectory } from '../../src/services/federation/ldap.js';
import { disabledBy, escapeFilterValue, fillFilter, normalizeDn } from '../../src/services/directory/connection.js';
import { mappedRoles } from '../../src/services/directory/groups.js';

/** The directory kind's settings as an administrator types them, and how a sign-in reads a directory's answer. */
describe('Directory (LDAP) settings and answers', () => {
  const setting = (name: string) => ldapDirectory.settings.find((s) => s.name === name)!;

  it('takes ldaps:// and ldap:// (StartTLS) URLs of a host and port only', () => {
    expect(parseDirectoryUrl(' ldaps://ldap.example.com:636/ ')).to.equal('ldaps://ldap.example.com:636');
    expect(parseDirectoryUrl('ldap://[::1]:389')).to.equal('ldap://[::1]:389');
    for (const bad of ['http://ldap.example.com', 'ldaps://', 'ldaps://user:pw@ldap.example.com', 'ldaps://ldap.example.com/dc=example', 'ldaps://ldap.example.com?x', 'ldap.example.com']) {
      expect(() => parseDirectoryUrl(bad), bad).to.throw(/URL/);
    }
  });

  it('wants the username placeholder in the user filter, and balanced parentheses', () => {
    const filter = setting('user_filter');
    expect(filter.parse('(&(objectClass=person)(uid={{username}}))')).to.equal('(&(objectClass=person)(uid={{username}}))');
    expect(() => filter.parse('(uid=alice)')).to.throw(/\{\{username\}\}/);
    expect(() => filter.parse('(&(uid={{username}})')).to.throw(/as many \( as \)/);
    expect(() => filter.parse('uid={{username}}')).to.throw(/parentheses/);
    expect(() => setting('group_filter').parse('(member={{username}})')).to.throw(/\{\{dn\}\}/);
  });

  it('reads a group mapping line by line, naming the line that is wrong', () => {
    expect(parseGroupMapping('# comment\ncn=Devs,ou=groups,dc=example,dc=org = platform\ncn=admins,ou=groups,dc=example,dc=org = Platform owner\n')).to.deep.equal([
      { directoryGroup: 'cn=Devs,ou=groups,dc=example,dc=org', groupPath: 'platform', role: 'member' },
      { directoryGroup: 'cn=admins,ou=groups,dc=example,dc=org', groupPath: 'platform', role: 'owner' },
    ]);
    expect(() => parseGroupMapping('cn=a,dc=x = platform\ncn=b,dc=x platform')).to.throw(/line 2/);
    expect(() => parseGroupMapping('cn=a,dc=x = platform admin')).to.throw(/owner, maintainer or member/);
    expect(() => parseGroupMapping('cn=a,dc=x = platform member extra')).to.throw(/line 1/);
  });

  it('takes only readable PEM certificates as the CA', () => {
    expect(() => parseCaCertificate('not a certificate')).to.throw(/PEM/);
    expect(() => parseCaCertificate('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).to.throw(/could not be read/);
  });

  it('escapes every filter character of a typed username (RFC 4515)', () => {
    expect(escapeFilterValue('*')).to.equal('\\2a');
    expect(escapeFilterValue('a)(uid=*')).to.equal('a\\29\\28uid=\\2a');
    expect(escapeFilterValue('\\00')).to.equal('\\5c00');
    expect(escapeFilterValue('a\u0000b')).to.equal('a\\00b');
    expect(fillFilter('(|(uid={{username}})(mail={{username}}))', '{{username}}', 'x*')).to.equal('(|(uid=x\\2a)(mail=x\\2a))');
  });

  it('reads a disabled or locked account from Active Directory, 389/FreeIPA and OpenLDAP attributes', () => {
    const entry = (attributes: Record<string, string>) => ({ dn: 'uid=x', ...attributes });
    expect(disabledBy(entry({ userAccountControl: '512' }))).to.equal(undefined);
    expect(disabledBy(entry({ userAccountControl: '514' }))).to.match(/disabled/);
    expect(disabledBy(entry({ userAccountControl: '528' }))).to.match(/locked/);
    expect(disabledBy(entry({ nsAccountLock: 'TRUE' }))).to.equal('nsAccountLock');
    expect(disabledBy(entry({ nsAccountLock: 'false' }))).to.equal(undefined);
    expect(disabledBy(entry({ pwdAccountLockedTime: '000001010000Z' }))).to.equal('pwdAccountLockedTime');
  });

  it('maps directory groups to the highest role each group here is given, and says which groups the person is not in', () => {
    const mapping = parseGroupMapping('cn=devs,dc=x = platform member\ncn=leads,dc=x = platform maintainer\ncn=ops,dc=x = infra');
    const roles = mappedRoles(mapping, ['CN=Leads, DC=x', 'cn=devs,dc=x']);
    expect([...roles]).to.deep.equal([['platform', 'maintainer'], ['infra', undefined]]);
    expect(normalizeDn(' CN=Leads , DC=x ')).to.equal('cn=leads,dc=x');
  });
});
