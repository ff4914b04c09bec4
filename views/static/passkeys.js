// Passkeys: a button <button data-passkey="register|sign-in|confirm"> inside a form that has the
// CSRF token, a hidden `response` field (or the field its data-response names) and (in an
// authorization flow) data-uid. The button asks the server for options, lets the browser's
// authenticator answer (SimpleWebAuthnBrowser, from /static/webauthn.js), and posts the answer
// with the form. Options refused with a `location` (confirm your password first) lead there.
(() => {
  const supported = typeof window.PublicKeyCredential === 'function' && typeof window.SimpleWebAuthnBrowser === 'object';
  document.addEventListener('DOMContentLoaded', () => {
    for (const el of document.querySelectorAll('[data-passkey-only]')) el.hidden = !supported;
  });
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('[data-passkey]');
    if (!button) return;
    event.preventDefault();
    const form = button.closest('form');
    const status = form.querySelector('[data-passkey-status]');
    // What goes wrong is said under the button, and an earlier notice ("Passkey added") no longer shows beside it.
    const say = (text) => {
      for (const notice of document.querySelectorAll('.notice')) notice.hidden = true;
      if (status) status.textContent = text;
    };
    if (!supported) return say('This browser cannot use passkeys.');
    const purpose = button.getAttribute('data-passkey');
    if (purpose === 'register' && !form.elements.name.value.trim()) return say('Give the passkey a name first.');
    button.disabled = true;
    try {
      const body = new URLSearchParams({ _csrf: form.elements._csrf.value, purpose, uid: form.getAttribute('data-uid') || '' });
      const res = await fetch('/passkeys/options', { method: 'POST', body, credentials: 'same-origin' });
      const options = await res.json();
      if (!res.ok && options.location) {
        window.location.assign(options.location);
        return;
      }
      if (!res.ok) throw new Error(options.error_description || 'The server refused the request.');
      const browser = window.SimpleWebAuthnBrowser;
      const answer = purpose === 'register'
        ? await browser.startRegistration({ optionsJSON: options })
        : await browser.startAuthentication({ optionsJSON: options });
      form.elements[form.getAttribute('data-response') || 'response'].value = JSON.stringify(answer);
      form.submit();
    } catch (err) {
      say(err && err.name === 'NotAllowedError' ? 'The passkey was not used (cancelled or timed out).' : `The passkey did not work: ${err.message}`);
      button.disabled = false;
    }
  });
})();
