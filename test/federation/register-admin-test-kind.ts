import { upstreamKinds } from '../../src/services/federation/kinds.js';
import { TEST_KIND } from './admin-test-kind.js';

// Loaded with `node --import` before the CLI by test/federation/provider-cli.test.ts, so that the
// real CLI process knows the managing tests' kind whatever kinds the build registers.
upstreamKinds[TEST_KIND.kind] = TEST_KIND;
