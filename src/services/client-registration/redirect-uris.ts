/**
 * The redirect URIs a self-registered client may have, as a native or web app would (RFC 8252):
 * https anywhere; http only on a loopback address (127.0.0.1 or [::1], any port: a program on
 * the person's machine); or a private-use scheme in reverse domain order (com.example.app:/cb).
 * `localhost` is refused, as for applications registered by a person (another program could
 * answer for the name). No fragment, as RFC 6749 says.
 */
export function redirectUriProblem(value: string): string | undefined {
  if (value.length > 2000) return 'is longer than 2000 characters';
  const url = URL.parse(value);
  if (!url) return 'is not an absolute URI';
  if (url.hash || value.includes('#')) return 'has a fragment';
  if (url.protocol === 'https:') return url.hostname ? undefined : 'has no host';
  if (url.protocol === 'http:') return ['127.0.0.1', '[::1]'].includes(url.hostname) ? undefined : 'is http:// on a host other than 127.0.0.1 or [::1]';
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/i.test(url.protocol)) return undefined;
  return 'must be https://, http:// on 127.0.0.1 or [::1], or a private-use scheme such as com.example.app:';
}
