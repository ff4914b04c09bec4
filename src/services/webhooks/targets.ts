import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where webhooks may be sent. A webhook's URL is chosen by a group owner, and the service POSTs
 * to it from inside the operator's network: without a check, an owner could make the service
 * reach its database, a cloud metadata endpoint or an admin port (SSRF). Only public unicast
 * addresses are allowed, unless the operator says private ones are fine (WEBHOOKS_ALLOW_PRIVATE).
 * The check runs when the URL is saved and again on every connection, on the addresses the name
 * resolves to then, so a name that later resolves elsewhere (DNS rebinding) is refused too.
 */
export class RefusedTarget extends Error {}

/** Whether an IP address (v4, v6, or v4 mapped in v6) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range() === 'unicast';
}

function refuseAddress(address: string): never {
  throw new RefusedTarget(`${address} is a private, loopback or reserved address; webhooks go to public addresses only (set WEBHOOKS_ALLOW_PRIVATE=true to allow them)`);
}

/** The problem with `value` as a webhook URL, in words, or undefined when it can be one (before any lookup). */
export function urlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http:// or https:// URL';
  if (url.username || url.password) return 'must not carry a user name or password (the secret signs each delivery)';
  if (url.hash) return 'must not have a fragment (#…)';
  if (!url.hostname) return 'must name a host';
  return undefined;
}

/** Refuses a URL whose host is, or resolves to, an address that is not public (unless `allowPrivate`). */
export async function checkTarget(value: string, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = hostOf(value);
  if (isIP(host)) {
    if (!isPublicAddress(host)) refuseAddress(host);
    return;
  }
  const addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
    dnsLookup(host, { all: true }, (err, found) => (err ? reject(new RefusedTarget(`${host} does not resolve (${err.code ?? err.message})`)) : resolve(found))),
  );
  const refused = addresses.find((a) => !isPublicAddress(a.address));
  if (refused) refuseAddress(refused.address);
}

/** The URL's host as a connection names it (an IPv6 literal without its brackets). */
export function hostOf(value: string): string {
  return new URL(value).hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * A `lookup` for http.request that refuses, at connection time, a name resolving to an address
 * that is not public: what the connection uses is what was checked.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      const refused = allowPrivate ? undefined : list.find((a) => !isPublicAddress(a.address));
      if (refused) return callback(Object.assign(new RefusedTarget(`${hostname} resolves to ${refused.address}, which is not a public address`), { code: 'ETARGETREFUSED' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
