// The page as the model reads it: its visible text and a numbered list of
// the elements it can act on. Each listed element is tagged with its
// number (`data-evoflux-ref`), which `click`, `type` and `select` find it
// by until the next read numbers the page again.
(({maxText, maxElements}) => {
  const selector = 'a[href], button, input, select, textarea, summary, [role=button], ' +
    '[role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], ' +
    '[role=option], [role=switch], [role=textbox], [role=combobox], [contenteditable=""], ' +
    '[contenteditable=true], [onclick]';
  for (const old of document.querySelectorAll('[data-evoflux-ref]')) {
    old.removeAttribute('data-evoflux-ref');
  }
  const visible = (el) => {
    if (el.type === 'hidden') return false;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return false;
    const s = getComputedStyle(el);
    return s.visibility !== 'hidden' && s.display !== 'none';
  };
  const role = (el) => {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit;
    const tag = el.tagName.toLowerCase();
    switch (tag) {
      case 'a': return 'link';
      case 'button': case 'summary': return 'button';
      case 'select': return 'combobox';
      case 'textarea': return 'textbox';
      case 'input': {
        const t = (el.type || 'text').toLowerCase();
        if (['button', 'submit', 'reset', 'image'].includes(t)) return 'button';
        if (t === 'checkbox' || t === 'radio') return t;
        if (t === 'range') return 'slider';
        return 'textbox';
      }
      default: return el.isContentEditable ? 'textbox' : 'button';
    }
  };
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim().slice(0, 120);
  const name = (el) => {
    const label = el.getAttribute('aria-label');
    if (label) return clean(label);
    if (el.labels && el.labels.length) return clean(el.labels[0].innerText);
    if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) {
      return clean(el.value);
    }
    const text = clean(el.innerText);
    if (text) return text;
    return clean(el.getAttribute('placeholder') || el.getAttribute('title') ||
      el.getAttribute('alt') || el.getAttribute('name') || '');
  };
  const elements = [];
  let more = 0;
  for (const el of document.querySelectorAll(selector)) {
    if (!visible(el)) continue;
    if (elements.length >= maxElements) { more++; continue; }
    const n = elements.length + 1;
    el.setAttribute('data-evoflux-ref', String(n));
    const entry = {n, role: role(el), name: name(el)};
    if (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') {
      if (el.type === 'checkbox' || el.type === 'radio') entry.checked = el.checked;
      else if (el.type !== 'password' && entry.role === 'textbox') entry.value = clean(el.value);
    }
    if (el.tagName === 'SELECT') {
      entry.value = clean(el.value);
      entry.options = Array.from(el.options).slice(0, 30).map((o) => clean(o.label || o.value));
    }
    if (el.disabled) entry.disabled = true;
    elements.push(entry);
  }
  const body = document.body ? document.body.innerText : '';
  return {
    url: location.href,
    title: document.title,
    text: body.slice(0, maxText),
    textChars: body.length,
    elements,
    moreElements: more,
  };
})
