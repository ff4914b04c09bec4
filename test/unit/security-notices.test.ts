import { expect } from 'chai';
import { renderMail } from '../../src/services/mail.js';
import { securityNotice } from '../../src/services/security-notices.js';

describe('security notices', () => {
  const user = { id: 7, username: 'ada', email: 'ada@example.test' };
  const firefox = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0';

  it('says what happened, when, from which browser and address, and what to do if it was not the owner', () => {
    const notice = securityNotice('https://id.example.test', user, 'passkey-added', { ip: '2001:db8::7', userAgent: firefox }, { detail: 'Work laptop', at: new Date('2026-11-27T10:15:00Z') });
    const { text, html } = renderMail(notice);
    expect(notice.to).to.equal('ada@example.test');
    expect(notice.subject).to.equal('A passkey was added');
    expect(text).to.contain('A passkey named "Work laptop" was added to your account');
    expect(text).to.contain('Fri, 27 Nov 2026 10:15:00 UTC');
    expect(text).to.contain('Firefox on Windows');
    expect(text).to.contain('2001:db8::7');
    expect(text).to.contain('https://id.example.test/forgot-password');
    expect(text).to.contain('https://id.example.test/account/settings/sessions');
    expect(text).to.contain('https://id.example.test/account/settings/passkeys');
    expect(html).to.contain('Work laptop').and.to.contain('Firefox on Windows');
  });

  it('escapes what a person chose (a passkey or token name) in the HTML body', () => {
    const notice = securityNotice('https://id.example.test', user, 'personal-token-created', { ip: null, userAgent: '' }, { detail: '<img src=x onerror=alert(1)>' });
    const { text, html } = renderMail(notice);
    expect(html).not.to.contain('<img src=x');
    expect(html).to.contain('&lt;img src=x');
    expect(text).to.contain('Unknown browser').and.to.contain('an unknown address');
  });
});
