import { interactionPolicy, type KoaContextWithOIDC } from 'oidc-provider';

const { Check } = interactionPolicy;

/**
 * Adds one more reason to the login prompt to ask for a sign-in: the session is signed in as an
 * account findAccount no longer finds (deleted, or disabled by an administrator). Without it the
 * flow would go on with no account and fail; with it, the person meets the sign-in page, and a
 * `prompt=none` request gets `login_required`.
 */
export function withAccountCheck(policy: interactionPolicy.Prompt[]): interactionPolicy.Prompt[] {
  policy.find((prompt) => prompt.name === 'login')!.checks.add(
    new Check('account_unavailable', 'the signed-in account is no longer available', 'login_required', (ctx: KoaContextWithOIDC) =>
      Boolean(ctx.oidc.session?.accountId) && !ctx.oidc.account ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT),
  );
  return policy;
}
