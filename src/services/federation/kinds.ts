import { openIdConnect } from './oidc.js';
import { presetKinds } from './presets/index.js';
import type { UpstreamKind } from './upstream.js';

/** Every kind of upstream provider this service can sign in with, by its stored name. */
export const upstreamKinds: Record<string, UpstreamKind> = {
  oidc: openIdConnect,
  ...presetKinds,
};

export function kindOf(kind: string): UpstreamKind | undefined {
  return Object.hasOwn(upstreamKinds, kind) ? upstreamKinds[kind] : undefined;
}
