import { generate } from 'otplib';
import type { Knex } from 'knex';
import { confirmTotp, totpSetup } from '../../src/services/two-factor.js';
import type { TestUser } from './factories.js';
import { withClockAhead } from './oauth.js';

/** What an authenticator app shows for `secret`, `offsetSteps` 30-second steps from now. */
export function codeFor(secret: string, offsetSteps = 0): Promise<string> {
  return generate({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSteps * 30 });
}

/**
 * Runs `fn` with the clock (the server's too: it runs in this process) moved to the middle of a
 * 30-second step, `stepsAhead` steps on, so a code computed in the test is still for the same
 * step when it is checked.
 */
export function atMidStep<T>(fn: () => Promise<T>, stepsAhead = 0): Promise<T> {
  const intoStep = Date.now() % 30_000;
  return withClockAhead(stepsAhead * 30_000 + (intoStep <= 15_000 ? 15_000 - intoStep : 45_000 - intoStep), fn);
}

/** Turns two-factor authentication on for `user` as the set-up page does; returns the app's secret and the recovery codes. */
export async function withTwoFactor(db: Knex, user: TestUser): Promise<{ secret: string; codes: string[] }> {
  const deps = { db, cipher: undefined, issuerName: 'test' };
  const { secret } = await totpSetup(deps, user);
  const codes = await atMidStep(async () => confirmTotp(deps, user, await codeFor(secret), null));
  return { secret, codes };
}
