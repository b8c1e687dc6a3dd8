// Provenance: `/api/info` as a page — every slot's winner with its source,
// layer and owner, every shadowed or disabled candidate, the routes and
// the diagnostics: why each tool, skill, agent and route is here.

import { get } from './api.js';
import { h } from './dom.js';

function owner(o) {
  if (!o) return '';
  switch (o.kind) {
    case 'framework': return `framework (${o.feature || ''})`;
    case 'plugin': return `plugin ${o.name || ''}`;
    case 'application': return `${o.root || ''} ${o.folder || ''}`.trim();
    default: return o.kind || '';
  }
}

function sourceCells(src) {
  if (!src) return [h('td', {}), h('td', {}), h('td', {})];
  return [
    h('td', {}, h('code', {}, src.logical_path || src.slot || '')),
    h('td', {}, src.layer || ''),
    h('td', {}, owner(src.owner)),
  ];
}

function section(title, entries, extra = () => []) {
  if (!entries || !entries.length) return null;
  return h('section', { class: 'card', 'aria-label': title },
    h('h2', {}, `${title} (${entries.length})`),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Source'), h('th', {}, 'Layer'), h('th', {}, 'Owner'), h('th', {}, ''))),
      h('tbody', {}, entries.map((e) => h('tr', {},
        h('td', {}, h('strong', {}, e.name || (e.source && e.source.slot) || '')),
        ...sourceCells(e.source),
        h('td', {}, extra(e)))))));
}

export async function provenanceView(app) {
  const info = await get('/api/info');
  const main = app.main;
  const diags = (info.diagnostics && info.diagnostics.items) || [];
  main.append(h('h1', {}, 'Provenance'),
    h('p', { class: 'muted' }, `Graph ${String(info.graph_hash || '').slice(0, 12)} · ${info.status}. Each slot is served by one winning source; the others are listed below it.`));
  main.append(h('section', { class: 'card', 'aria-label': 'Diagnostics' },
    h('h2', {}, `Diagnostics (${diags.length})`),
    diags.length ? h('ul', {}, diags.map((d) => h('li', { class: d.severity === 'error' ? 'error' : '' },
      `${d.severity}: ${d.message} `, h('code', {}, d.code),
      d.locator && (d.locator.file || d.locator.slot) ? h('span', { class: 'muted' }, ` — ${d.locator.file || d.locator.slot}`) : '')))
      : h('p', { class: 'muted' }, 'None.')));
  const badge = (text, kind = '') => h('span', { class: `badge ${kind}` }, text);
  main.append(
    section('Tools', info.tools && info.tools.entries, (t) => [
      t.runnable === false ? badge('not runnable', 'warn') : '',
      t.lead_only ? badge('lead only') : '',
      (t.modes || []).join(', ')]),
    section('Skills', info.skills && info.skills.entries),
    section('Agents', info.agents && info.agents.entries),
    section('Workers', info.workers && info.workers.entries),
    section('MCP connections', info.connections && info.connections.entries),
    section('Fleets', info.fleets && info.fleets.entries),
    section('Schedules', info.schedules && info.schedules.entries));
  const composition = info.composition || [];
  if (composition.length) {
    main.append(h('section', { class: 'card', 'aria-label': 'Shadowed and disabled' },
      h('h2', {}, `Shadowed and disabled candidates (${composition.length})`),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Slot'), h('th', {}, 'Candidate'), h('th', {}, 'Layer'), h('th', {}, 'Owner'), h('th', {}, 'State'))),
        h('tbody', {}, composition.map((c) => h('tr', {},
          h('td', {}, h('code', {}, c.slot)),
          h('td', {}, h('code', {}, c.logical_path)),
          h('td', {}, c.layer),
          h('td', {}, owner(c.owner)),
          h('td', {}, c.winner_source_id ? `${c.kind} by ${c.winner_source_id}` : c.kind)))))));
  }
  const routes = (info.routes && info.routes.effective) || [];
  main.append(h('section', { class: 'card', 'aria-label': 'Routes' },
    h('h2', {}, `Routes (${routes.length})`),
    h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'Method'), h('th', {}, 'Path'), h('th', {}, 'Action'), h('th', {}, 'Channel'))),
      h('tbody', {}, routes.map((r) => h('tr', {},
        h('td', {}, r.method), h('td', {}, h('code', {}, r.path)),
        h('td', {}, r.action && (r.action.endpoint || r.action.agent || r.action.kind)),
        h('td', {}, h('code', {}, r.source_id))))))));
}
