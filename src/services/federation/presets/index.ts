import type { UpstreamKind } from '../upstream.js';
import { github } from './github.js';
import { gitlab } from './gitlab.js';
import { google } from './google.js';
import { microsoft } from './microsoft.js';

/** The kinds with a known upstream: its endpoints and how it names the person are built in. */
export const presetKinds: Record<string, UpstreamKind> = {
  github,
  gitlab,
  google,
  microsoft,
};
