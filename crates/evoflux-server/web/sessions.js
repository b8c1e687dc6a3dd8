// The sidebar's session list (issue #48, "sessions can be found"):
// sessions by last activity under their titles, each delegated child
// nested under its parent (collapsed until opened), a search over titles
// and messages, rename and delete (with a confirmation), and a "More
// sessions" button that fetches the next page by its cursor.

import { api, get, query } from './api.js';
import { h, clear, dialog, field, toast, errorText } from './dom.js';

const PAGE = 50;

const list = {
  search: '',
  // How many pages are shown: a refresh fetches them all again.
  pages: 1,
  // Parents whose children are shown.
  expanded: new Set(),
  // Drops a response a later refresh overtook.
  seq: 0,
  // The app the list was last rendered for.
  app: null,
};

// A followed session's model named it (`session_titled`, after its first
// turn): its entry is refreshed without navigating.
window.addEventListener('evoflux:session-event', (e) => {
  const { event } = e.detail || {};
  if (event && event.type === 'session_titled' && list.app) renderSessionList(list.app);
});

// "5 min ago", "yesterday", or the date: when the session was last active.
export function activity(ms) {
  const seconds = Math.max(0, (Date.now() - ms) / 1000);
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 2 * 86400) return 'yesterday';
  return new Date(ms).toLocaleDateString();
}

export function titleOf(s) {
  return s.title || (s.lead ? `${s.lead}` : 'Session');
}

// The search box above the list, made once.
function searchBox(app) {
  let box = document.getElementById('session-search');
  if (box) return box;
  let timer = null;
  box = h('input', {
    type: 'search',
    id: 'session-search',
    class: 'session-search',
    placeholder: 'Search sessions',
    'aria-label': 'Search sessions by title or message',
    autocomplete: 'off',
    oninput: () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        list.search = box.value.trim();
        list.pages = 1;
        renderSessionList(app);
      }, 200);
    },
  });
  const ul = document.getElementById('session-list');
  ul.before(box);
  return box;
}

export async function renderSessionList(app) {
  const ul = document.getElementById('session-list');
  if (!ul) return;
  list.app = app;
  searchBox(app);
  const seq = ++list.seq;
  const search = list.search;
  let rows;
  try {
    rows = await get(`/api/sessions${query({ q: search, limit: PAGE * list.pages, mode: app.mode })}`);
  } catch {
    return;
  }
  if (seq !== list.seq) return;
  clear(ul);
  const current = location.hash.match(/^#\/chat\/([\w-]+)/);
  const currentId = current && current[1];
  const mine = rows.filter((r) => (r.session.workspace && r.session.workspace.mode) === app.mode);
  // Without a search the API sends each top-level session followed by
  // its family; a search's finds are listed flat.
  const children = new Map();
  const roots = [];
  for (const row of mine) {
    const parent = !search && row.session.parent && row.session.parent.session_id;
    if (parent && mine.some((r) => r.session.id === parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(row);
    } else {
      roots.push(row);
    }
  }
  // The open session's family is shown.
  const parentOf = new Map(mine.filter((r) => r.session.parent).map((r) => [r.session.id, r.session.parent.session_id]));
  for (let at = currentId, n = 0; at && parentOf.has(at) && n < 64; n++) {
    at = parentOf.get(at);
    list.expanded.add(at);
  }
  if (!roots.length) {
    ul.append(h('li', { class: 'muted' }, search ? 'No session matches' : 'No sessions yet'));
  }
  const item = (row) => {
    const s = row.session;
    const kids = children.get(s.id) || [];
    const open = list.expanded.has(s.id);
    const status = row.busy ? 'running' : row.live ? 'live' : 'stored';
    const li = h('li', { class: 'session', dataset: { session: s.id } },
      h('div', { class: 'session-row' },
        kids.length ? h('button', {
          type: 'button',
          class: 'link twisty',
          'aria-expanded': String(open),
          'aria-label': `${open ? 'Hide' : 'Show'} ${kids.length} delegated session${kids.length > 1 ? 's' : ''}`,
          onclick: () => {
            if (list.expanded.has(s.id)) list.expanded.delete(s.id); else list.expanded.add(s.id);
            renderSessionList(app);
          },
        }, open ? '▾' : '▸') : '',
        h('a', {
          href: `#/chat/${s.id}`,
          class: 'session-link',
          'aria-current': currentId === s.id ? 'page' : false,
          title: titleOf(s),
        }, h('span', { class: 'session-title' }, titleOf(s)),
        h('small', {}, `${s.lead || ''} · ${activity(s.updated_at_ms || s.created_at_ms)} · ${status}`)),
        h('span', { class: 'session-actions' },
          h('button', { type: 'button', class: 'link', 'aria-label': `Rename ${titleOf(s)}`, title: 'Rename', onclick: () => rename(app, s) }, '✎'),
          h('button', { type: 'button', class: 'link', 'aria-label': `Delete ${titleOf(s)}`, title: 'Delete', onclick: () => remove(app, s) }, '✕'))),
      kids.length ? h('ul', { class: 'children', hidden: !open, 'aria-label': `Delegated by ${titleOf(s)}` }, kids.map(item)) : '');
    return li;
  };
  for (const row of roots) ul.append(item(row));
  // The first load's list is on screen (what `ui_load` measures).
  if (!performance.getEntriesByName('evoflux-sessions-listed').length) performance.mark('evoflux-sessions-listed');
  // A full page means there may be more.
  const counted = search ? rows : rows.filter((r) => !r.session.parent);
  if (counted.length >= PAGE * list.pages) {
    ul.append(h('li', {}, h('button', {
      type: 'button',
      class: 'link more',
      onclick: () => { list.pages += 1; renderSessionList(app); },
    }, 'More sessions')));
  }
}

async function rename(app, s) {
  const input = h('input', { type: 'text', value: titleOf(s), maxlength: 120, required: true });
  const choice = await dialog('Rename session', field('Title', input), [
    { label: 'Cancel', value: null },
    { label: 'Rename', value: 'rename', primary: true },
  ]);
  if (choice !== 'rename') return;
  try {
    await api('PATCH', `/api/sessions/${s.id}`, { title: input.value });
  } catch (e) {
    toast(`Could not rename: ${errorText(e)}`, 'error');
    return;
  }
  await renderSessionList(app);
}

async function remove(app, s) {
  const choice = await dialog(`Delete “${titleOf(s)}”?`,
    h('p', {}, 'The session, its transcript, its files and every session it delegated to are deleted. This cannot be undone.'),
    [
      { label: 'Cancel', value: null },
      { label: 'Delete', value: 'delete', primary: true },
    ]);
  if (choice !== 'delete') return;
  try {
    await api('DELETE', `/api/sessions/${s.id}`);
  } catch (e) {
    toast(`Could not delete: ${errorText(e)}`, 'error');
    return;
  }
  const current = location.hash.match(/^#\/chat\/([\w-]+)/);
  if (current && current[1] === s.id) location.hash = '#/chat';
  await renderSessionList(app);
}
