// Repository trust in the page, as `evoflux trust` shows and records it.
// An untrusted repository is only read: its command tools, MCP servers,
// channels and schedules wait. Before a Coding session starts in such a
// repository, and while a session is open in one, the prompt lists exactly
// what trusting it grants (grouped by kind, each line as the CLI words
// it; for a repository trusted before, what is new or changed) and asks.
// "Trust" grants the review that was shown, by its identity: a repository
// that changed in between is refused by the server and shown again. The
// Settings page lists the served repositories with their trust.

import { api, get, query } from './api.js';
import { h, clear, errorText } from './dom.js';

const STALE = 'trust/review-stale';

// GET /api/trust for a directory of a served repository.
export function reviewTrust(path) {
  return get(`/api/trust${query({ path })}`);
}

function stateWords(shown) {
  const t = shown.trust || {};
  if (t.state === 'remote-changed') return 'untrusted (its remote changed)';
  if (t.state !== 'trusted') return 'untrusted';
  if (shown.changed_since_trust) return 'trusted; changed since';
  return 'trusted';
}

function stateBadge(shown) {
  const kind = shown.trust && shown.trust.state === 'trusted' && !shown.changed_since_trust ? 'ok' : 'warn';
  return h('span', { class: `badge ${kind}` }, stateWords(shown));
}

// The items of a review by kind; for a repository trusted before, each
// new or changed item is marked.
function grantList(shown, level) {
  const marked = shown.trust && shown.trust.state === 'trusted';
  return shown.groups.map((g) => h('div', { class: 'trust-group', dataset: { group: g.group } },
    h(`h${level}`, {}, g.heading),
    h('ul', {}, g.items.map((i) => h('li', { dataset: { slot: i.slot, status: i.status } },
      marked && i.status !== 'granted'
        ? h('span', { class: 'badge warn' }, i.status === 'changed' ? 'changed since you trusted it' : 'new since you trusted it')
        : '',
      marked && i.status !== 'granted' ? ' ' : '',
      i.text,
      h('div', { class: 'muted small' }, h('code', {}, i.source)))))));
}

function problems(shown) {
  const diags = shown.diagnostics || [];
  if (!diags.length) return '';
  return h('div', { class: 'trust-problems' },
    h('p', {}, 'Problems (a source with errors does not run):'),
    h('ul', {}, diags.map((d) => h('li', { class: d.severity === 'error' ? 'error' : '' }, `${d.message} (${d.code})`))));
}

// The prompt for one review. `level`: the heading level of its title.
// `onDone(shown)` after the repository is trusted; "Not now" removes it.
export function trustPrompt(shown, { level = 2, onDone } = {}) {
  const box = h('section', { class: 'prompt trust-prompt', 'aria-label': `Trust ${shown.repository}` });
  const render = (current, note) => {
    const changed = current.changed_since_trust;
    const problem = h('p', { class: 'error', role: 'alert' }, note || '');
    const trustButton = h('button', {
      type: 'button',
      class: 'primary',
      onclick: async () => {
        trustButton.disabled = true;
        problem.textContent = '';
        try {
          const now = await api('POST', '/api/trust', { path: current.repository, review: current.review });
          clear(box).append(h('p', { role: 'status' }, `Trusted ${now.repository}: what was listed may run from the next turn.`));
          if (onDone) onDone(now);
        } catch (e) {
          if (e.code === STALE) {
            // Show what it grants now; nothing was trusted.
            try {
              render(await reviewTrust(current.repository), `${errorText(e)} What it grants now is listed below.`);
            } catch (again) { problem.textContent = errorText(again); }
            return;
          }
          trustButton.disabled = false;
          problem.textContent = errorText(e);
        }
      },
    }, 'Trust this repository');
    clear(box).append(
      h(`h${level}`, {}, changed
        ? `${current.repository} changed since you trusted it`
        : `${current.repository} is not trusted`),
      h('p', {}, changed
        ? 'What is new or changed waits until you trust the repository again. Trusting it now lets it:'
        : 'evoflux only reads it: its command tools, MCP servers, channels and schedules wait for trust. Trusting it lets it:'),
      h('div', { class: 'trust-grants' }, grantList(current, Math.min(level + 1, 6))),
      problems(current),
      h('p', { class: 'muted small' }, 'Keys never reach it: a repository\'s MCP servers and tools get no key variable from your environment, and its providers no key.'),
      problem,
      h('div', { class: 'row' },
        trustButton,
        h('button', { type: 'button', onclick: () => box.remove() }, 'Not now')));
  };
  render(shown);
  return box;
}

// The prompts for the repositories of `paths` that trusting would grant
// something, each repository once; a path that cannot be reviewed (not
// served) shows nothing here — starting the session says why.
async function promptsFor(paths, level) {
  const seen = new Set();
  const out = [];
  for (const path of paths) {
    let shown;
    try { shown = await reviewTrust(path); } catch { continue; }
    if (seen.has(shown.repository)) continue;
    seen.add(shown.repository);
    if (shown.grants_anything_new) out.push(trustPrompt(shown, { level }));
  }
  return out;
}

// The new-session form: prompts for the workspaces typed in `textarea`,
// shown in `container` and kept up to date as they change.
export function newSessionTrust(container, textarea) {
  let seq = 0;
  const refresh = async () => {
    const mine = ++seq;
    const paths = textarea.value.split('\n').map((s) => s.trim()).filter(Boolean);
    const prompts = await promptsFor(paths, 3);
    if (mine !== seq) return;
    clear(container).append(...prompts);
  };
  textarea.addEventListener('change', refresh);
  refresh();
}

// An open session: prompts for its repositories under the session's
// heading, if the view is still the one that asked.
export async function sessionTrust(app, id) {
  const head = app.main.querySelector('.chat-head');
  if (!head) return;
  let shown;
  try { shown = await get(`/api/sessions/${encodeURIComponent(id)}`); } catch { return; }
  const ws = shown.session && shown.session.workspace;
  if (!ws || ws.mode !== 'coding') return;
  const prompts = await promptsFor(ws.repositories || [], 2);
  if (!prompts.length || !head.isConnected) return;
  head.after(...prompts);
}

// Settings: the served repositories with their trust, each reviewable,
// trusted or revoked here.
export async function repositoriesTab(body) {
  const info = await get('/api/info');
  const repos = (info.repositories || []).map((r) => r.path);
  const detail = h('div', {});
  const rows = [];
  for (const path of repos) {
    let shown;
    try { shown = await reviewTrust(path); } catch (e) {
      rows.push(h('tr', {}, h('td', {}, path), h('td', { colspan: 3, class: 'error' }, errorText(e))));
      continue;
    }
    const count = shown.groups.reduce((n, g) => n + g.items.length, 0);
    const fresh = shown.groups.reduce((n, g) => n + g.items.filter((i) => i.status !== 'granted').length, 0);
    const actions = h('td', {}, h('div', { class: 'row' },
      shown.grants_anything_new
        ? h('button', {
          type: 'button',
          onclick: () => clear(detail).append(trustPrompt(shown, { level: 3, onDone: () => repositoriesTab(clear(body)) })),
        }, 'Review and trust')
        : '',
      shown.trust && shown.trust.state === 'trusted'
        ? h('button', {
          type: 'button',
          class: 'danger',
          onclick: async () => {
            try {
              await api('DELETE', `/api/trust${query({ path: shown.repository })}`);
              await repositoriesTab(clear(body));
            } catch (e) { clear(detail).append(h('p', { class: 'error', role: 'alert' }, errorText(e))); }
          },
        }, 'Revoke trust')
        : ''));
    rows.push(h('tr', { dataset: { repository: shown.repository } },
      h('td', {}, h('code', {}, shown.repository), shown.remote ? h('div', { class: 'muted small' }, shown.remote) : ''),
      h('td', {}, stateBadge(shown)),
      h('td', {}, count ? `${count} source${count === 1 ? '' : 's'}: ${shown.groups.map((g) => g.heading).join(', ')}` : 'nothing trust would let run',
        shown.changed_since_trust ? h('div', { class: 'muted small' }, `${fresh} new or changed since you trusted it`) : ''),
      actions));
  }
  body.append(
    h('h2', {}, 'Repositories'),
    h('p', { class: 'hint' }, 'The repositories this server serves. An untrusted repository is only read; trusting it lets what is listed run, and what changes later waits until you trust it again.'),
    h('table', { class: 'trust-list' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Repository'), h('th', {}, 'Trust'), h('th', {}, 'Would run'), h('th', {}, 'Actions'))),
      h('tbody', {}, rows)),
    detail);
}
