// The read-only document viewer: a session's workspace files, and one
// DOCX, XLSX, PPTX or PDF rendered by the host. What it shows never goes
// to the agent: these routes are the host's, not a tool's.

import { get, query } from './api.js';
import { h, clear } from './dom.js';

const KIND_LABEL = { docx: 'Word document', xlsx: 'Spreadsheet', pptx: 'Presentation', pdf: 'PDF' };
const DOCUMENT = /\.(docx|docm|xlsx|xlsm|pptx|pptm|pdf)$/i;

// `#/files/<session>/<root>/<dir…>` and `#/viewer/<session>/<root>/<path…>`.
export function filesHref(session, root, dir) {
  return `#/files/${session}/${root}/${dir.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
}

export function viewerHref(session, root, path) {
  return `#/viewer/${session}/${root}/${path.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
}

function tail(rest) {
  return rest.slice(2).map(decodeURIComponent).join('/');
}

// Whether a tool argument names a document the viewer opens, and the link
// to it: relative paths are under the first root, absolute ones under
// whichever root holds them.
export function documentLink(session, path) {
  if (typeof path !== 'string' || !DOCUMENT.test(path)) return null;
  const roots = session.workspace
    ? (session.workspace.repositories || (session.workspace.folder ? [session.workspace.folder] : []))
    : [];
  if (!path.startsWith('/')) return viewerHref(session.id, 0, path);
  for (const [i, root] of roots.entries()) {
    const prefix = root.endsWith('/') ? root : `${root}/`;
    if (path.startsWith(prefix)) return viewerHref(session.id, i, path.slice(prefix.length));
  }
  return null;
}

function size(bytes) {
  if (bytes === undefined || bytes === null) return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export async function filesView(app, rest) {
  const [session, rootText] = rest;
  const root = Number(rootText || 0);
  const dir = tail(rest);
  const listing = await get(`/api/viewer/files${query({ session, root, dir })}`);
  const crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Folder' });
  const parts = dir.split('/').filter(Boolean);
  crumbs.append(h('a', { href: filesHref(session, root, '') }, listing.roots[root] || 'workspace'));
  parts.forEach((p, i) => {
    crumbs.append(' / ', h('a', { href: filesHref(session, root, parts.slice(0, i + 1).join('/')) }, p));
  });
  const rows = listing.entries.map((e) => {
    let name;
    if (e.is_dir) name = h('a', { href: filesHref(session, root, e.path) }, `${e.name}/`);
    else if (e.document) name = h('a', { href: viewerHref(session, root, e.path), class: 'doc-link' }, e.name);
    else name = h('span', { class: 'muted' }, e.name);
    return h('tr', {},
      h('td', {}, name),
      h('td', {}, e.is_dir ? 'Folder' : (KIND_LABEL[e.document] || '')),
      h('td', { class: 'n' }, size(e.bytes)));
  });
  const roots = listing.roots.length > 1
    ? h('p', {}, 'Workspace: ', listing.roots.map((r, i) => [i ? ' · ' : '',
      i === root ? h('strong', {}, r) : h('a', { href: filesHref(session, i, '') }, r)]))
    : '';
  app.main.append(
    h('div', { class: 'row' }, h('h1', {}, 'Files'), h('a', { href: `#/chat/${session}` }, 'Back to the chat')),
    h('p', { class: 'hint' }, 'Documents open in the read-only viewer. Opening one shows it to you only; the agent does not see it.'),
    roots, crumbs,
    rows.length
      ? h('table', { class: 'files' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Kind'), h('th', { class: 'n' }, 'Size'))),
        h('tbody', {}, rows))
      : h('p', { class: 'muted' }, 'This folder is empty.'),
    listing.truncated ? h('p', { class: 'muted' }, 'More files than a listing shows.') : '');
}

// What the host's renderer produces, and nothing else, is kept: these
// elements, these attributes, and pictures only from `data:` addresses.
const ELEMENTS = new Set(['P', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'UL', 'OL', 'LI', 'STRONG', 'EM', 'U', 'S',
  'BR', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'IMG', 'SPAN', 'DIV']);
const ATTRIBUTES = new Set(['class', 'colspan', 'title', 'width', 'alt', 'src', 'data-box', 'data-ratio']);

function clean(html) {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html');
  const walk = (node) => {
    for (const child of [...node.children]) {
      if (!ELEMENTS.has(child.tagName)) { child.remove(); continue; }
      for (const a of [...child.attributes]) {
        if (!ATTRIBUTES.has(a.name)) child.removeAttribute(a.name);
      }
      if (child.tagName === 'IMG' && !(child.getAttribute('src') || '').startsWith('data:image/')) child.remove();
      else walk(child);
    }
  };
  walk(doc.body);
  const out = document.createDocumentFragment();
  out.append(...doc.body.childNodes);
  // Positions come as data and are applied through the CSSOM, which the
  // page's policy allows (inline style attributes it does not).
  for (const slide of out.querySelectorAll('[data-ratio]')) {
    const [w, hgt] = slide.dataset.ratio.split(' ').map(Number);
    if (w > 0 && hgt > 0) slide.style.aspectRatio = `${w} / ${hgt}`;
  }
  for (const box of out.querySelectorAll('[data-box]')) {
    const [l, t, w, hgt] = box.dataset.box.split(' ').map(Number);
    if ([l, t, w, hgt].every(Number.isFinite)) {
      Object.assign(box.style, { left: `${l}%`, top: `${t}%`, width: `${w}%`, height: `${hgt}%` });
    }
  }
  return out;
}

export async function viewerView(app, rest) {
  const [session, rootText] = rest;
  const root = Number(rootText || 0);
  const path = tail(rest);
  const pages = new URLSearchParams(location.hash.split('?')[1] || '').get('pages') || undefined;
  const name = path.split('/').pop();
  const folder = path.split('/').slice(0, -1).join('/');
  app.main.append(
    h('div', { class: 'row' }, h('h1', {}, name),
      h('a', { href: filesHref(session, root, folder) }, 'Back to the files')),
    h('p', { class: 'muted', role: 'status', id: 'rendering' }, 'Rendering…'));
  let doc;
  try {
    doc = await get(`/api/viewer/document${query({ session, root, path, pages })}`);
  } finally {
    // An error takes the place of the progress line, never below it.
    const progress = document.getElementById('rendering');
    if (progress) progress.remove();
  }
  clear(app.main);
  const body = h('div', { class: `document ${doc.kind}`, id: 'document' });
  const head = h('div', { class: 'row' },
    h('h1', {}, doc.name),
    h('span', { class: 'badge' }, KIND_LABEL[doc.kind] || doc.kind),
    h('span', { class: 'muted' }, size(doc.bytes)),
    h('span', { class: 'spacer' }),
    h('a', { href: filesHref(session, root, folder) }, 'Back to the files'));
  const notices = doc.notices.length
    ? h('ul', { class: 'notices', 'aria-label': 'Notices' },
      doc.notices.map((n) => h('li', { dataset: { code: n.code } }, n.message)))
    : '';
  app.main.append(head,
    h('p', { class: 'hint' }, 'Read-only. The agent does not see what you open here.'),
    notices);
  if (doc.kind === 'xlsx' && doc.parts.length > 1) {
    const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Sheets' });
    const show = (i) => {
      for (const [j, b] of [...tabs.children].entries()) b.setAttribute('aria-selected', String(i === j));
      clear(body).append(clean(doc.parts[i].html));
    };
    doc.parts.forEach((p, i) => tabs.append(h('button', {
      type: 'button', role: 'tab', onclick: () => show(i),
    }, p.label)));
    app.main.append(tabs, body);
    show(0);
    return;
  }
  for (const part of doc.parts) {
    const section = h('section', { class: 'part', 'aria-label': part.label });
    if (doc.parts.length > 1) section.append(h('h2', { class: 'part-label' }, part.label));
    section.append(clean(part.html));
    body.append(section);
  }
  app.main.append(body);
  if (doc.pages) {
    const { first, last, total } = doc.pages;
    const span = last - first + 1;
    const go = (a, b) => {
      location.hash = `${viewerHref(session, root, path)}?pages=${a}-${b}`;
    };
    const nav = h('div', { class: 'row pager' },
      h('button', { type: 'button', disabled: first <= 1, onclick: () => go(Math.max(1, first - span), first - 1) }, 'Previous pages'),
      h('span', { class: 'muted' }, `Pages ${first}–${last} of ${total}`),
      h('button', { type: 'button', disabled: last >= total, onclick: () => go(last + 1, Math.min(total, last + span)) }, 'Next pages'));
    app.main.append(nav);
  }
}
