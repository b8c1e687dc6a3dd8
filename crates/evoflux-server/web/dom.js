// Small DOM helpers: every element is built with `h`, so text is always
// set as text (never parsed as HTML) unless a caller passes a node made by
// the Markdown renderer, which escapes what it is given.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, '');
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function toast(message, kind = 'info') {
  const box = document.getElementById('toast');
  const item = h('div', { class: `toast ${kind}` }, message);
  box.append(item);
  setTimeout(() => item.remove(), 6000);
}

// A labelled field: `<label>Text <input></label>` with a stable id.
let fieldSeq = 0;
export function field(label, control, hint) {
  const id = control.id || `f${++fieldSeq}`;
  control.id = id;
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    control,
    hint ? h('p', { class: 'hint' }, hint) : '');
}

// A modal dialog with a title, a body and buttons; resolves with the
// value of the button pressed (or null on Escape).
export function dialog(title, body, buttons) {
  return new Promise((resolve) => {
    const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': 'dlg-title' },
      h('h2', { id: 'dlg-title' }, title),
      body,
      h('div', { class: 'actions' }, buttons.map((b) =>
        h('button', {
          type: 'button',
          class: b.primary ? 'primary' : '',
          dataset: { value: b.value },
          onclick: () => { dlg.close(); dlg.remove(); resolve(b.value); },
        }, b.label))));
    dlg.addEventListener('cancel', () => { dlg.remove(); resolve(null); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

export function errorText(e) {
  if (e && e.code) return `${e.message} (${e.code})`;
  return String(e && e.message ? e.message : e);
}
