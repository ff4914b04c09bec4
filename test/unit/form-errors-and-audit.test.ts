import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { AUDIT_ACTIONS } from '../../src/db/audit.js';
import { ConflictError, RetryLaterError, ValidationError } from '../../src/errors.js';
import { actionName, auditDetails } from '../../src/presenters/audit.js';
import { newApplication, parse } from '../../src/services/rules.js';
import { formErrors, LABELS } from '../../src/web/form-errors.js';
import { isWebhookEvent } from '../../src/vocabulary.js';

function validationErrorOf(run: () => unknown): ValidationError {
  try {
    run();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a ValidationError');
}

describe('every bad field at once', () => {
  const bad = { name: ' ', homepageURL: 'ftp://x', description: '', callbackURL: 'https://ok.example.test/cb', signOutRedirectURLs: ['https://a.example.test', '/b'] };

  it('names each bad field once, by the API’s names, in the message', () => {
    const err = validationErrorOf(() => parse(newApplication, bad));
    expect(err.message).to.equal('name is required; homepageURL must be an absolute http(s) URL; signOutRedirectURLs[1] must be an absolute URL');
    expect(err.problems.map((p) => p.field)).to.deep.equal(['name', 'homepageURL', 'signOutRedirectURLs']);
  });

  it('words each for a page with the form’s labels, a list item by its line', () => {
    const err = validationErrorOf(() => parse(newApplication, bad));
    expect(formErrors(err, LABELS.app)).to.deep.equal({
      name: 'Application name is required',
      homepageURL: 'Homepage URL must be an absolute http(s) URL',
      signOutRedirectURLs: 'Sign-out redirect URLs, line 2, must be an absolute URL',
    });
  });

  it('words a conflict with the label, a sentence of its own as a sentence, and leaves other errors to the error page', () => {
    expect(formErrors(new ConflictError('path', 'path "x" is already taken'), LABELS.group)).to.deep.equal({ path: 'Path "x" is already taken' });
    expect(formErrors(new ValidationError('user', 'no user "x"'), LABELS.member)).to.deep.equal({ user: 'No user "x"' });
    expect(formErrors(new RetryLaterError(429, 'rate_limited', 'Too many', 3), LABELS.signup)).to.equal(undefined);
    expect(formErrors(new Error('boom'), LABELS.signup)).to.equal(undefined);
  });

  it('puts a service’s field on the form’s own field', () => {
    const err = new ValidationError('expiresInDays', 'expiresInDays must be from 1 to 365');
    expect(formErrors(err, LABELS.token, { expiresInDays: 'expiration' })).to.deep.equal({ expiration: 'Expiration must be from 1 to 365' });
  });
});

describe('the audit log in words', () => {
  it('names actions in words, whole, and reads an unknown code as words too', () => {
    expect(actionName('app.secret.revoke')).to.equal('Client secret revoked');
    expect(actionName('group.update')).to.equal('Group settings changed');
    expect(actionName('app.tokens.revoke_all')).to.equal('App tokens revoke all');
  });

  it('shows an edit as field: before → after, only what changed, by label', () => {
    const labels: Record<string, string> = LABELS.app;
    const details = { changes: { homepageURL: { from: 'https://a.example', to: 'https://b.example' }, signOutRedirectURLs: { from: [], to: ['https://c.example'] } } };
    expect(auditDetails(details, (f) => labels[f] ?? f)).to.deep.equal([
      'Homepage URL: https://a.example → https://b.example',
      'Sign-out redirect URLs: (none) → https://c.example',
    ]);
    expect(auditDetails({ changes: {} })).to.deep.equal(['nothing changed']);
  });

  it('names a secret by its last four characters, and still reads older rows', () => {
    expect(auditDetails({ lastFour: 'a1b2' })).to.deep.equal(['secret …a1b2']);
    expect(auditDetails({ secretId: 4 })).to.deep.equal(['secret #4']);
    expect(auditDetails({ from: 'member', to: 'owner' })).to.deep.equal(['role: member → owner']);
    expect(auditDetails({ name: 'Old', description: '' })).to.deep.equal(['name: Old', 'description: (empty)']);
  });
});

describe('audit actions in words', () => {
  /** Every audit action code written anywhere in the source: a quoted "subject.verb" string. */
  function actionCodesInSource(): Set<string> {
    const codes = new Set<string>();
    const src = join(import.meta.dirname, '../../src');
    for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
      for (const m of readFileSync(join(src, file), 'utf8').matchAll(/'((?:group|member|app|token|user|sign-in_provider|webhook)\.[a-z_.-]+)'/g)) codes.add(m[1]!);
    }
    return codes;
  }

  it('lists every action the code can write', () => {
    // Webhook events (`member.added`) share the prefixes of audit actions without being ones.
    const found = [...actionCodesInSource()].filter((code) => !isWebhookEvent(code));
    expect(found.length).to.be.greaterThan(20);
    expect(found.filter((code) => !(AUDIT_ACTIONS as readonly string[]).includes(code))).to.deep.equal([]);
  });

  it('gives every listed action a phrase, not its code reworded', () => {
    for (const code of AUDIT_ACTIONS) {
      const mechanical = code.replace(/[._]+/g, ' ').replace(/^./, (c) => c.toUpperCase());
      expect(actionName(code), code).not.to.equal(mechanical);
      expect(actionName(code), code).to.match(/^[A-Z][^._]*$/);
    }
  });
});
