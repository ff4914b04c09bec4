/**
 * An e-mail address with most of it hidden, for output that may be seen by others (a terminal,
 * a shared log): the first character of the mailbox and of the domain, and the top-level domain;
 * not even the lengths of the rest. `alice@example.com` → `a***@e***.com`.
 */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '***';
  const mailbox = address.slice(0, at);
  const domain = address.slice(at + 1);
  const dot = domain.lastIndexOf('.');
  const host = dot > 0 ? domain.slice(0, dot) : domain;
  const top = dot > 0 ? domain.slice(dot) : '';
  const hide = (part: string) => `${part.slice(0, 1)}***`;
  return `${hide(mailbox)}@${hide(host)}${top}`;
}
