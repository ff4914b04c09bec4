// Passkeys: a button <button data-passkey="register|sign-in|confirm"> inside a form that has the
// CSRF token, a hidden `response` field (or the field its data-response names) and (in an
// authorization flow) data-uid. The button asks the server for options, lets the browser's
// authenticator answer (SimpleWebAuthnBrowser, from /static/webauthn.js), and posts the answer
// with the form. Options refused with a `location` (confirm your password first) lead there.
//
// A sign-in form marked data-passkey-autofill also offers passkeys in the browser's autofill of
// the username field (autocomplete="username webauthn"; WebAuthn conditional UI) where the
// browser can: a request that waits quietly until the person picks a passkey there. The button
// cancels it before starting its own, so the two never answer one challenge.
(() => {
  const supported = typeof window.PublicKeyCredential === 'function' && typeof window.SimpleWebAuthnBrowser === 'object';
  document.addEventListener('DOMContentLoaded', () => {
    for (const el of document.querySelectorAll('[data-passkey-only]')) el.hidden = !supported;
    offerInAutofill();
  });

  async function optionsFor(form, purpose) {
    const body = new URLSearchParams({ _csrf: form.elements._csrf.value, purpose, uid: form.getAttribute('data-uid') || '' });
    const res = await fetch('/passkeys/options', { method: 'POST', body, credentials: 'same-origin' });
    return { res, options: await res.json() };
  }

  async function offerInAutofill() {
    const form = document.querySelector('form[data-passkey-autofill]');
    if (!form || !supported || !document.querySelector('input[autocomplete~="webauthn"]')) return;
    const conditional = window.PublicKeyCredential.isConditionalMediationAvailable;
    if (typeof conditional !== 'function' || !(await conditional.call(window.PublicKeyCredential))) return;
    try {
      const { res, options } = await optionsFor(form, 'sign-in');
      if (!res.ok) return; // The button still works, and says what is wrong when used.
      const answer = await window.SimpleWebAuthnBrowser.startAuthentication({ optionsJSON: options, useBrowserAutofill: true });
      form.elements.response.value = JSON.stringify(answer);
      form.submit();
    } catch {
      // Cancelled by the button (AbortError) or not offered: nothing to say, the page works as without it.
    }
  }

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
    // The words, in the page's language where the page gives them (data-* of the status line), else English.
    const words = (name, english) => (status && status.dataset[name]) || english;
    if (!supported) return say(words('unsupported', 'This browser cannot use passkeys.'));
    const purpose = button.getAttribute('data-passkey');
    if (purpose === 'register' && !form.elements.name.value.trim()) return say(words('noName', 'Give the passkey a name first.'));
    button.disabled = true;
    // A pending autofill request would answer the challenge asked for below: it ends first.
    window.SimpleWebAuthnBrowser.WebAuthnAbortService.cancelCeremony();
    try {
      const { res, options } = await optionsFor(form, purpose);
      if (!res.ok && options.location) {
        window.location.assign(options.location);
        return;
      }
      if (!res.ok) throw new Error(options.error_description || words('refused', 'The server refused the request.'));
      const browser = window.SimpleWebAuthnBrowser;
      const answer = purpose === 'register'
        ? await browser.startRegistration({ optionsJSON: options })
        : await browser.startAuthentication({ optionsJSON: options });
      form.elements[form.getAttribute('data-response') || 'response'].value = JSON.stringify(answer);
      form.submit();
    } catch (err) {
      say(err && err.name === 'NotAllowedError'
        ? words('cancelled', 'The passkey was not used (cancelled or timed out).')
        : words('failed', 'The passkey did not work: {{message}}').replace('{{message}}', () => (err && err.message) || ''));
      button.disabled = false;
    }
  });
})();
