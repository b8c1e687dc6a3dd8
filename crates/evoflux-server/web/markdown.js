// A GitHub-flavoured Markdown renderer for model output that builds DOM
// nodes and never parses HTML: fenced code (with a copy button), headings,
// thematic breaks, tables, nested and task lists, block quotes and
// paragraphs; inline code, emphasis, strikethrough, links and autolinks
// (http, https and mailto only; anything else stays literal text). Raw HTML
// in the source is shown as text. The page's CSP forbids inline script, and
// nothing here ever assigns markup, so model text cannot become code.
//
// A finished code block whose fence names a language is highlighted when it
// scrolls into view: the server answers its tokens as ranges and classes
// (`POST /api/highlight`), never markup, and the spans are built here with
// text nodes. Any failure leaves the block as the plain text it was.

import { api } from './api.js';
import { h } from './dom.js';

const SAFE_LINK = /^(https?:|mailto:)/i;

// Copies `text`, saying so on `button` (the clipboard API, or a hidden
// textarea where the page has no clipboard permission).
export async function copyText(text, button) {
  let done = false;
  try {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      await navigator.clipboard.writeText(text);
      done = true;
    }
  } catch { done = false; }
  if (!done) {
    const area = h('textarea', { 'aria-hidden': 'true', tabindex: '-1', class: 'offscreen' }, text);
    document.body.append(area);
    area.select();
    try { done = document.execCommand('copy'); } catch { done = false; }
    area.remove();
  }
  if (button) {
    // The visible word changes; the rest of the name stays for screen
    // readers.
    const word = button.firstChild;
    word.textContent = done ? 'Copied' : 'Copy failed';
    setTimeout(() => { word.textContent = 'Copy'; }, 1500);
  }
  return done;
}

// A small "Copy" button for `text` (a function, so it copies what is
// there when pressed); `what` completes its name ("Copy code").
export function copyButton(what, text) {
  const b = h('button', { type: 'button', class: 'copy' }, 'Copy', h('span', { class: 'sr-only' }, ` ${what}`));
  b.addEventListener('click', () => copyText(text(), b));
  return b;
}

function link(href, children) {
  return h('a', { href, rel: 'noopener noreferrer', target: '_blank' }, children);
}

// Inline spans. Code spans first, so their contents are never formatted;
// a backslash escapes punctuation.
const INLINE = new RegExp([
  /(`+)([\s\S]*?[^`])\1(?!`)/.source, // 1, 2: code
  /\\([!-/:-@[-`{-~])/.source, // 3: escape
  /!\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/.source, // 4, 5: image (shown as a link)
  /\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/.source, // 6, 7: link
  /<((?:https?:\/\/|mailto:)[^\s<>]+)>/.source, // 8: autolink
  /((?:https?:\/\/|www\.)[^\s<]*[^\s<.,:;"')\]!?*_~])/.source, // 9: bare URL
  /\*\*(?=\S)([\s\S]*?\S)\*\*/.source, // 10: strong
  /__(?=\S)([\s\S]*?\S)__(?![A-Za-z0-9])/.source, // 11: strong
  /~~(?=\S)([\s\S]*?\S)~~/.source, // 12: strikethrough
  /\*(?=[^\s*])([\s\S]*?[^\s*])\*/.source, // 13: emphasis
  /(?<![A-Za-z0-9])_(?=[^\s_])([\s\S]*?[^\s_])_(?![A-Za-z0-9])/.source, // 14: emphasis
].join('|'), 'g');

export function inline(text) {
  const out = [];
  const pattern = new RegExp(INLINE.source, 'g');
  let last = 0;
  let m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[2] !== undefined) out.push(h('code', {}, m[2].replace(/^ (.*) $/s, '$1')));
    else if (m[3] !== undefined) out.push(m[3]);
    else if (m[5] !== undefined) out.push(SAFE_LINK.test(m[5]) ? link(m[5], m[4] || m[5]) : m[0]);
    else if (m[7] !== undefined) out.push(SAFE_LINK.test(m[7]) ? link(m[7], inline(m[6])) : m[0]);
    else if (m[8] !== undefined) out.push(link(m[8], m[8].replace(/^mailto:/i, '')));
    else if (m[9] !== undefined) out.push(link(m[9].startsWith('www.') ? `https://${m[9]}` : m[9], m[9]));
    else if (m[10] !== undefined) out.push(h('strong', {}, inline(m[10])));
    else if (m[11] !== undefined) out.push(h('strong', {}, inline(m[11])));
    else if (m[12] !== undefined) out.push(h('del', {}, inline(m[12])));
    else if (m[13] !== undefined) out.push(h('em', {}, inline(m[13])));
    else if (m[14] !== undefined) out.push(h('em', {}, inline(m[14])));
    last = pattern.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// ---- tables --------------------------------------------------------------

function cells(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const out = [];
  let cur = '';
  let code = false;
  for (let i = 0; i < s.length; i += 1) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '|') { cur += '|'; i += 1; continue; }
    if (c === '`') code = !code;
    if (c === '|' && !code) { out.push(cur.trim()); cur = ''; continue; }
    cur += c;
  }
  out.push(cur.trim());
  return out;
}

const DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function isTableStart(lines, i) {
  return i + 1 < lines.length && lines[i].includes('|') && DELIMITER.test(lines[i + 1])
    && cells(lines[i]).length === cells(lines[i + 1]).length;
}

function table(lines, i) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((d) => {
    const left = d.startsWith(':');
    const right = d.endsWith(':');
    return left && right ? 'center' : right ? 'right' : left ? 'left' : '';
  });
  const cell = (tag, text, n) => h(tag, align[n] ? { class: `align-${align[n]}` } : {}, inline(text));
  const body = [];
  let j = i + 2;
  while (j < lines.length && lines[j].trim() && lines[j].includes('|')) {
    const row = cells(lines[j]);
    body.push(h('tr', {}, head.map((_, n) => cell('td', row[n] || '', n))));
    j += 1;
  }
  const el = h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, head.map((t, n) => cell('th', t, n)))),
    body.length ? h('tbody', {}, body) : ''));
  return [el, j];
}

// ---- lists ---------------------------------------------------------------

const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;

function indentOf(line) {
  const m = line.match(/^\s*/)[0];
  return m.replace(/\t/g, '    ').length;
}

// A list starting at `i`; items' continuation lines (indented past the
// marker) and nested lists are rendered as Markdown of their own.
function list(lines, i) {
  const first = lines[i].match(ITEM);
  const base = indentOf(lines[i]);
  const ordered = /\d/.test(first[2]);
  const el = h(ordered ? 'ol' : 'ul');
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) el.setAttribute('start', String(start));
  }
  let j = i;
  let loose = false;
  const items = [];
  while (j < lines.length) {
    const m = lines[j].match(ITEM);
    if (!m || indentOf(lines[j]) !== base || /\d/.test(m[2]) !== ordered) break;
    const contentIndent = base + m[2].length + Math.max(1, Math.min(4, m[3].length || 1));
    const body = [m[4]];
    j += 1;
    while (j < lines.length) {
      const line = lines[j];
      if (!line.trim()) {
        // A blank line continues the item when the next line is indented.
        const next = lines[j + 1];
        if (next !== undefined && next.trim() && indentOf(next) >= contentIndent) {
          body.push('');
          loose = true;
          j += 1;
          continue;
        }
        if (next !== undefined && ITEM.test(next) && indentOf(next) === base) loose = true;
        break;
      }
      if (indentOf(line) >= contentIndent || (indentOf(line) > base && ITEM.test(line))) {
        body.push(line.replace(/^\s*/, (s) => ' '.repeat(Math.max(0, s.replace(/\t/g, '    ').length - contentIndent))));
        j += 1;
        continue;
      }
      if (ITEM.test(line) || /^\s*(```|~~~|#{1,6}\s|>)/.test(line)) break;
      // A lazy continuation of the item's paragraph.
      body.push(line.trim());
      j += 1;
    }
    while (j < lines.length && !lines[j].trim()
      && lines[j + 1] !== undefined && ITEM.test(lines[j + 1]) && indentOf(lines[j + 1]) === base) j += 1;
    items.push(body);
  }
  for (const body of items) {
    const li = h('li');
    const task = body[0].match(/^\[([ xX])\]\s+(.*)$/);
    if (task) {
      li.className = 'task';
      body[0] = task[2];
      li.append(h('input', {
        type: 'checkbox', disabled: true, checked: task[1] !== ' ',
        'aria-label': task[1] !== ' ' ? 'Done' : 'Not done',
      }), ' ');
    }
    const inner = blocks(body.join('\n'));
    if (!loose && inner.childNodes.length >= 1 && inner.firstChild.tagName === 'P') {
      // A tight list's paragraphs are its items' text.
      const p = inner.firstChild;
      li.append(...p.childNodes);
      p.remove();
    }
    li.append(...inner.childNodes);
    el.append(li);
  }
  return [el, j];
}

// ---- blocks --------------------------------------------------------------

function codeBlock(body, lang) {
  const text = body.join('\n');
  return h('div', { class: 'code-block' },
    h('div', { class: 'code-head' },
      h('span', { class: 'muted' }, lang || 'text'),
      copyButton('code', () => text)),
    h('pre', {}, h('code', lang ? { class: `lang-${lang}`, dataset: { lang } } : {}, text)));
}

// ---- highlighting --------------------------------------------------------

// The server's limit (UTF-8 bytes); a longer string is longer in bytes too.
const HIGHLIGHT_MAX = 256 * 1024;
// Fence tags the server said it does not highlight: not asked again.
const refusedTags = new Set();
const TOKEN_CLASS = /^[a-z]+$/;

// The nodes of `text` with the server's `[start, end, class]` spans (UTF-16
// offsets, in order) as `span.hl-<class>` around text nodes; null when the
// answer does not fit the text, so nothing half-made is shown.
export function highlightedNodes(text, spans) {
  if (!Array.isArray(spans)) return null;
  const out = [];
  let at = 0;
  for (const span of spans) {
    if (!Array.isArray(span) || span.length !== 3) return null;
    const [start, end, cls] = span;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < at || end <= start
      || end > text.length || typeof cls !== 'string' || !TOKEN_CLASS.test(cls)) return null;
    if (start > at) out.push(document.createTextNode(text.slice(at, start)));
    out.push(h('span', { class: `hl-${cls}` }, text.slice(start, end)));
    at = end;
  }
  if (at < text.length) out.push(document.createTextNode(text.slice(at)));
  return out;
}

async function highlightCode(code) {
  const tag = code.dataset.lang;
  const text = code.textContent;
  if (!tag || !text.trim() || text.length > HIGHLIGHT_MAX || refusedTags.has(tag.toLowerCase())) return;
  let answer;
  try {
    answer = await api('POST', '/api/highlight', { language: tag, code: text });
  } catch (e) {
    if (e && e.code === 'highlight/unknown-language') refusedTags.add(tag.toLowerCase());
    return;
  }
  // The block may have been replaced while the answer was on its way.
  if (!code.isConnected || code.textContent !== text || code.dataset.highlighted) return;
  const nodes = highlightedNodes(text, answer && answer.spans);
  if (!nodes) return;
  code.replaceChildren(...nodes);
  code.dataset.highlighted = answer.language || tag;
}

// One request per block, when it comes near the viewport (all at once
// where the browser has no IntersectionObserver).
let observer = null;
function highlightWhenSeen(code) {
  if (typeof IntersectionObserver === 'undefined') {
    highlightCode(code);
    return;
  }
  if (!observer) {
    observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        observer.unobserve(entry.target);
        highlightCode(entry.target);
      }
    }, { rootMargin: '300px 0px' });
  }
  observer.observe(code);
}

function blocks(source) {
  const root = h('div');
  const lines = String(source || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  const para = [];
  const flush = () => {
    if (para.length) {
      const p = h('p');
      para.forEach((line, n) => {
        if (n) p.append(h('br'));
        p.append(...inline(line.trim()));
      });
      root.append(p);
      para.length = 0;
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      flush();
      const indent = indentOf(line);
      const body = [];
      i += 1;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[1]) && /^[`~]+\s*$/.test(lines[i].trim()))) {
        body.push(lines[i].replace(new RegExp(`^ {0,${indent}}`), ''));
        i += 1;
      }
      i += 1;
      root.append(codeBlock(body, fence[2]));
      continue;
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)(\s+#+)?\s*$/);
    if (heading) {
      flush();
      // Model headings sit below the page's own.
      const level = Math.min(6, heading[1].length + 2);
      root.append(h(`h${level}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      root.append(h('hr'));
      i += 1;
      continue;
    }
    if (isTableStart(lines, i)) {
      flush();
      const [el, next] = table(lines, i);
      root.append(el);
      i = next;
      continue;
    }
    if (ITEM.test(line) && (!para.length || !/^\s*\d/.test(line) || /^\s*1[.)]/.test(line)) && line.trim().length > 1) {
      flush();
      const [el, next] = list(lines, i);
      root.append(el);
      i = next;
      continue;
    }
    if (/^\s{0,3}>/.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ''));
      root.append(h('blockquote', {}, [...blocks(quoted.join('\n')).childNodes]));
      continue;
    }
    if (!line.trim()) {
      flush();
      i += 1;
      continue;
    }
    para.push(line);
    i += 1;
  }
  flush();
  return root;
}

// `highlight: false` while the text is still streaming: its blocks are
// rebuilt every frame, and are highlighted when the message is rendered
// whole.
export function renderMarkdown(source, { highlight = true } = {}) {
  const root = blocks(source);
  root.className = 'md';
  if (highlight) root.querySelectorAll('pre > code[data-lang]').forEach(highlightWhenSeen);
  return root;
}
