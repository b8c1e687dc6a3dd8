// The shell: the token gate, the Work/Coding mode, the sidebar's session
// list and the hash router that shows one view at a time in <main>.

import { get, setToken, token, forgetToken, ApiError } from './api.js';
import { h, clear, field } from './dom.js';
import { chatView, newSessionView } from './chat.js';
import { pluginsView } from './plugins.js';
import { settingsView } from './settings.js';
import { provenanceView } from './provenance.js';
import { filesView, viewerView } from './viewer.js';

const MODE_KEY = 'evoflux.mode';

export const app = {
  mode: localStorage.getItem(MODE_KEY) === 'coding' ? 'coding' : 'work',
  main: null,
  // Called when a view goes away (to stop its event streams).
  teardown: null,
  started: false,
  // Shows the current view again (after a change it made).
  rerender: () => route(),
  refreshSessions: () => refreshSessions(),
};

export function setMode(mode) {
  app.mode = mode;
  localStorage.setItem(MODE_KEY, mode);
  for (const b of document.querySelectorAll('.modes button')) {
    b.setAttribute('aria-checked', String(b.dataset.mode === mode));
  }
  if (!app.started) return;
  refreshSessions();
  route();
}

export async function refreshSessions() {
  const list = document.getElementById('session-list');
  let rows;
  try {
    rows = await get('/api/sessions');
  } catch {
    return;
  }
  clear(list);
  const current = location.hash.match(/^#\/chat\/([\w-]+)/);
  const mine = rows.filter((r) => (r.session.workspace && r.session.workspace.mode) === app.mode);
  if (!mine.length) list.append(h('li', { class: 'muted' }, 'No sessions yet'));
  for (const row of mine) {
    const s = row.session;
    const title = row.title || s.title || (s.lead ? `${s.lead}` : 'Session');
    const when = new Date(s.updated_at_ms || s.created_at_ms).toLocaleString();
    const status = row.busy ? 'running' : row.live ? 'live' : 'stored';
    list.append(h('li', {},
      h('a', {
        href: `#/chat/${s.id}`,
        'aria-current': current && current[1] === s.id ? 'page' : false,
      }, title, h('small', {}, `${s.lead || ''} · ${when} · ${status}`))));
  }
}

function markNav(section) {
  for (const a of document.querySelectorAll('.nav a')) {
    a.setAttribute('aria-current', a.dataset.nav === section ? 'page' : 'false');
  }
}

function tokenGate(problem) {
  markNav('');
  clear(app.main).append(
    h('h1', {}, 'Connect to evoflux'),
    h('p', {}, 'This page talks to the evoflux HTTP API with its token. ',
      h('code', {}, 'evoflux serve --print-token'), ' shows it.'),
    problem ? h('p', { class: 'error', role: 'alert' }, problem) : '',
    h('form', {
      onsubmit: (e) => {
        e.preventDefault();
        setToken(e.target.querySelector('input').value.trim());
        start();
      },
    }, field('Token', h('input', { type: 'password', autocomplete: 'off', required: true })),
    h('button', { type: 'submit', class: 'primary' }, 'Connect')));
}

export async function route() {
  if (app.teardown) { app.teardown(); app.teardown = null; }
  const hash = (location.hash || '#/chat').split('?')[0];
  const [, section, ...rest] = hash.split('/');
  markNav(section);
  clear(app.main);
  try {
    switch (section) {
      case 'chat':
        if (rest[0]) await chatView(app, rest[0]);
        else await newSessionView(app);
        break;
      case 'plugins':
        await pluginsView(app, rest);
        break;
      case 'settings':
        await settingsView(app, rest);
        break;
      case 'provenance':
        await provenanceView(app);
        break;
      case 'files':
        await filesView(app, rest);
        break;
      case 'viewer':
        await viewerView(app, rest);
        break;
      default:
        location.hash = '#/chat';
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      forgetToken();
      tokenGate('The token was refused; paste the current one.');
      return;
    }
    app.main.append(h('p', { class: 'error', role: 'alert' }, `Could not load this page: ${e.message}`));
  }
  app.main.focus();
}

async function start() {
  if (!token()) { tokenGate(); return; }
  try {
    await get('/api/sessions');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      forgetToken();
      tokenGate('The token was refused; paste the current one.');
      return;
    }
  }
  app.started = true;
  refreshSessions();
  await route();
  // The first view is on screen and answers input (the UI bench reads it).
  performance.mark('evoflux-interactive');
}

window.addEventListener('DOMContentLoaded', () => {
  app.main = document.getElementById('main');
  for (const b of document.querySelectorAll('.modes button')) {
    b.addEventListener('click', () => setMode(b.dataset.mode));
  }
  setMode(app.mode);
  window.addEventListener('hashchange', () => { route(); refreshSessions(); });
  start();
});
