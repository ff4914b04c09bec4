// Copy buttons: <button data-copy="#element-id">Copy</button> (an element's text, a readonly input's value,
// or a list's items one a line); data-copied: the word it says once copied, in the page's language (a page
// in English gives none: the word here is English)
document.addEventListener('click', (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const source = document.querySelector(button.getAttribute('data-copy'));
  if (!source) return;
  navigator.clipboard.writeText(copiedText(source)).then(() => {
    const label = button.textContent;
    button.textContent = button.dataset.copied || 'Copied';
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});
function copiedText(source) {
  if (source instanceof HTMLInputElement) return source.value.trim();
  if (source.matches('ul, ol')) return Array.from(source.children, (item) => item.textContent.trim()).join('\n');
  return source.textContent.trim();
}
// Print buttons: <button data-print>Print</button> (the print stylesheet decides what is printed)
document.addEventListener('click', (event) => {
  if (event.target.closest('[data-print]')) window.print();
});
// Confirmation for destructive buttons: <button data-confirm="Delete this?">
document.addEventListener('submit', (event) => {
  const message = event.submitter && event.submitter.getAttribute('data-confirm');
  if (message && !window.confirm(message)) event.preventDefault();
});
// Forms that only carry the person on (the sign-out hand-back): <form data-auto-submit>.
document.addEventListener('DOMContentLoaded', () => {
  for (const form of document.querySelectorAll('form[data-auto-submit]')) form.submit();
});
// A path suggested from the name as the person types (New group): <div data-path-from="name"> around
// the path field. Lower case, runs of anything but letters, digits, "-", "_" and "." become "-",
// at most 64 characters; the server checks the path as always. Once the person edits the path
// themselves it is theirs and the name no longer changes it.
document.addEventListener('DOMContentLoaded', () => {
  for (const holder of document.querySelectorAll('[data-path-from]')) {
    const path = holder.querySelector('input');
    const name = document.getElementById(holder.getAttribute('data-path-from'));
    if (!path || !name) continue;
    let suggested = path.value === '' || path.value === suggestPath(name.value);
    path.addEventListener('input', () => { suggested = path.value === ''; });
    name.addEventListener('input', () => { if (suggested) path.value = suggestPath(name.value); });
  }
});
function suggestPath(name) {
  return name
    .normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9_.]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 64)
    .replace(/[-.]+$/, '');
}
// A creating form (one with a one-time key) is sent once per click: a double click would send two
// copies, and the page of the second would arrive instead of the first's (the server creates once).
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (event.defaultPrevented || !form.querySelector('input[name="_once"]')) return;
  if (form.dataset.sent) event.preventDefault();
  else form.dataset.sent = 'yes';
});
// Back to a form from the browser's cache: it may be sent again (the server recognises its key).
window.addEventListener('pageshow', () => {
  for (const form of document.querySelectorAll('form[data-sent]')) delete form.dataset.sent;
});
// The personal access token form (<form data-lifetime-caps>): under Expiration, the groups whose
// cap on a token's lifetime is shorter than the expiration chosen (each group checkbox carries its
// cap in data-max-lifetime-days). With Only these groups, the checked ones (the server refuses the
// token); with All my groups, every such group (the token will not work there). The note's words come
// from its data-* attributes in the page's language ({{group}}, {{days}}, {{caps}} put in here).
document.addEventListener('DOMContentLoaded', () => {
  for (const form of document.querySelectorAll('form[data-lifetime-caps]')) {
    const note = form.querySelector('[data-lifetime-note]');
    const expiration = form.querySelector('select[name="expiration"]');
    if (!note || !expiration) continue;
    const said = note.dataset;
    const fill = (text, values) => text.replace(/\{\{(\w+)\}\}/g, (found, name) => (name in values ? String(values[name]) : found));
    const update = () => {
      const chosen = expiration.value === 'never' ? Infinity : Number(expiration.value);
      const onlyChecked = Boolean(form.querySelector('input[name="groupAccess"][value="selected"]:checked'));
      const limiting = [...form.querySelectorAll('input[name="groups"][data-max-lifetime-days]')]
        .filter((box) => (!onlyChecked || box.checked) && Number(box.dataset.maxLifetimeDays) < chosen)
        .map((box) => {
          const days = Number(box.dataset.maxLifetimeDays);
          const cap = days === 1 ? said.capOne || '{{group}} limits tokens to 1 day' : said.capOther || '{{group}} limits tokens to {{days}} days';
          return fill(cap, { group: box.dataset.groupName, days });
        });
      const caps = limiting.join(said.separator || ', ');
      note.textContent = !limiting.length ? ''
        : onlyChecked ? fill(said.noteSelected || '{{caps}}. Choose a shorter expiration, or leave those groups out.', { caps })
        : fill(said.noteAll || '{{caps}}. The token will not work in those groups.', { caps });
      note.hidden = !limiting.length;
    };
    form.addEventListener('change', update);
    update();
  }
});
