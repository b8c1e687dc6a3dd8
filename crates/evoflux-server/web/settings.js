// Settings: agents (list with validity and effective tools; an editor with
// Form and Raw views — the Raw text is authoritative and the server's one
// Form serializer keeps unknown keys), skills (the management list with
// invalid winners, the bundle editor for editable bundles, a read-only view
// otherwise, availability and runtime controls) and MCP servers.

import { api, get, query } from './api.js';
import { h, clear, field, dialog, toast, errorText } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { repositoriesTab } from './trust.js';
import { loginButton } from './mcp-login.js';

const TABS = [['agents', 'Agents'], ['skills', 'Skills'], ['mcp', 'MCP servers'], ['repositories', 'Repositories']];

export async function settingsView(app, rest) {
  const tab = rest[0] || 'agents';
  app.main.append(h('h1', {}, 'Settings'),
    h('nav', { class: 'tabs', 'aria-label': 'Settings sections' }, TABS.map(([id, label]) =>
      h('a', { href: `#/settings/${id}`, 'aria-current': id === tab ? 'page' : false }, label))));
  const body = h('div', {});
  app.main.append(body);
  if (tab === 'agents') await agentsTab(app, body, rest[1] && decodeURIComponent(rest.slice(1).join('/')));
  else if (tab === 'skills') await skillsTab(app, body, rest[1] && decodeURIComponent(rest[1]));
  else if (tab === 'mcp') await mcpTab(body);
  else if (tab === 'repositories') await repositoriesTab(body);
}

// ---- agents --------------------------------------------------------------

function agentPath(mode, name) {
  return mode === 'coding' ? `/api/agents/coding/${encodeURIComponent(name)}` : `/api/agents/${encodeURIComponent(name)}`;
}

async function agentsTab(app, body, selected) {
  const mode = app.mode;
  const [listed, info] = await Promise.all([get(`/api/agents${query({ mode })}`), get('/api/info')]);
  const listing = (listed.items || [])[0] || { agents: [] };
  const table = h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Agent'), h('th', {}, 'Role'), h('th', {}, 'State'), h('th', {}, 'Effective tools'))),
    h('tbody', {}, listing.agents.map((a) => h('tr', {},
      h('td', {}, h('a', { href: `#/settings/agents/${encodeURIComponent(a.name)}` }, a.name), h('div', { class: 'muted clamp' }, a.description)),
      h('td', {}, a.role || ''),
      h('td', {}, a.valid ? h('span', { class: 'badge ok' }, 'valid') : h('span', { class: 'badge err' }, 'invalid')),
      h('td', { class: 'muted small' }, ((a.effective && a.effective.tools) || []).join(' '))))));
  const newAgent = h('button', {
    type: 'button',
    onclick: async () => {
      const name = h('input', { type: 'text', placeholder: 'researcher' });
      const choice = await dialog('New agent', field('Name', name, 'Lowercase letters, digits and hyphens.'),
        [{ label: 'Cancel', value: null }, { label: 'Create', value: 'go', primary: true }]);
      if (choice !== 'go' || !name.value.trim()) return;
      const n = name.value.trim();
      const content = `---\nname: ${n}\nrole: member\ndescription: Describe what ${n} does.\n---\n`;
      try {
        await api('POST', '/api/agents', { name: mode === 'coding' ? `coding/${n}` : n, content });
        location.hash = `#/settings/agents/${encodeURIComponent(n)}`;
      } catch (e) { toast(errorText(e), 'error'); }
    },
  }, 'New agent');
  body.append(h('div', { class: 'split' }, h('div', {}, h('div', { class: 'row' }, h('h2', {}, mode === 'coding' ? 'Coding agents' : 'Work agents'), h('span', { class: 'spacer' }), newAgent), table),
    selected ? await agentEditor(app, selected, info) : h('p', { class: 'muted' }, 'Choose an agent to edit it.')));
}

async function agentEditor(app, name, info) {
  const mode = app.mode;
  const detail = await get(agentPath(mode, name));
  let raw = detail.content || '';
  let view = 'form';
  let formState = null;
  const root = h('section', { class: 'card agent-editor', 'aria-label': `Edit ${name}` });
  const problem = h('p', { class: 'error', role: 'alert' });
  const panel = h('div', {});
  const formTab = h('button', { type: 'button', role: 'tab', 'aria-selected': 'true' }, 'Form');
  const rawTab = h('button', { type: 'button', role: 'tab', 'aria-selected': 'false' }, 'Raw');
  const catalog = (info.tools.entries || []).filter((t) => (t.modes || []).includes(mode) && t.runnable !== false);
  const effective = new Set((detail.effective && detail.effective.tools) || []);

  // A Claude Code subagent is shown, never edited: its fields are locked.
  const lock = () => {
    if (!detail.claude) return;
    for (const el of panel.querySelectorAll('input, textarea, select')) el.disabled = true;
  };
  // The Form's values are written back into the raw text by the server.
  const syncFromForm = async () => {
    if (!formState) return;
    const r = await api('POST', '/api/agent-form/write', { content: raw, form: formState.form, body: formState.body });
    raw = r.content;
  };
  const showRaw = async () => {
    problem.textContent = '';
    try { await syncFromForm(); } catch (e) { problem.textContent = errorText(e); return; }
    view = 'raw';
    formTab.setAttribute('aria-selected', 'false');
    rawTab.setAttribute('aria-selected', 'true');
    const area = h('textarea', { 'aria-label': 'Agent file', spellcheck: 'false', class: 'raw', rows: 18 }, raw);
    area.addEventListener('input', () => { raw = area.value; formState = null; });
    clear(panel).append(area);
    lock();
  };
  const showForm = async () => {
    problem.textContent = '';
    let read;
    try { read = await api('POST', '/api/agent-form/read', { content: raw }); } catch (e) { problem.textContent = errorText(e); return; }
    view = 'form';
    formTab.setAttribute('aria-selected', 'true');
    rawTab.setAttribute('aria-selected', 'false');
    formState = { form: read.form, body: read.body };
    const f = formState.form;
    const text = (key, label, hint) => {
      const input = h('input', { type: 'text', value: f[key] ?? '' });
      input.addEventListener('input', () => { f[key] = input.value === '' ? null : input.value; });
      return field(label, input, hint);
    };
    const list = (key, label, hint) => {
      const input = h('input', { type: 'text', value: (f[key] || []).join(', ') });
      input.addEventListener('input', () => {
        const items = input.value.split(',').map((s) => s.trim()).filter(Boolean);
        f[key] = items.length ? items : null;
      });
      return field(label, input, hint);
    };
    const role = h('select', {}, ['lead', 'member'].map((r) => h('option', { value: r, selected: (f.role || 'member') === r }, r)));
    role.addEventListener('change', () => { f.role = role.value; renderTools(); });
    const prompt = h('textarea', { rows: 8 }, formState.body);
    prompt.addEventListener('input', () => { formState.body = prompt.value; });
    const tools = h('fieldset', { class: 'tools' });
    const renderTools = () => {
      const extras = new Set(f.tools_add || []);
      const optOut = new Set(f.tools_opt_out || []);
      const base = new Set([...effective].filter((t) => !extras.has(t)));
      for (const t of optOut) base.add(t);
      const member = (f.role || detail.effective?.role) === 'member';
      clear(tools).append(h('legend', {}, 'Tools'),
        h('p', { class: 'hint' }, 'Starts from the tools the agent has now. Default tools and instructions are versioned with evoflux; assigned skills are preloaded, the rest of the catalog stays on demand.'));
      for (const t of catalog) {
        if (member && t.lead_only) continue;
        const on = (base.has(t.name) && !optOut.has(t.name)) || extras.has(t.name);
        const box = h('input', { type: 'checkbox', checked: on, id: `tool-${t.name}` });
        box.addEventListener('change', () => {
          const ex = new Set(f.tools_add || []);
          const oo = new Set(f.tools_opt_out || []);
          if (box.checked) {
            if (base.has(t.name)) oo.delete(t.name); else ex.add(t.name);
          } else if (base.has(t.name)) oo.add(t.name); else ex.delete(t.name);
          f.tools_add = ex.size ? [...ex] : null;
          f.tools_opt_out = oo.size ? [...oo] : null;
          renderTools();
        });
        tools.append(h('div', { class: 'tool-choice', title: t.description || '' }, box, h('label', { for: box.id }, t.name)));
      }
      tools.append(h('p', { class: 'hint' }, `${f.tools && f.tools.length ? `Only: ${f.tools.join(', ')} · ` : ''}Added: ${(f.tools_add || []).join(', ') || 'none'} · Opted out: ${(f.tools_opt_out || []).join(', ') || 'none'}`));
    };
    renderTools();
    clear(panel).append(
      field('Role', role),
      text('description', 'Description'),
      text('model', 'Model', 'provider:model; the default model when empty.'),
      (f.role || 'member') === 'member' ? text('lead', 'Lead', 'The lead this member belongs to; the default lead when empty.') : '',
      list('skills', 'Skills', 'Preloaded skills, comma-separated.'),
      list('mcp', 'MCP servers', 'Servers it may use, comma-separated (a plugin\'s as plugin/name).'),
      tools,
      field('Instructions', prompt),
      read.unknown_keys.length ? h('p', { class: 'hint' }, `Kept as written: ${read.unknown_keys.join(', ')}`) : '');
    lock();
  };
  formTab.addEventListener('click', () => { if (view !== 'form') showForm(); });
  rawTab.addEventListener('click', () => { if (view !== 'raw') showRaw(); });
  const save = h('button', {
    type: 'button',
    class: 'primary',
    onclick: async () => {
      problem.textContent = '';
      try {
        if (view === 'form') await syncFromForm();
        if (detail.editable) {
          await api('PUT', agentPath(mode, name), { content: raw });
        } else {
          await api('POST', '/api/agents', { name: mode === 'coding' ? `coding/${name}` : name, content: raw });
        }
        toast(`Saved ${name}.`);
        app.rerender();
      } catch (e) {
        problem.textContent = errorText(e);
      }
    },
  }, detail.editable ? 'Save' : 'Save as my agent');
  // A Claude Code subagent is Claude Code's file: shown, never saved over.
  const saving = detail.claude ? null : save;
  const del = detail.editable ? h('button', {
    type: 'button',
    class: 'danger',
    onclick: async () => {
      const choice = await dialog(`Delete ${name}?`, h('p', {}, 'Its file is removed from your agents folder.'),
        [{ label: 'Cancel', value: null }, { label: 'Delete', value: 'go', primary: true }]);
      if (choice !== 'go') return;
      try {
        await api('DELETE', agentPath(mode, name));
        location.hash = '#/settings/agents';
      } catch (e) { problem.textContent = errorText(e); }
    },
  }, 'Delete') : null;
  root.append(
    h('div', { class: 'row' }, h('h2', {}, name), detail.valid ? h('span', { class: 'badge ok' }, 'valid') : h('span', { class: 'badge err' }, 'invalid')),
    detail.claude ? h('p', { class: 'hint claude-agent' }, h('span', { class: 'badge' }, 'read-only'), ` A Claude Code subagent, defined in ${detail.path}; edit it there.`)
      : detail.editable ? '' : h('p', { class: 'hint' }, detail.path ? `Defined in ${detail.path}; saving writes your own copy.` : 'Built in; saving writes your own copy.'),
    h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Editor view' }, formTab, rawTab),
    panel, problem, h('div', { class: 'row' }, saving, del));
  if (!raw) {
    // A builtin has no file: a user copy starts from what it compiles to.
    const e = detail.effective || {};
    raw = `---\nname: ${name}\nrole: ${e.role || 'member'}\ndescription: ${JSON.stringify(e.description || '')}\n---\n`;
  }
  await showForm();
  return root;
}

// ---- skills --------------------------------------------------------------

const MODE_CHOICES = [['work', 'Work'], ['coding', 'Coding'], ['both', 'Both']];

async function skillsTab(app, body, selected) {
  const mode = app.mode;
  const listed = await get('/api/settings/skills');
  const rows = listed.items || [];
  const table = h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Skill'), h('th', {}, 'Source'), h('th', {}, 'Available in'), h('th', {}, 'State'))),
    h('tbody', {}, rows.map((s) => h('tr', {},
      h('td', {}, h('a', { href: `#/settings/skills/${encodeURIComponent(s.name)}` }, s.name), h('div', { class: 'muted clamp' }, s.description)),
      h('td', {}, s.source),
      h('td', {}, (s.modes || []).join(', ') || 'none'),
      h('td', {}, s.valid ? h('span', { class: 'badge ok' }, 'valid')
        : h('span', { class: 'badge err', title: (s.diagnostics || []).join(', ') }, `invalid: ${(s.diagnostics || []).join(', ')}`))))));
  const newSkill = h('button', {
    type: 'button',
    onclick: async () => {
      const name = h('input', { type: 'text', placeholder: 'trip-notes' });
      const description = h('input', { type: 'text' });
      const choice = await dialog('New skill', h('div', {}, field('Name', name, 'Lowercase letters, digits and hyphens.'), field('Description', description, 'When should the agent use it?')),
        [{ label: 'Cancel', value: null }, { label: 'Create', value: 'go', primary: true }]);
      if (choice !== 'go') return;
      const n = name.value.trim();
      const content = `---\nname: ${n}\ndescription: ${description.value.trim() || `Use ${n}.`}\n---\nWrite the skill's instructions here.\n`;
      try {
        await api('POST', '/api/skills', { name: n, content });
        location.hash = `#/settings/skills/${encodeURIComponent(n)}`;
      } catch (e) { toast(errorText(e), 'error'); }
    },
  }, 'New skill');
  body.append(h('div', { class: 'split' },
    h('div', {}, h('div', { class: 'row' }, h('h2', {}, 'Skills'), h('span', { class: 'spacer' }), newSkill), table),
    selected ? await skillDetail(app, selected, mode) : h('p', { class: 'muted' }, 'Choose a skill to see or edit it.')));
}

async function skillDetail(app, name, mode) {
  const d = await get(`/api/skills/${encodeURIComponent(name)}`);
  const root = h('section', { class: 'card skill-detail', 'aria-label': name });
  const problem = h('p', { class: 'error', role: 'alert' });
  const patch = async (change) => {
    try {
      await api('PATCH', `/api/skills/${encodeURIComponent(name)}`, { settings_id: d.settings_id, ...change });
      toast('Preferences saved.');
      app.rerender();
    } catch (e) { toast(errorText(e), 'error'); }
  };
  const modes = d.modes || [];
  const current = modes.length === 2 ? 'both' : modes[0] || 'both';
  const availability = h('select', { disabled: !d.valid }, MODE_CHOICES.map(([v, l]) => h('option', { value: v, selected: v === current }, l)));
  availability.addEventListener('change', () => patch({ modes: availability.value === 'both' ? ['work', 'coding'] : [availability.value] }));
  const implicit = h('select', { disabled: !d.valid },
    h('option', { value: 'true', selected: d.implicit }, 'Auto-discoverable'),
    h('option', { value: 'false', selected: !d.implicit }, 'Hidden from catalog'));
  implicit.addEventListener('change', () => patch({ allow_implicit_invocation: implicit.value === 'true' }));
  const manual = h('select', { disabled: !d.valid },
    h('option', { value: 'true', selected: d.manual }, 'Available'),
    h('option', { value: 'false', selected: !d.manual }, 'Disabled'));
  manual.addEventListener('change', () => patch({ user_invocable: manual.value === 'true' }));
  const reset = h('button', {
    type: 'button',
    onclick: async () => {
      try {
        await api('DELETE', `/api/skills/${encodeURIComponent(name)}${query({ settings_id: d.settings_id })}`);
        toast('Preferences reset to the bundle\'s defaults.');
        app.rerender();
      } catch (e) { toast(errorText(e), 'error'); }
    },
  }, 'Reset');
  root.append(
    h('div', { class: 'row' }, h('h2', {}, name), h('span', { class: 'badge' }, d.source),
      d.valid ? h('span', { class: 'badge ok' }, 'valid') : h('span', { class: 'badge err' }, 'invalid')),
    d.valid ? '' : h('div', { class: 'error' }, h('p', {}, 'This skill is invalid and is not offered:'),
      h('ul', {}, (d.diagnostics_detail || []).map((x) => h('li', {}, `${x.message} (${x.code})`)))),
    h('div', { class: 'row' },
      field('Available in', availability),
      field('Auto-discovery', implicit),
      field('Manual invocation', manual),
      reset),
    d.shadowed_paths && d.shadowed_paths.length ? h('p', { class: 'hint' }, `Shadows: ${d.shadowed_paths.join(', ')}`) : '');
  if (d.edit_refusal) {
    root.append(h('p', { class: 'hint' }, `Read only: ${d.edit_refusal}.`), h('div', { class: 'card' }, renderMarkdown(d.content || '')));
    return root;
  }
  // The bundle editor.
  const skillMd = h('textarea', { 'aria-label': 'SKILL.md', rows: 14, spellcheck: 'false' }, d.content || '');
  const files = (d.files || []).filter((f) => f.editable);
  const edits = new Map();
  const deleted = new Set();
  const fileList = h('div', {});
  const renderFiles = () => {
    clear(fileList).append(h('h3', {}, 'Files'));
    for (const f of files) {
      if (deleted.has(f.path)) continue;
      const binary = f.encoding === 'base64';
      const area = h('textarea', { rows: 5, 'aria-label': f.path, disabled: binary || f.content === undefined }, binary ? '(binary file)' : f.content || '');
      area.addEventListener('input', () => edits.set(f.path, area.value));
      fileList.append(h('div', { class: 'field' }, h('div', { class: 'row' }, h('code', {}, f.path), h('span', { class: 'spacer' }),
        h('button', { type: 'button', class: 'danger', onclick: () => { deleted.add(f.path); edits.delete(f.path); renderFiles(); } }, 'Delete')), area));
    }
    fileList.append(h('button', {
      type: 'button',
      onclick: async () => {
        const path = h('input', { type: 'text', placeholder: 'references/notes.md' });
        const choice = await dialog('New file', field('Path in the bundle', path),
          [{ label: 'Cancel', value: null }, { label: 'Add', value: 'go', primary: true }]);
        if (choice !== 'go' || !path.value.trim()) return;
        files.push({ path: path.value.trim(), content: '', encoding: 'utf-8', editable: true });
        edits.set(path.value.trim(), '');
        renderFiles();
      },
    }, 'Add file'));
  };
  renderFiles();
  const save = h('button', {
    type: 'button',
    class: 'primary',
    onclick: async () => {
      problem.textContent = '';
      try {
        await api('PUT', `/api/skills/${encodeURIComponent(name)}`, {
          content: skillMd.value,
          files: [...edits].map(([path, content]) => ({ path, content })),
          deleted_files: [...deleted],
        });
        toast(`Saved ${name}.`);
        app.rerender();
      } catch (e) {
        problem.textContent = errorText(e);
        for (const x of e.diagnostics || []) problem.append(h('div', {}, `${x.message} (${x.code})`));
      }
    },
  }, 'Save bundle');
  const del = h('button', {
    type: 'button',
    class: 'danger',
    onclick: async () => {
      const choice = await dialog(`Delete ${name}?`, h('p', {}, 'The whole bundle folder is removed.'),
        [{ label: 'Cancel', value: null }, { label: 'Delete', value: 'go', primary: true }]);
      if (choice !== 'go') return;
      try {
        await api('DELETE', `/api/skills/${encodeURIComponent(name)}`);
        location.hash = '#/settings/skills';
      } catch (e) { toast(errorText(e), 'error'); }
    },
  }, 'Delete skill');
  root.append(field('SKILL.md', skillMd), fileList, problem, h('div', { class: 'row' }, save, del));
  return root;
}

// ---- MCP servers ---------------------------------------------------------
// Every server with its state, tools and where it comes from. Servers of
// the user's own mcp.json are added, edited and removed here; the others
// (a repository's file, another tool's, a plugin's) are shown read-only
// with where to change them. Values are shown and saved exactly as
// written: `${VAR}` stays a reference, never its value.

async function mcpTab(body) {
  const listed = await get('/api/mcp/servers');
  const rows = listed.items || [];
  const editor = h('div', {});
  const rerender = async () => { clear(body); await mcpTab(body); };
  const add = h('button', { type: 'button', onclick: () => mcpEditor(editor, null, rerender) }, 'Add server');
  body.append(h('div', { class: 'row' }, h('h2', {}, 'MCP servers'), h('span', { class: 'spacer' }), add));
  if (!rows.length) {
    body.append(h('p', { class: 'muted' }, 'No MCP servers: add one here, or enable a plugin that has some.'));
  } else {
    body.append(h('table', { class: 'mcp-servers' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Server'), h('th', {}, 'Source'), h('th', {}, 'State'), h('th', {}, 'Transport'), h('th', {}, 'Tools'), h('th', {}, 'Last error'), h('th', {}, 'Actions'))),
      h('tbody', {}, rows.map((s) => h('tr', { dataset: { server: s.server } },
        h('td', {}, s.server, s.entry ? h('div', { class: 'muted small' }, h('code', {}, entrySummary(s.entry))) : ''),
        h('td', {}, sourceText(s.source)),
        h('td', {}, h('span', { class: `badge ${s.state === 'ready' ? 'ok' : s.last_error ? 'err' : ''}` }, s.state)),
        h('td', {}, s.transport || ''),
        h('td', {}, (s.tools || []).map((t) => t.name).join(', ')),
        h('td', { class: 'error' }, s.last_error ? `${s.last_error.message} (${s.last_error.code})` : ''),
        h('td', {}, h('div', { class: 'row' }, serverActions(s, editor, rerender))))))));
  }
  body.append(editor);
}

// Where a server comes from, in words.
function sourceText(source) {
  if (!source) return '';
  if (source.kind === 'user') return 'your mcp.json';
  if (source.kind === 'plugin') return `plugin ${source.plugin}`;
  if (source.kind === 'file') return h('span', {}, h('code', {}, source.path), ' (read-only)');
  return 'built in';
}

// A one-line view of an entry as written (`${VAR}` verbatim).
function entrySummary(entry) {
  if (entry.url) return entry.url;
  return [entry.command || '', ...(entry.args || [])].join(' ');
}

// The buttons of one server's row. Any server restarts; the user's own
// are edited and removed; one that asks for an OAuth login logs in.
function serverActions(s, editor, rerender) {
  const login = loginButton(s, rerender);
  const first = login ? [login] : [];
  const restart = h('button', {
    type: 'button',
    'aria-label': `Restart ${s.server}`,
    onclick: async () => {
      restart.disabled = true;
      try {
        const after = await api('POST', `/api/mcp/servers/${encodeURIComponent(s.server)}/restart`);
        toast(`Restarted ${s.server}: ${after.state}.`);
      } catch (e) { toast(errorText(e), 'error'); }
      await rerender();
    },
  }, 'Restart');
  if (!s.editable) return [...first, restart];
  const edit = h('button', { type: 'button', 'aria-label': `Edit ${s.server}`, onclick: () => mcpEditor(editor, s, rerender) }, 'Edit');
  const remove = h('button', {
    type: 'button',
    class: 'danger',
    'aria-label': `Remove ${s.server}`,
    onclick: async () => {
      const choice = await dialog(`Remove ${s.server}?`, h('p', {}, 'It is removed from your mcp.json and stopped.'),
        [{ label: 'Cancel', value: null }, { label: 'Remove', value: 'go', primary: true }]);
      if (choice !== 'go') return;
      try {
        await api('DELETE', `/api/mcp/servers/${encodeURIComponent(s.server)}`);
        toast(`Removed ${s.server}.`);
      } catch (e) { toast(errorText(e), 'error'); }
      await rerender();
    },
  }, 'Remove');
  return [...first, edit, remove, restart];
}

// `KEY=VALUE` (env) or `Name: value` (headers) lines as an object; a
// line without the separator is reported by its number.
function parsePairs(text, sep, what) {
  const out = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line) continue;
    const at = line.indexOf(sep);
    if (at <= 0) throw new Error(`Line ${i + 1}: write ${what}.`);
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

function pairsText(obj, sep) {
  return Object.entries(obj || {}).map(([k, v]) => `${k}${sep}${v}`).join('\n');
}

// The add/edit form, for a new server (`s` null) or one of the user's
// own. Errors show under the field they name (`name`, `entry.<key>`).
function mcpEditor(root, s, rerender) {
  clear(root);
  const entry = (s && s.entry) || {};
  const http = entry.url !== undefined || (entry.type && entry.type !== 'stdio');
  const inputs = {
    name: h('input', { type: 'text', placeholder: 'github', value: s ? s.server : '', disabled: !!s, autocomplete: 'off' }),
    type: h('select', {},
      h('option', { value: 'stdio', selected: !http }, 'stdio (a local command)'),
      h('option', { value: 'streamable-http', selected: http }, 'HTTP (a remote URL)')),
    command: h('input', { type: 'text', placeholder: 'npx', value: entry.command || '', autocomplete: 'off' }),
    args: h('textarea', { rows: 3, placeholder: '-y\n@modelcontextprotocol/server-github' }),
    env: h('textarea', { rows: 3, placeholder: 'GITHUB_TOKEN=${GITHUB_TOKEN}' }),
    url: h('input', { type: 'text', inputmode: 'url', placeholder: 'https://example.com/mcp', value: entry.url || '', autocomplete: 'off' }),
    headers: h('textarea', { rows: 3, placeholder: 'Authorization: Bearer ${API_TOKEN}' }),
    // Where a new server is written, as `evoflux mcp add --scope`.
    scope: h('select', {},
      h('option', { value: 'user', selected: true }, 'Yours (your mcp.json)'),
      h('option', { value: 'project' }, 'This repository (.evoflux/mcp.json, shared with whoever clones it)')),
    // As `evoflux mcp add --force`.
    force: h('input', { type: 'checkbox', id: 'mcp-force' }),
  };
  inputs.args.value = (entry.args || []).join('\n');
  inputs.env.value = pairsText(entry.env, '=');
  inputs.headers.value = pairsText(entry.headers, ': ');
  const problems = {};
  const wrap = (key, label, hint) => {
    const p = h('p', { class: 'error', id: `mcp-err-${key}`, role: 'alert' });
    problems[key] = p;
    inputs[key].setAttribute('aria-describedby', `mcp-err-${key}`);
    inputs[key].dataset.field = key;
    const f = field(label, inputs[key], hint);
    f.append(p);
    return f;
  };
  const general = h('p', { class: 'error', role: 'alert' });
  const stdioPart = h('div', {},
    wrap('command', 'Command', 'One program; a bare name is looked up on PATH.'),
    wrap('args', 'Arguments', 'One per line. ${VAR} is filled in from the environment when the server starts.'),
    wrap('env', 'Environment', 'KEY=VALUE, one per line. Write ${VAR} to keep a secret out of the file.'));
  const httpPart = h('div', {},
    wrap('url', 'URL', 'The server\'s Streamable HTTP endpoint.'),
    wrap('headers', 'Headers', 'Name: value, one per line. Write ${VAR} to keep a token out of the file.'));
  const showTransport = () => {
    const isHttp = inputs.type.value !== 'stdio';
    stdioPart.hidden = isHttp;
    httpPart.hidden = !isHttp;
  };
  inputs.type.addEventListener('change', showTransport);
  showTransport();
  const show = (key, message) => {
    const p = problems[key] || general;
    p.append(h('div', {}, message));
  };
  const save = h('button', {
    type: 'button',
    class: 'primary',
    onclick: async () => {
      for (const p of [...Object.values(problems), general]) clear(p);
      const next = { ...entry };
      let bad = false;
      try {
        if (inputs.type.value === 'stdio') {
          delete next.url; delete next.headers;
          next.type = 'stdio';
          next.command = inputs.command.value.trim();
          const args = inputs.args.value.split('\n').map((a) => a.trim()).filter((a) => a);
          if (args.length || next.args) next.args = args;
          try {
            const env = parsePairs(inputs.env.value, '=', 'KEY=VALUE');
            if (Object.keys(env).length || next.env) next.env = env;
          } catch (e) { show('env', e.message); bad = true; }
        } else {
          delete next.command; delete next.args; delete next.env; delete next.cwd;
          next.type = entry.type === 'http' ? 'http' : 'streamable-http';
          next.url = inputs.url.value.trim();
          try {
            const headers = parsePairs(inputs.headers.value, ':', 'Name: value');
            if (Object.keys(headers).length || next.headers) next.headers = headers;
          } catch (e) { show('headers', e.message); bad = true; }
        }
      } catch (e) { show('', e.message); bad = true; }
      if (bad) return;
      save.disabled = true;
      try {
        const done = s
          ? await api('PUT', `/api/mcp/servers/${encodeURIComponent(s.server)}`, { entry: next })
          : await api('POST', '/api/mcp/servers', {
            name: inputs.name.value.trim(), entry: next, scope: inputs.scope.value, force: inputs.force.checked,
          });
        toast(done.state === 'awaiting-trust'
          ? `Saved ${done.server} to ${done.file}; it starts once you trust the repository's current content.`
          : `Saved ${done.server}: ${done.state}.`);
        await rerender();
      } catch (e) {
        save.disabled = false;
        const named = (f) => (f || '').replace(/^mcpServers\.[^.]*\.?/, 'entry.').replace(/^entry\.?/, '');
        const diags = (e.diagnostics || []).filter((d) => d.severity === 'error');
        if (diags.length) {
          for (const d of diags) show(named(d.locator && d.locator.field), `${d.message} (${d.code})`);
        } else {
          show(e.field === 'name' ? 'name' : named(e.field), errorText(e));
        }
      }
    },
  }, 'Save server');
  const cancel = h('button', { type: 'button', onclick: () => clear(root) }, 'Cancel');
  root.append(h('section', { class: 'card', 'aria-labelledby': 'mcp-editor-title' },
    h('h3', { id: 'mcp-editor-title' }, s ? `Edit ${s.server}` : 'Add an MCP server'),
    h('p', { class: 'hint' }, 'Saved exactly as written; other servers and keys in the file are kept.'),
    wrap('name', 'Name', 'Lowercase letters, digits and hyphens.'),
    s ? '' : wrap('scope', 'Save to', 'A repository\'s servers start once you trust its current content.'),
    s ? '' : h('div', { class: 'field-inline' }, inputs.force, h('label', { for: 'mcp-force' }, 'Replace a server of this name in the same file')),
    wrap('type', 'Transport'),
    stdioPart, httpPart, general,
    h('div', { class: 'row' }, save, cancel)));
  inputs[s ? 'command' : 'name'].focus();
}
