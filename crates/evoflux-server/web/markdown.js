// A small Markdown renderer for model output that builds DOM nodes and
// never parses HTML: fenced code, headings, lists, block quotes,
// paragraphs, and inline code, emphasis and links (http, https and mailto
// only). Anything else stays literal text.

import { h } from './dom.js';

const SAFE_LINK = /^(https?:|mailto:)/i;

function inline(text) {
  const out = [];
  // Code spans first, so their contents are never formatted.
  const pattern = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  let m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[2] !== undefined) out.push(h('code', {}, m[2].trim()));
    else if (m[3] !== undefined) out.push(h('strong', {}, inline(m[3])));
    else if (m[4] !== undefined) out.push(h('strong', {}, inline(m[4])));
    else if (m[5] !== undefined) out.push(h('em', {}, inline(m[5])));
    else if (m[6] !== undefined) out.push(h('em', {}, inline(m[6])));
    else if (m[7] !== undefined) {
      out.push(SAFE_LINK.test(m[8])
        ? h('a', { href: m[8], rel: 'noopener noreferrer', target: '_blank' }, inline(m[7]))
        : m[0]);
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function renderMarkdown(source) {
  const root = h('div', { class: 'md' });
  const lines = String(source || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  const para = [];
  const flush = () => {
    if (para.length) {
      const p = h('p');
      para.forEach((line, n) => {
        if (n) p.append(h('br'));
        p.append(...inline(line));
      });
      root.append(p);
      para.length = 0;
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1;
      root.append(h('pre', {}, h('code', fence[2] ? { class: `lang-${fence[2]}` } : {}, body.join('\n'))));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flush();
      // Model headings sit below the page's own.
      const level = Math.min(6, heading[1].length + 2);
      root.append(h(`h${level}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    const bullet = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
    if (bullet.test(line)) {
      flush();
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? 'ol' : 'ul');
      while (i < lines.length && bullet.test(lines[i])) {
        list.append(h('li', {}, inline(lines[i].match(bullet)[2])));
        i += 1;
      }
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ''));
      root.append(h('blockquote', {}, renderMarkdown(quoted.join('\n'))));
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
