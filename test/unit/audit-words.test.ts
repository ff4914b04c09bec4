import { expect } from 'chai';
import { AUDIT_ACTIONS } from '../../src/db/audit.js';
import { LANGUAGES, RESOURCES } from '../../src/i18n.js';
import { actionName, auditDetails } from '../../src/presenters/audit.js';
import { LABELS } from '../../src/web/form-errors.js';
import { ROLES, VISIBILITY_LEVELS } from '../../src/vocabulary.js';

describe('the words of the audit logs and of the group pages, in every language', () => {
  it('gives every audit action a phrase of its own in every language', () => {
    for (const lng of LANGUAGES) {
      const words = RESOURCES[lng].audit as Record<string, unknown>;
      for (const action of AUDIT_ACTIONS) expect(words[action], `${lng}/audit.json: ${action}`).to.be.a('string').and.not.equal('');
    }
  });

  it('says an action and its details in the language asked for, English by default', () => {
    expect(actionName('member.add')).to.equal('Member added');
    expect(actionName('member.add', 'de')).to.equal('Mitglied hinzugefügt');
    expect(actionName('member.add', 'ja')).to.equal('メンバーを追加');
    expect(auditDetails({ from: 'member', to: 'owner' }, undefined, 'de')).to.deep.equal(['Rolle: member → owner']);
    expect(auditDetails({ changes: {} }, undefined, 'ja')).to.deep.equal(['変更なし']);
    expect(auditDetails({ authorizationsEnded: 1 })).to.deep.equal(["every user's authorization ended, so each consents again (1 user)"]);
    expect(auditDetails({ authorizationsEnded: 3 })).to.deep.equal(["every user's authorization ended, so each consents again (3 users)"]);
  });

  it('labels the group forms in English with the words their errors start with (LABELS)', () => {
    const { labels } = RESOURCES.en.groups as { labels: Record<string, Record<string, string>> };
    expect(labels.group).to.deep.equal(LABELS.group);
    expect(labels.member).to.deep.equal(LABELS.member);
    expect((RESOURCES.en.audit as Record<string, unknown>)._appFields).to.deep.equal(LABELS.app);
  });

  it('explains every role and names every visibility level in every language', () => {
    for (const lng of LANGUAGES) {
      const groups = RESOURCES[lng].groups as { roles: Record<string, Record<string, string>>; visibility: Record<string, Record<string, string>> };
      for (const role of ROLES) expect(Object.keys(groups.roles[role]!).sort(), `${lng} ${role}`).to.deep.equal(['badge', 'explanation', 'label']);
      for (const level of VISIBILITY_LEVELS) expect(Object.keys(groups.visibility[level]!).sort(), `${lng} ${level}`).to.deep.equal(['explanation', 'label']);
    }
  });
});
