// The shell: the token gate (and logging out, which forgets this browser's
// token), the Work/Coding mode, the sidebar's session list (folded behind
// the header's button below 800 px) and the hash router that shows one view
// at a time in <main>.

import { setToken, token, forgetToken, ApiError } from './api.js';
import { h, clear, field } from './dom.js';
import { chatView, newSessionView } from './chat.js';
import { sessionTrust } from './trust.js';
import { pluginsView } from './plugins.js';
import { schedulerView } from './scheduler.js';
import { settingsView } from './settings.js';
import { provenanceView } from './provenance.js';
import { filesView, viewerView } from './viewer.js';
import { renderSessionList } from './sessions.js';

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

function showMode(mode) {
  app.mode = mode;
  localStorage.setItem(MODE_KEY, mode);
  for (const b of document.querySelectorAll('.modes button')) {
    b.setAttribute('aria-checked', String(b.dataset.mode === mode));
  }
}

export function setMode(mode) {
  showMode(mode);
  if (!app.started) return;
  refreshSessions();
  route();
}

// The open session's mode becomes the sidebar's (without leaving the
// session).
app.followMode = (mode) => {
  if (mode === app.mode) return;
  showMode(mode);
  refreshSessions();
};

// Forgets this browser's token: the page asks for one again.
function logout() {
  forgetToken();
  if (app.teardown) { app.teardown(); app.teardown = null; }
  app.started = false;
  clear(document.getElementById('session-list'));
  tokenGate('Logged out: this browser no longer holds the token.');
}

// Below 800 px the sidebar hides behind the header's menu button.
function setNavOpen(open) {
  const button = document.getElementById('nav-toggle');
  document.querySelector('.shell').classList.toggle('nav-open', open);
  if (button) {
    button.setAttribute('aria-expanded', String(open));
    button.setAttribute('aria-label', open ? 'Close navigation' : 'Open navigation');
  }
}

// The sidebar's list lives in sessions.js.
export async function refreshSessions() {
  await renderSessionList(app);
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
  app.main.classList.remove('fill');
  const hash = (location.hash || '#/chat').split('?')[0];
  const [, section, ...rest] = hash.split('/');
  markNav(section);
  clear(app.main);
  try {
    switch (section) {
      case 'chat':
        if (rest[0]) {
          await chatView(app, rest[0]);
          // An untrusted repository of the session: what trusting grants.
          sessionTrust(app, rest[0]);
        } else await newSessionView(app);
        break;
      case 'scheduler':
        await schedulerView(app, rest);
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
  // A refused token shows the gate from the view's own request.
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
  window.addEventListener('hashchange', () => { setNavOpen(false); route(); refreshSessions(); });
  const toggle = document.getElementById('nav-toggle');
  if (toggle) {
    toggle.addEventListener('click', () => setNavOpen(!document.querySelector('.shell').classList.contains('nav-open')));
  }
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && document.querySelector('.shell.nav-open')) {
      setNavOpen(false);
      if (toggle) toggle.focus();
    }
  });
  const out = document.getElementById('logout');
  if (out) out.addEventListener('click', logout);
  start();
});
