import { openIdConnect } from './oidc.js';
import type { UpstreamKind } from './upstream.js';

/** Every kind of upstream provider this service can sign in with, by its stored name. */
export const upstreamKinds: Record<string, UpstreamKind> = {
  oidc: openIdConnect,
};

export function kindOf(kind: string): UpstreamKind | undefined {
  return Object.hasOwn(upstreamKinds, kind) ? upstreamKinds[kind] : undefined;
}
