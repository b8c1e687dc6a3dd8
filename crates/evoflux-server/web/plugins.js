// Plugin Center: add (import a package, link a development folder, create
// one), a card per installation with its enabled switch, components and
// MCP runtime state, and the actions its `capabilities` allow — never
// inferred from where it came from. Enabling opens the trust review;
// credentials are a form generated from the declared fields, secrets never
// echoed back; the package editor browses and edits the plugin's files.

import { api, get, query } from './api.js';
import { h, clear, field, dialog, toast, errorText } from './dom.js';

export async function pluginsView(app, rest) {
  if (rest[0] === 'edit') {
    await editorView(app, decodeURIComponent(rest.slice(1).join('/')));
    return;
  }
  const main = app.main;
  const [listed, mcp] = await Promise.all([
    get('/api/plugins'),
    get('/api/mcp/servers').catch(() => ({ items: [] })),
  ]);
  const plugins = listed.items || [];
  main.append(h('div', { class: 'row' }, h('h1', {}, 'Plugins'), h('span', { class: 'spacer' }), addMenu(app)));
  const user = plugins.filter((p) => p.installation.source_type !== 'builtin');
  if (!user.length) {
    main.append(h('div', { class: 'card empty' },
      h('h2', {}, 'No plugins yet'),
      h('p', { class: 'muted' }, 'Import a package, link a folder you are developing, or create a new plugin.')));
  }
  for (const p of plugins) main.append(card(app, p, mcp.items || []));
}

function addMenu(app) {
  const wrap = h('div', { class: 'row' });
  const file = h('input', { type: 'file', accept: '.evoplugin,.zip', hidden: true, 'aria-label': 'Plugin package' });
  file.addEventListener('change', async () => {
    if (!file.files.length) return;
    const form = new FormData();
    form.append('archive', file.files[0], file.files[0].name);
    try {
      await api('POST', '/api/plugins/upload?enabled=false', form);
      toast(`Imported ${file.files[0].name}. It stays off until you enable it.`);
      app.rerender();
    } catch (e) { toast(errorText(e), 'error'); }
    file.value = '';
  });
  const link = async () => {
    const path = h('input', { type: 'text', placeholder: '/home/me/src/my-plugin' });
    const choice = await dialog('Link development folder', field('Folder', path, 'Used in place: edits apply without reinstalling.'),
      [{ label: 'Cancel', value: null }, { label: 'Link', value: 'link', primary: true }]);
    if (!choice || !path.value.trim()) return;
    try {
      await api('POST', '/api/plugins/install', { path: path.value.trim(), mode: 'link' });
      app.rerender();
    } catch (e) { toast(errorText(e), 'error'); }
  };
  const create = async () => {
    const parent = h('input', { type: 'text', placeholder: '/home/me/src' });
    const name = h('input', { type: 'text', placeholder: 'my-plugin' });
    const description = h('input', { type: 'text' });
    const choice = await dialog('Create plugin', h('div', {},
      field('Parent folder', parent), field('Name', name), field('Description', description)),
    [{ label: 'Cancel', value: null }, { label: 'Create', value: 'create', primary: true }]);
    if (!choice) return;
    const dest = `${parent.value.trim().replace(/\/$/, '')}/${name.value.trim()}`;
    try {
      await api('POST', '/api/plugins/create', {
        destination: dest, name: name.value.trim(), description: description.value.trim() || null,
      });
      location.hash = `#/plugins/edit/${encodeURIComponent(dest)}`;
    } catch (e) { toast(errorText(e), 'error'); }
  };
  wrap.append(
    h('span', { class: 'muted' }, 'Add plugin:'),
    file,
    h('button', { type: 'button', onclick: () => file.click() }, 'Import package'),
    h('button', { type: 'button', onclick: link }, 'Link development folder'),
    h('button', { type: 'button', onclick: create }, 'Create plugin'));
  return wrap;
}

function trustBody(inspection) {
  const t = (inspection && inspection.trust) || {};
  const list = (title, items, show) => (items && items.length
    ? h('div', {}, h('h3', {}, title), h('ul', {}, items.map((i) => h('li', {}, show(i)))))
    : '');
  const parts = [
    list('Commands it runs', t.executable_commands, (c) => h('code', {}, [c.executable, ...(c.args || [])].join(' '))),
    list('Remote hosts it contacts', t.remote_hosts, (r) => `${r.host} (${r.server})`),
    list('Environment fields it reads', t.environment_fields, (e) => h('code', {}, e)),
    list('Headers it sends', t.header_names, (n) => h('code', {}, n.name)),
    list('Capabilities', t.capabilities, (c) => `${c.name} (${c.source})`),
  ].filter(Boolean);
  return h('div', { class: 'trust' },
    h('p', {}, 'Review what this plugin can do before you turn it on. Values are never shown here.'),
    parts.length ? parts : h('p', { class: 'muted' }, 'It runs no commands and contacts no hosts.'));
}

function card(app, p, servers) {
  const inst = p.installation;
  const caps = p.capabilities || {};
  const toggle = h('input', {
    type: 'checkbox',
    role: 'switch',
    checked: inst.enabled,
    disabled: !caps.can_disable,
    'aria-label': `${inst.name} enabled`,
  });
  toggle.addEventListener('change', async () => {
    const enable = toggle.checked;
    toggle.checked = !enable;
    try {
      if (enable) {
        const detail = await get(`/api/plugins/${inst.id}`);
        const choice = await dialog(`Trust ${inst.name}?`, trustBody(detail.inspection), [
          { label: 'Keep disabled', value: null },
          { label: 'Trust and enable', value: 'enable', primary: true },
        ]);
        if (choice !== 'enable') return;
      }
      await api('PATCH', `/api/plugins/${inst.id}/enabled`, { enabled: enable });
      app.rerender();
    } catch (e) { toast(errorText(e), 'error'); }
  });
  const mine = servers.filter((s) => s.owner && s.owner.installation === inst.id);
  const components = h('div', { class: 'components' });
  const loadComponents = async () => {
    try {
      const d = await get(`/api/plugins/${inst.id}`);
      const i = d.inspection || {};
      clear(components).append(
        h('h3', {}, 'Components'),
        h('ul', {},
          (i.skills || []).map((s) => h('li', {}, 'Skill ', h('strong', {}, s.name || s.dir), s.valid ? '' : h('span', { class: 'badge err' }, 'invalid'))),
          (i.mcp_servers || []).map((m) => h('li', {}, 'MCP server ', h('strong', {}, m.name)))),
        h('h3', {}, 'MCP runtime'),
        mine.length ? h('ul', {}, mine.map((s) => h('li', {}, h('strong', {}, s.name), ' ',
          h('span', { class: `badge ${s.state === 'ready' ? 'ok' : s.last_error ? 'err' : ''}` }, s.state),
          s.last_error ? h('span', { class: 'error' }, ` ${s.last_error.message}`) : '')))
          : h('p', { class: 'muted' }, inst.enabled ? 'No servers running.' : 'Off while the plugin is disabled.'));
    } catch (e) { components.textContent = errorText(e); }
  };
  const details = h('details', { ontoggle: (e) => { if (e.target.open) loadComponents(); } },
    h('summary', {}, 'Components and runtime'), components);
  const actions = h('div', { class: 'row actions-row' });
  if (p.credentials && p.credentials.supported) {
    actions.append(h('button', { type: 'button', onclick: () => credentialsDialog(app, inst, p.credentials) }, 'Credentials'));
  }
  if (caps.editable) {
    actions.append(h('a', { href: `#/plugins/edit/${encodeURIComponent(inst.root)}` }, 'Edit plugin'));
  }
  if (caps.packable) {
    actions.append(h('button', {
      type: 'button',
      onclick: async () => {
        try {
          const packed = await api('POST', '/api/plugins/pack', { path: inst.root });
          toast(`Packed to ${packed.path}`);
        } catch (e) { toast(errorText(e), 'error'); }
      },
    }, 'Pack'));
  }
  if (caps.updatable) {
    actions.append(h('button', { type: 'button', onclick: () => updateDialog(app, inst) }, 'Update'));
  }
  if (caps.can_uninstall) {
    actions.append(h('button', {
      type: 'button',
      class: 'danger',
      onclick: async () => {
        const keep = h('input', { type: 'checkbox', checked: true, id: `keep-${inst.id}` });
        const choice = await dialog(`Uninstall ${inst.name}?`, h('div', { class: 'row' }, keep,
          h('label', { for: keep.id }, 'Keep its data and credentials (installing it again reattaches them)')),
        [{ label: 'Cancel', value: null }, { label: 'Uninstall', value: 'go', primary: true }]);
        if (choice !== 'go') return;
        try {
          await api('DELETE', `/api/plugins/${inst.id}${query({ remove_data: keep.checked ? 'false' : 'true' })}`);
          app.rerender();
        } catch (e) { toast(errorText(e), 'error'); }
      },
    }, 'Uninstall'));
  }
  const credBadge = p.credentials && p.credentials.supported
    ? h('span', { class: `badge ${p.credentials.configured ? 'ok' : 'warn'}` }, p.credentials.configured ? 'credentials set' : 'credentials needed')
    : null;
  return h('section', { class: 'card plugin', 'aria-label': inst.name, dataset: { id: inst.id } },
    h('div', { class: 'row' },
      h('h2', {}, inst.name), inst.version ? h('span', { class: 'muted' }, inst.version) : '',
      inst.source_type === 'builtin' ? h('span', { class: 'badge' }, 'bundled') : '',
      credBadge, h('span', { class: 'spacer' }),
      h('label', { class: 'row' }, toggle, inst.enabled ? 'Enabled' : 'Disabled')),
    inst.description ? h('p', {}, inst.description) : '',
    details, actions);
}

async function credentialsDialog(app, inst, state) {
  const inputs = new Map();
  const body = h('div', {}, state.error ? h('p', { class: 'error' }, state.error) : '');
  for (const f of state.fields || []) {
    let control;
    if (f.type === 'boolean') {
      control = h('input', { type: 'checkbox', checked: f.value === true });
    } else {
      control = h('input', {
        type: f.type === 'secret' ? 'password' : f.type === 'url' ? 'url' : 'text',
        autocomplete: 'off',
        placeholder: f.type === 'secret' && f.configured ? 'Saved — type to replace' : (f.placeholder || ''),
        // A secret's value is never put back into the page.
        value: f.type === 'secret' ? '' : (f.value ?? ''),
      });
    }
    inputs.set(f.key, { f, control });
    body.append(field(`${f.label}${f.required ? ' (required)' : ''}`, control, f.description || `Given to its servers as ${f.env}.`));
  }
  const choice = await dialog(`Credentials for ${inst.name}`, body, [
    { label: 'Cancel', value: null },
    { label: 'Clear all', value: 'clear' },
    { label: 'Save', value: 'save', primary: true },
  ]);
  try {
    if (choice === 'clear') {
      await api('DELETE', `/api/plugins/${inst.id}/credentials`);
    } else if (choice === 'save') {
      const values = {};
      for (const [key, { f, control }] of inputs) {
        if (f.type === 'boolean') values[key] = control.checked;
        else if (f.type === 'secret') { if (control.value) values[key] = control.value; }
        else values[key] = control.value === '' ? null : control.value;
      }
      await api('PUT', `/api/plugins/${inst.id}/credentials`, { values });
      toast('Credentials saved.');
    } else {
      return;
    }
    app.rerender();
  } catch (e) { toast(errorText(e), 'error'); }
}

async function updateDialog(app, inst) {
  const path = h('input', { type: 'text', placeholder: 'A folder or .evoplugin archive' });
  const file = h('input', { type: 'file', accept: '.evoplugin,.zip' });
  const choice = await dialog(`Update ${inst.name}`, h('div', {},
    field('From a path', path), field('Or upload a package', file),
    h('p', { class: 'hint' }, 'If the new version adds commands, hosts or capabilities, it stays off until you review and enable it again.')),
  [{ label: 'Cancel', value: null }, { label: 'Update', value: 'go', primary: true }]);
  if (choice !== 'go') return;
  try {
    if (file.files.length) {
      const form = new FormData();
      form.append('archive', file.files[0], file.files[0].name);
      await api('POST', `/api/plugins/${inst.id}/update-upload`, form);
    } else if (path.value.trim()) {
      await api('POST', `/api/plugins/${inst.id}/update`, { path: path.value.trim() });
    } else {
      return;
    }
    app.rerender();
  } catch (e) { toast(errorText(e), 'error'); }
}

// ---- the package editor --------------------------------------------------

async function editorView(app, root) {
  const main = app.main;
  const treeList = h('ul', { class: 'tree', 'aria-label': 'Files' });
  const pathLabel = h('code', {}, '');
  const area = h('textarea', { 'aria-label': 'File content', disabled: true, spellcheck: 'false' });
  const save = h('button', { type: 'button', class: 'primary', disabled: true }, 'Save');
  const del = h('button', { type: 'button', class: 'danger', disabled: true }, 'Delete');
  const report = h('div', { class: 'report', role: 'status' });
  let current = null;
  const showInspection = (inspection) => {
    if (!inspection) return;
    const problems = (inspection.diagnostics || []).filter((d) => d.severity === 'error');
    clear(report).append(inspection.valid
      ? h('p', { class: 'muted' }, 'The package is valid.')
      : h('div', { class: 'error' }, h('p', {}, 'The package has problems:'),
        h('ul', {}, problems.map((d) => h('li', {}, `${d.message} (${d.code})`)))));
  };
  const open = async (path) => {
    try {
      const file = await get(`/api/plugins/workspace/file${query({ root, path })}`);
      current = path;
      pathLabel.textContent = path;
      area.value = file.content;
      area.disabled = false;
      save.disabled = false;
      del.disabled = false;
      for (const b of treeList.querySelectorAll('button')) b.setAttribute('aria-current', String(b.dataset.path === path));
    } catch (e) { toast(errorText(e), 'error'); }
  };
  const load = async () => {
    const tree = await get(`/api/plugins/workspace/tree${query({ root })}`);
    clear(treeList);
    for (const e of tree.entries) {
      const depth = e.path.split('/').length - 1;
      treeList.append(h('li', { style: undefined },
        e.kind === 'file'
          ? h('button', { type: 'button', dataset: { path: e.path }, onclick: () => open(e.path) }, `${'  '.repeat(depth)}${e.name}`)
          : h('span', { class: 'muted' }, `${'  '.repeat(depth)}${e.name}${e.kind === 'directory' ? '/' : ' → link'}`)));
    }
  };
  save.addEventListener('click', async () => {
    try {
      const r = await api('PUT', '/api/plugins/workspace/file', { root, path: current, content: area.value });
      showInspection(r.inspection);
      toast(`Saved ${current}`);
    } catch (e) { toast(errorText(e), 'error'); }
  });
  del.addEventListener('click', async () => {
    const choice = await dialog(`Delete ${current}?`, h('p', {}, 'The file is removed from the package.'),
      [{ label: 'Cancel', value: null }, { label: 'Delete', value: 'go', primary: true }]);
    if (choice !== 'go') return;
    try {
      const r = await api('DELETE', `/api/plugins/workspace/entry${query({ root, path: current })}`);
      showInspection(r.inspection);
      current = null;
      area.value = '';
      area.disabled = true;
      save.disabled = true;
      del.disabled = true;
      await load();
    } catch (e) { toast(errorText(e), 'error'); }
  });
  const newEntry = async (kind) => {
    const path = h('input', { type: 'text', placeholder: kind === 'file' ? 'skills/notes/SKILL.md' : 'scripts' });
    const choice = await dialog(kind === 'file' ? 'New file' : 'New folder', field('Path in the package', path),
      [{ label: 'Cancel', value: null }, { label: 'Create', value: 'go', primary: true }]);
    if (choice !== 'go' || !path.value.trim()) return;
    try {
      const r = await api('POST', '/api/plugins/workspace/entry', { root, path: path.value.trim(), kind });
      showInspection(r.inspection);
      await load();
      if (kind === 'file') await open(path.value.trim());
    } catch (e) { toast(errorText(e), 'error'); }
  };
  main.append(
    h('p', {}, h('a', { href: '#/plugins' }, '← Plugins')),
    h('h1', {}, 'Edit plugin'),
    h('p', { class: 'muted' }, root),
    h('div', { class: 'row' },
      h('button', { type: 'button', onclick: () => newEntry('file') }, 'New file'),
      h('button', { type: 'button', onclick: () => newEntry('directory') }, 'New folder')),
    h('div', { class: 'editor' }, h('div', {}, treeList),
      h('div', {}, h('div', { class: 'row' }, pathLabel, h('span', { class: 'spacer' }), save, del), area, report)));
  await load();
}
