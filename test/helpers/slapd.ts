import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import { stopChild } from './processes.js';

/**
 * A real OpenLDAP directory for tests: Debian's `slapd` (`apt-get install slapd ldap-utils`), run
 * by the test as its own process (never the system service), configured the Debian way (a
 * cn=config directory made with `slapadd -n0`), on free loopback ports, with every file in a
 * temporary directory that `close` removes.
 *
 * The server:
 * - ldaps:// on one port, and ldap:// on another that offers StartTLS; a simple bind (a password)
 *   over ldap:// without StartTLS is refused with confidentialityRequired (13).
 * - TLS with a certificate for IP 127.0.0.1 and DNS localhost, signed by a CA made for the run
 *   (`caPem`, also in the file `caFile`). libldap's own tools (ldapsearch…) turn "localhost" into
 *   the machine's host name before checking the certificate, so give them 127.0.0.1.
 * - one mdb database, suffix dc=example,dc=org, root DN cn=admin,dc=example,dc=org (`rootDn`,
 *   `rootPassword`, for checks a service account may not make; `modify` binds as it).
 * - the ppolicy overlay with a default policy (cn=default,ou=policies,dc=example,dc=org:
 *   pwdLockout TRUE, pwdMaxFailure 0): an account with `pwdAccountLockedTime: 000001010000Z` is
 *   locked, and its bind fails with invalidCredentials (49) even with the right password, as a
 *   wrong password does (only a client sending the password policy control is told more); failed
 *   binds never lock an account by themselves. Passwords written in clear (add, modify) are stored
 *   hashed ({SSHA}).
 * - the memberof overlay: a person's `memberOf` lists the groupOfNames entries whose `member` names
 *   them, kept up to date when groups change and when a person is deleted or renamed.
 * - `entryUUID` (operational, set by slapd on every entry) is readable like any other attribute.
 *
 * Access:
 * - `userPassword`: used to bind (auth), writable by its owner, readable by no one (but the root DN).
 * - the service account reads every entry and attribute under dc=example,dc=org but `userPassword`,
 *   including the operational ones (entryUUID, memberOf, pwdAccountLockedTime).
 * - a person who bound reads their own entry, nothing else; anonymous reads the root DSE only.
 *
 * The entries:
 *
 *   dc=example,dc=org
 *     cn=idp-service                 service account, password service-secret
 *     ou=people                      inetOrgPerson: uid, cn, sn, displayName, mail, userPassword
 *       uid=alice    Alice Liddell   alice@example.org   alice-pass-1
 *       uid=bob      Bob Builder     bob@example.org     bob-pass-1
 *       uid=carol    Carol Danvers   carol@example.org   carol-pass-1   locked (pwdAccountLockedTime 000001010000Z)
 *       uid=dave     Dave Null       (no mail)           dave-pass-1
 *       uid=star*man Star Man        star@example.org    star-pass-1    (a filter must escape the *: uid=star\2aman)
 *     ou=groups                      groupOfNames, member = the person's full DN
 *       cn=developers                alice, bob
 *       cn=admins                    alice
 *     ou=policies
 *       cn=default                   the password policy above
 *
 * `ldapPeople` and `ldapGroups` below hold the same values for tests to use.
 *
 * A suite starts one in `before` (a few tenths of a second) and closes it in `after`; a server a
 * test run leaves running is killed when the test process exits (and, through `setpriv
 * --pdeathsig`, when it is killed). Debian's package ships no AppArmor profile for slapd, so it
 * reads its files in the system's temporary directory; where a profile confines /usr/sbin/slapd
 * (Ubuntu's), that directory must be allowed in it.
 */
export interface Slapd {
  /** ldaps://127.0.0.1:<port> */
  ldapsUrl: string;
  /** ldap://127.0.0.1:<port>, StartTLS offered; simple binds without it refused. */
  ldapUrl: string;
  /** The test CA's certificate (PEM), which signed the server's certificate for 127.0.0.1 and localhost. */
  caPem: string;
  /** The same CA certificate as a file (for LDAPTLS_CACERT). */
  caFile: string;
  /** dc=example,dc=org */
  baseDn: string;
  /** cn=idp-service,dc=example,dc=org: reads people and groups, never userPassword. */
  serviceDn: string;
  /** service-secret */
  servicePassword: string;
  /** The directory's root DN (no access control applies to it). */
  rootDn: string;
  rootPassword: string;
  /** Stops the server; its data stays (the directory is down until `start`). */
  stop(): Promise<void>;
  /** Starts the server again on the same ports with the same data; resolves once it takes TLS connections. Nothing if running. */
  start(): Promise<void>;
  /**
   * Applies LDIF change records (`changetype: modify`, `add`, `delete`, `modrdn`) as the root DN
   * with ldapmodify; rejects with ldapmodify's message if one fails.
   */
  modify(ldif: string): Promise<void>;
  /** What slapd printed (startup errors), for failure messages. */
  log(): string;
  /** Stops the server and removes every file. */
  close(): Promise<void>;
}

const SLAPD = '/usr/sbin/slapd';
const SLAPADD = '/usr/sbin/slapadd';
const LDAPMODIFY = '/usr/bin/ldapmodify';
/** util-linux's setpriv: slapd gets SIGKILL when the test process dies, however it dies. */
const SETPRIV = '/usr/bin/setpriv';

const BASE_DN = 'dc=example,dc=org';
const PEOPLE = `ou=people,${BASE_DN}`;
const GROUPS = `ou=groups,${BASE_DN}`;

export interface LdapPerson {
  uid: string;
  dn: string;
  password: string;
  cn: string;
  sn: string;
  displayName: string;
  mail?: string;
  locked?: boolean;
}

function person(uid: string, cn: string, password: string, mail?: string, locked = false): LdapPerson {
  return { uid, dn: `uid=${uid},${PEOPLE}`, password, cn, sn: cn.split(' ').at(-1)!, displayName: cn, ...(mail ? { mail } : {}), ...(locked ? { locked } : {}) };
}

/** The people every directory starts with. */
export const ldapPeople = {
  alice: person('alice', 'Alice Liddell', 'alice-pass-1', 'alice@example.org'),
  bob: person('bob', 'Bob Builder', 'bob-pass-1', 'bob@example.org'),
  carol: person('carol', 'Carol Danvers', 'carol-pass-1', 'carol@example.org', true),
  dave: person('dave', 'Dave Null', 'dave-pass-1'),
  starman: person('star*man', 'Star Man', 'star-pass-1', 'star@example.org'),
} as const;

/** The groups every directory starts with (groupOfNames; `member` holds full DNs). */
export const ldapGroups = {
  developers: { cn: 'developers', dn: `cn=developers,${GROUPS}`, members: [ldapPeople.alice.dn, ldapPeople.bob.dn] },
  admins: { cn: 'admins', dn: `cn=admins,${GROUPS}`, members: [ldapPeople.alice.dn] },
} as const;

const SERVICE_DN = `cn=idp-service,${BASE_DN}`;
const SERVICE_PASSWORD = 'service-secret';
const ROOT_DN = `cn=admin,${BASE_DN}`;

/** The server's configuration (cn=config), for `slapadd -n0`. */
function configLdif(dir: string, rootPassword: string): string {
  return `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: ${join(dir, 'slapd.pid')}
olcArgsFile: ${join(dir, 'slapd.args')}
olcTLSCACertificateFile: ${join(dir, 'ca.pem')}
olcTLSCertificateFile: ${join(dir, 'server.pem')}
olcTLSCertificateKeyFile: ${join(dir, 'server.key')}
olcSecurity: simple_bind=1
olcLogLevel: none

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb
olcModuleLoad: ppolicy
olcModuleLoad: memberof

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif

include: file:///etc/ldap/schema/cosine.ldif

include: file:///etc/ldap/schema/inetorgperson.ldif

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend
olcAccess: {0}to dn.base="" by * read
olcAccess: {1}to dn.base="cn=Subschema" by * read

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcAccess: {0}to * by * none

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcSuffix: ${BASE_DN}
olcDbDirectory: ${join(dir, 'data')}
olcDbMaxSize: 67108864
olcRootDN: ${ROOT_DN}
olcRootPW: ${rootPassword}
olcDbIndex: objectClass eq
olcDbIndex: uid,mail,cn eq
olcDbIndex: member eq
olcAccess: {0}to attrs=userPassword by self =xw by anonymous auth by * none
olcAccess: {1}to dn.subtree="${BASE_DN}" by dn.exact="${SERVICE_DN}" read by self read by * none

dn: olcOverlay={0}memberof,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {0}memberof
olcMemberOfRefInt: TRUE

dn: olcOverlay={1}ppolicy,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcPPolicyConfig
olcOverlay: {1}ppolicy
olcPPolicyDefault: cn=default,ou=policies,${BASE_DN}
olcPPolicyHashCleartext: TRUE
`;
}

/** The suffix and the password policy, loaded before the server first starts (slapadd -n1). */
function baseLdif(): string {
  return [
    `dn: ${BASE_DN}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example`,
    `dn: ou=policies,${BASE_DN}\nobjectClass: organizationalUnit\nou: policies`,
    `dn: cn=default,ou=policies,${BASE_DN}\nobjectClass: organizationalRole\nobjectClass: pwdPolicy\ncn: default\npwdAttribute: userPassword\npwdLockout: TRUE\npwdMaxFailure: 0`,
  ].join('\n\n') + '\n';
}

/**
 * The rest, added over ldaps once the server runs: memberof fills in memberOf, and ppolicy
 * stores the passwords hashed.
 */
function entriesLdif(): string {
  const people = Object.values(ldapPeople).map((p) =>
    [
      `dn: ${p.dn}`,
      'objectClass: inetOrgPerson',
      `uid: ${p.uid}`,
      `cn: ${p.cn}`,
      `sn: ${p.sn}`,
      `displayName: ${p.displayName}`,
      ...(p.mail ? [`mail: ${p.mail}`] : []),
      `userPassword: ${p.password}`,
      ...(p.locked ? ['pwdAccountLockedTime: 000001010000Z'] : []),
    ].join('\n'),
  );
  const groups = Object.values(ldapGroups).map((g) =>
    [`dn: ${g.dn}`, 'objectClass: groupOfNames', `cn: ${g.cn}`, ...g.members.map((m) => `member: ${m}`)].join('\n'),
  );
  return [
    `dn: ${PEOPLE}\nobjectClass: organizationalUnit\nou: people`,
    `dn: ${GROUPS}\nobjectClass: organizationalUnit\nou: groups`,
    `dn: ${SERVICE_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: idp-service\nuserPassword: ${SERVICE_PASSWORD}`,
    ...people,
    ...groups,
  ].join('\n\n') + '\n';
}

const run = promisify(execFile);

/** Kills a server whose data goes away anyway (slapd's orderly shutdown takes a second or so), and waits until it is gone. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await gone;
}

/** A test CA and a server certificate for IP 127.0.0.1 and DNS localhost signed by it (openssl; PEM, PKCS#8 key, which GnuTLS reads). */
async function makeCertificates(dir: string): Promise<void> {
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });
  await openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Horizon ID test LDAP CA');
  await openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext');
}

/** Two different loopback ports free a moment ago. */
async function freePorts(): Promise<[number, number]> {
  const servers = [createServer(), createServer()];
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return [ports[0]!, ports[1]!];
}

/** Servers and directories of harnesses not closed yet: killed and removed when the test process exits. */
const running = new Set<ChildProcess>();
const directories = new Set<string>();
let exitHook = false;
function killOnExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
    for (const dir of directories) rmSync(dir, { recursive: true, force: true });
  });
}

export async function startSlapd(): Promise<Slapd> {
  for (const program of [SLAPD, SLAPADD, LDAPMODIFY]) {
    if (!existsSync(program)) throw new Error(`${program} is missing: apt-get install slapd ldap-utils`);
  }
  killOnExit();
  const dir = mkdtempSync(join(tmpdir(), 'idp-slapd-'));
  directories.add(dir);
  let child: ChildProcess | undefined;
  let output = '';

  try {
    await makeCertificates(dir);
    const caFile = join(dir, 'ca.pem');
    const caPem = readFileSync(caFile, 'utf8');
    const rootPassword = `root-${Math.random().toString(36).slice(2)}`;
    // ldapmodify -y reads the whole file as the password: no newline.
    writeFileSync(join(dir, 'root.pw'), rootPassword, { mode: 0o600 });
    mkdirSync(join(dir, 'slapd.d'));
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'config.ldif'), configLdif(dir, rootPassword), { mode: 0o600 });
    const slapadd = spawnSync(SLAPADD, ['-n0', '-F', join(dir, 'slapd.d'), '-l', join(dir, 'config.ldif')], { encoding: 'utf8' });
    if (slapadd.status !== 0) throw new Error(`slapadd -n0 failed (${slapadd.status}): ${slapadd.stderr}`);

    const [ldapPort, ldapsPort] = await freePorts();
    const ldapUrl = `ldap://127.0.0.1:${ldapPort}`;
    const ldapsUrl = `ldaps://127.0.0.1:${ldapsPort}`;
    // -d none: stay in the foreground, and print only what slapd always reports (startup errors).
    const command = [SLAPD, '-d', 'none', '-h', `${ldapUrl}/ ${ldapsUrl}/`, '-F', join(dir, 'slapd.d')];
    const withDeathSignal = existsSync(SETPRIV) ? [SETPRIV, '--pdeathsig', 'KILL', ...command] : command;

    const takesTls = () =>
      new Promise<boolean>((resolve) => {
        const socket = tlsConnect({ host: '127.0.0.1', port: ldapsPort, ca: caPem }, () => {
          socket.end();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      });

    const ldapmodify = (args: string[], ldif: string) =>
      new Promise<void>((resolve, reject) => {
        const tool = spawn(LDAPMODIFY, ['-x', '-H', ldapsUrl, '-D', ROOT_DN, '-y', join(dir, 'root.pw'), ...args], {
          env: { ...process.env, LDAPTLS_CACERT: caFile, LDAPTLS_REQCERT: 'demand' },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let said = '';
        tool.stdout!.on('data', (c: Buffer) => (said += c.toString('utf8')));
        tool.stderr!.on('data', (c: Buffer) => (said += c.toString('utf8')));
        tool.on('error', reject);
        tool.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`ldapmodify exited ${code}: ${said.trim()}`))));
        tool.stdin!.end(ldif);
      });

    const start = async () => {
      if (child && child.exitCode === null && child.signalCode === null) return;
      const started = spawn(withDeathSignal[0]!, withDeathSignal.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
      child = started;
      running.add(started);
      started.once('exit', () => running.delete(started));
      const keep = (c: Buffer) => (output = (output + c.toString('utf8')).slice(-20_000));
      started.stdout!.on('data', keep);
      started.stderr!.on('data', keep);
      const deadline = Date.now() + 10_000;
      while (!(await takesTls())) {
        if (started.exitCode !== null || started.signalCode !== null) {
          throw new Error(`slapd exited (${started.exitCode ?? started.signalCode}): ${output}`);
        }
        if (Date.now() > deadline) throw new Error(`slapd did not take TLS connections on ${ldapsPort} within 10 s: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    const offline = spawnSync(SLAPADD, ['-n1', '-F', join(dir, 'slapd.d')], { input: baseLdif(), encoding: 'utf8' });
    if (offline.status !== 0) throw new Error(`slapadd -n1 failed (${offline.status}): ${offline.stderr}`);
    await start();
    await ldapmodify(['-a'], entriesLdif());

    return {
      ldapsUrl,
      ldapUrl,
      caPem,
      caFile,
      baseDn: BASE_DN,
      serviceDn: SERVICE_DN,
      servicePassword: SERVICE_PASSWORD,
      rootDn: ROOT_DN,
      rootPassword,
      async stop() {
        if (child) await stopChild(child);
      },
      start,
      modify: (ldif) => ldapmodify([], ldif),
      log: () => output,
      async close() {
        if (child) await kill(child);
        rmSync(dir, { recursive: true, force: true });
        directories.delete(dir);
      },
    };
  } catch (err) {
    if (child) await kill(child);
    rmSync(dir, { recursive: true, force: true });
    directories.delete(dir);
    throw err;
  }
}

/**
 * A directory sign-in provider's settings for this server, as an administrator would type them
 * for OpenLDAP (user and group searches under `baseDn`, entryUUID as the unique ID), with
 * `groupMapping` and any setting in `overrides` changed.
 */
export function directorySettings(slapd: Slapd, groupMapping: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    url: slapd.ldapsUrl,
    ca_certificate: slapd.caPem,
    user_base: `ou=people,${slapd.baseDn}`,
    user_filter: '(uid={{username}})',
    username_attribute: 'uid',
    email_attribute: 'mail',
    name_attribute: 'cn',
    id_attribute: 'entryUUID',
    group_base: `ou=groups,${slapd.baseDn}`,
    group_filter: '(member={{dn}})',
    group_mapping: groupMapping,
    ...overrides,
  };
}
