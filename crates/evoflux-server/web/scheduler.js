// Scheduler: every schedule with its trigger, state, next run and last run
// (its session linked), one schedule's history, Run now, and Enable or
// Disable — which sets `enabled` in the schedule's file through the API,
// so the file stays what the scheduler and `evoflux schedule` read. A
// schedule that is not the user's file (built in, a plugin's, the
// administrator's) shows no switch: the API refuses to edit it. While a
// run works the view asks again every few seconds, until it ends.

import { api, get } from './api.js';
import { h, clear, toast, errorText } from './dom.js';

const POLL_MS = 1500;

const EXAMPLE = [
  'every = "1d"               # or: cron = "0 9 * * 1-5" with timezone = "Europe/Berlin"',
  'prompt = "Summarize yesterday\'s commits"',
  'mode = "work"              # work (default) | coding, with workspace = "/path/to/repo"',
  'enabled = true',
].join('\n');

function plural(n, unit) {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

function interval(seconds) {
  for (const [size, unit] of [[86400, 'day'], [3600, 'hour'], [60, 'minute']]) {
    if (seconds % size === 0) return plural(seconds / size, unit);
  }
  return plural(seconds, 'second');
}

export function triggerText(t) {
  if (!t) return '';
  switch (t.kind) {
    case 'cron': return `cron ${t.expression} (${t.timezone})`;
    case 'every': return `every ${interval(t.seconds)}`;
    case 'at': return `once at ${when(t.at).textContent}`;
    default: return t.kind || '';
  }
}

// A time as the reader's local time, the exact instant in `datetime`.
function when(value) {
  if (value === undefined || value === null || value === '') return h('span', { class: 'muted' }, '—');
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return h('span', {}, String(value));
  return h('time', { datetime: d.toISOString() }, d.toLocaleString());
}

const STATUS_KIND = {
  done: 'ok',
  failed: 'err',
  interrupted: 'err',
  skipped: 'warn',
  missed: 'warn',
  running: '',
  queued: '',
};

function statusBadge(status) {
  return h('span', { class: `badge ${STATUS_KIND[status] || ''}`.trim(), dataset: { status } }, status);
}

function sessionLink(run) {
  if (!run || !run.session_id) return '';
  return h('a', { href: `#/chat/${encodeURIComponent(run.session_id)}`, class: 'run-session' }, 'Open session');
}

function working(run) {
  return !!run && (run.status === 'running' || run.status === 'queued');
}

// The Run now and Enable/Disable buttons of one schedule; `done` shows the
// view again after a change.
function actions(row, done) {
  const run = h('button', {
    type: 'button',
    'aria-label': `Run now: ${row.name}`,
    dataset: { key: `run:${row.name}` },
    onclick: async () => {
      run.disabled = true;
      try {
        await api('POST', `/api/scheduler/${encodeURIComponent(row.name)}/run`);
        toast(`Started ${row.name}; its session is linked when the run ends.`);
      } catch (e) { toast(errorText(e), 'error'); }
      await done();
    },
  }, 'Run now');
  if (!row.editable) {
    return h('div', { class: 'row' }, run,
      h('span', { class: 'muted' }, row.file ? 'Not your file: override it in your config folder' : 'Built in'));
  }
  const enable = !row.enabled;
  const toggle = h('button', {
    type: 'button',
    'aria-label': `${enable ? 'Enable' : 'Disable'}: ${row.name}`,
    dataset: { key: `toggle:${row.name}` },
    onclick: async () => {
      toggle.disabled = true;
      try {
        const answer = await api('PATCH', `/api/scheduler/${encodeURIComponent(row.name)}`, { enabled: enable });
        toast(`${enable ? 'Enabled' : 'Disabled'} ${row.name}${answer.changed ? '' : ' (it already was)'}.`);
      } catch (e) { toast(errorText(e), 'error'); }
      await done();
    },
  }, enable ? 'Enable' : 'Disable');
  return h('div', { class: 'row' }, run, toggle);
}

function stateBadge(row) {
  return row.enabled
    ? h('span', { class: 'badge ok', dataset: { state: 'enabled' } }, 'enabled')
    : h('span', { class: 'badge', dataset: { state: 'disabled' } }, 'disabled');
}

function diagnosticsCard(items) {
  if (!items || !items.length) return '';
  return h('section', { class: 'card', 'aria-label': 'Problems' },
    h('h2', {}, 'Schedules that could not be read'),
    h('ul', {}, items.map((d) => h('li', { class: d.severity === 'error' ? 'error' : '' },
      `${d.message} `, h('code', {}, d.code),
      d.locator && d.locator.file ? h('span', { class: 'muted' }, ` — ${d.locator.file}`) : ''))));
}

function emptyCard(folder) {
  return h('section', { class: 'card empty', 'aria-label': 'No schedules' },
    h('h2', {}, 'No schedules yet'),
    h('p', {}, 'A schedule is a file: save ', h('code', {}, '<name>.toml'), ' in ',
      h('code', { class: 'schedule-folder' }, folder || 'schedules/ in your config folder'),
      ' (or in a trusted repository\'s ', h('code', {}, '.evoflux/schedules/'), '). For example:'),
    h('pre', {}, h('code', {}, EXAMPLE)),
    h('p', { class: 'muted' }, 'It is listed here once saved, and ', h('code', {}, 'evoflux serve'), ' runs it on time. ',
      h('code', {}, 'evoflux schedule list'), ' shows the same schedules.'));
}

function listTable(rows, done) {
  return h('table', { class: 'schedules' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Trigger'), h('th', { scope: 'col' }, 'State'),
      h('th', { scope: 'col' }, 'Next run'), h('th', { scope: 'col' }, 'Last run'), h('th', { scope: 'col' }, 'Actions'))),
    h('tbody', {}, rows.map((row) => h('tr', { dataset: { schedule: row.name } },
      h('th', { scope: 'row' }, h('a', { href: `#/scheduler/${encodeURIComponent(row.name)}` }, row.name),
        h('div', { class: 'muted' }, row.mode)),
      h('td', {}, triggerText(row.trigger)),
      h('td', {}, stateBadge(row)),
      h('td', {}, row.enabled ? when(row.next_run_at) : h('span', { class: 'muted' }, 'off')),
      h('td', { class: 'last-run' }, row.last_run
        ? [statusBadge(row.last_run.status), ' ', when(row.last_run.occurrence_at_ms), ' ', sessionLink(row.last_run)]
        : h('span', { class: 'muted' }, 'never')),
      h('td', {}, actions(row, done))))));
}

function historyTable(runs) {
  if (!runs.length) return h('p', { class: 'muted' }, 'No runs yet.');
  return h('table', { class: 'history' },
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col' }, 'Trigger'), h('th', { scope: 'col' }, 'Status'),
      h('th', { scope: 'col' }, 'Finished'), h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'Detail'))),
    h('tbody', {}, runs.map((r) => h('tr', { dataset: { run: String(r.id) } },
      h('td', {}, when(r.occurrence_at_ms)),
      h('td', {}, r.trigger),
      h('td', {}, statusBadge(r.status)),
      h('td', {}, when(r.finished_at_ms)),
      h('td', {}, sessionLink(r)),
      h('td', {}, r.detail || '')))));
}

function detailList(row) {
  const s = [
    ['Trigger', triggerText(row.trigger)],
    ['State', stateBadge(row)],
    ['Next run', row.enabled ? when(row.next_run_at) : 'off'],
    ['Mode', row.mode],
    ['Workspace', row.workspace ? h('code', {}, row.workspace) : ''],
    ['Lead', row.lead || ''],
    ['Model', row.model || ''],
    ['While a run works', row.overlap === 'queue' ? 'the next one waits' : 'the next one is skipped'],
    ['Missed while stopped', row.missed === 'skip' ? 'skipped' : 'the latest runs once'],
    ['File', row.file ? h('code', {}, row.file) : 'built in'],
  ].filter(([, v]) => v !== '');
  return h('dl', { class: 'facts' }, s.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// Re-renders `paint` every POLL_MS while `busy` says a run works, keeping
// the focused button focused; stops when the view goes away.
function live(app, paint) {
  let timer = null;
  let gone = false;
  let shown = false;
  let wasBusy = false;
  const draw = async () => {
    clearTimeout(timer);
    const focused = document.activeElement && document.activeElement.dataset
      ? document.activeElement.dataset.key : undefined;
    let busy = false;
    try {
      busy = await paint();
    } catch (e) {
      // The first paint's failure is the router's to show (a refused
      // token asks for another).
      if (!shown) throw e;
      if (gone) return;
      clear(app.main).append(h('p', { class: 'error', role: 'alert' }, `Could not load this page: ${errorText(e)}`));
      return;
    }
    shown = true;
    if (gone) return;
    if (focused) {
      const again = app.main.querySelector(`[data-key="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
    // A run that ended made a session: the sidebar lists it.
    if (wasBusy && !busy) app.refreshSessions();
    wasBusy = busy;
    if (busy) timer = setTimeout(draw, POLL_MS);
  };
  app.teardown = () => { gone = true; clearTimeout(timer); };
  return draw;
}

export async function schedulerView(app, rest) {
  const name = rest[0] ? decodeURIComponent(rest[0]) : null;
  const draw = live(app, async () => {
    if (name) {
      const [shown, history] = await Promise.all([
        get(`/api/scheduler/${encodeURIComponent(name)}`),
        get(`/api/scheduler/${encodeURIComponent(name)}/history?limit=50`),
      ]);
      const row = shown.schedule;
      const runs = history.runs || [];
      clear(app.main).append(
        h('p', {}, h('a', { href: '#/scheduler' }, '← All schedules')),
        h('div', { class: 'row' }, h('h1', {}, row.name), h('span', { class: 'spacer' }), actions(row, draw)),
        h('section', { class: 'card', 'aria-label': 'Definition' }, detailList(row),
          h('h2', {}, 'Prompt'), h('pre', {}, row.prompt)),
        h('section', { class: 'card', 'aria-label': 'History' },
          h('h2', {}, `History (${runs.length})`), historyTable(runs)));
      return runs.some(working);
    }
    const listed = await get('/api/scheduler');
    const rows = listed.items || [];
    clear(app.main).append(
      h('h1', {}, 'Scheduler'),
      h('p', { class: 'muted' }, 'Each schedule starts a new session with its prompt on time; Run now starts one at once.'),
      diagnosticsCard(listed.diagnostics),
      rows.length ? listTable(rows, draw) : emptyCard(listed.folder));
    return rows.some((r) => working(r.last_run));
  });
  await draw();
}
