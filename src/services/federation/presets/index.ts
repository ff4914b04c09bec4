import type { UpstreamKind } from '../upstream.js';
import { github } from './github.js';

/** The kinds with a known upstream: its endpoints and how it names the person are built in. */
export const presetKinds: Record<string, UpstreamKind> = {
  github,
};
