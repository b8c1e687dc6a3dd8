// Chat: a new session, and one session's conversation rendered from its
// event stream (or its stored transcript), with tool cards, questions,
// approvals (live only while pending: a decision or the turn's end takes
// their buttons away), cancel, a failed turn's Retry, copy on messages,
// delegated children as nested activity, and a composer that suggests
// `$name` and `/skill:` from the session's skills and `/name` from its
// prompt commands. The conversation
// scrolls in its own box above the composer, so the composer covers none
// of it.

import { api, get, follow, query, token } from './api.js';
import { h, clear, field, toast, errorText } from './dom.js';
import { renderMarkdown, copyButton } from './markdown.js';
import { documentLink, filesHref } from './viewer.js';
import { newSessionTrust } from './trust.js';
import { PreviewPane } from './preview.js';

// ---- new session ---------------------------------------------------------

export async function newSessionView(app) {
  const main = app.main;
  const mode = app.mode;
  const [agents, info] = await Promise.all([
    get(`/api/agents${query({ mode })}`).catch(() => null),
    get('/api/info').catch(() => null),
  ]);
  const listing = ((agents && agents.items) || [])[0] || {};
  const leads = listing.leads || [];
  const served = ((info && info.repositories) || []).map((r) => r.path);
  const lead = h('select', {}, leads.map((n) => h('option', { value: n, selected: n === listing.default_lead }, n)));
  const workspaces = h('textarea', { rows: 2, placeholder: 'One folder per line' }, served.join('\n'));
  const model = h('input', { type: 'text', placeholder: 'provider:model (the agent\'s own when empty)' });
  const message = h('textarea', { rows: 4, placeholder: 'What should the agent do?' });
  // WebBridge: the conversation is tagged for the browser surface, where
  // only MCP servers that declare `webbridge-safe` are offered.
  const webbridge = h('input', { type: 'checkbox', name: 'webbridge' });
  const problem = h('p', { class: 'error', role: 'alert' });
  // What trusting the workspaces' repositories grants, asked before starting.
  const trustBox = h('div', { class: 'trust-prompts' });
  if (mode === 'coding') newSessionTrust(trustBox, workspaces);
  const form = h('form', {
    class: 'card',
    onsubmit: async (e) => {
      e.preventDefault();
      problem.textContent = '';
      const body = { mode };
      if (lead.value) body.lead = lead.value;
      if (model.value.trim()) body.model = model.value.trim();
      if (message.value.trim()) body.message = message.value.trim();
      if (webbridge.checked) body.surface = 'webbridge';
      if (mode === 'coding') {
        body.workspaces = workspaces.value.split('\n').map((s) => s.trim()).filter(Boolean);
      }
      try {
        const created = await api('POST', '/api/sessions', body);
        location.hash = `#/chat/${created.session_id}`;
      } catch (err) {
        problem.textContent = errorText(err);
      }
    },
  },
  h('h2', {}, `New ${mode === 'coding' ? 'Coding' : 'Work'} session`),
  field('Lead', lead, leads.length ? null : 'No lead agent is available in this mode.'),
  mode === 'coding' ? field('Workspaces', workspaces, 'Repositories the session works in.') : '',
  trustBox,
  field('Model', model),
  field('Browser surface (WebBridge)', webbridge,
    'Only MCP servers that declare webbridge-safe are offered in this conversation.'),
  field('Message', message),
  problem,
  h('button', { type: 'submit', class: 'primary' }, 'Start'));
  main.append(h('h1', {}, 'Chat'), form);
}

// ---- one session ---------------------------------------------------------

// The images a user attached or a tool returned (a stored message's
// `media`), shown from their data; another kind, another format or an
// image over the bound shows as its note, as the terminal shows it.
const SHOWN_IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const MAX_SHOWN_IMAGE_CHARS = 4 * 1024 * 1024;
function mediaNodes(media) {
  return (Array.isArray(media) ? media : []).map((m) => {
    const label = `${m.kind}: ${m.mime_type}${m.name ? `, ${m.name}` : ''}`;
    if (m.kind === 'image' && SHOWN_IMAGE_TYPES.includes(m.mime_type)
      && typeof m.data === 'string' && m.data.length <= MAX_SHOWN_IMAGE_CHARS) {
      return h('img', { class: 'media', src: `data:${m.mime_type};base64,${m.data}`, alt: label });
    }
    return h('div', { class: 'muted' }, `[${label}]`);
  });
}

// The images a tool result's event names (`tool_ended`'s `media`: no
// bytes, where the transcript keeps them): each is fetched from the
// stored-media route with the token and shown; `data-media` keeps the
// route. Generic over tools: any result's image shows the same way. The
// others show as their note, which the text above already carries.
function mediaRefNodes(session, refs) {
  return (Array.isArray(refs) ? refs : [])
    .filter((m) => m.kind === 'image' && SHOWN_IMAGE_TYPES.includes(m.mime_type))
    .map((m) => {
      const route = `/api/sessions/${session}/media/${m.seq}/${m.index}`;
      const img = h('img', { class: 'media', alt: m.description, dataset: { media: route } });
      fetch(route, { headers: { Authorization: `Bearer ${token()}` } })
        .then((r) => {
          if (!r.ok) throw new Error(`${m.description}: ${r.status}`);
          return r.blob();
        })
        .then((blob) => {
          const url = URL.createObjectURL(blob);
          img.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
          img.src = url;
        })
        .catch((e) => { img.replaceWith(h('div', { class: 'muted' }, `[${m.description}] (${errorText(e)})`)); });
      return img;
    });
}

/// Renders events into a container; a delegated child gets its own.
class Renderer {
  // `info`: the session record, for links into its workspace's documents.
  constructor(container, session, info) {
    this.container = container;
    this.session = session;
    this.info = info;
    this.assistant = null;
    this.text = '';
    this.tools = new Map();
    this.children = new Map();
    this.question = null;
    this.prompts = new Map();
    // Questions the transcript's calls asked, by call id.
    this.questions = new Map();
    this.frame = 0;
  }

  // Renders what `fill` adds into a detached fragment, then puts it into
  // `parent` before `before` (at the end when null): one layout for a
  // page of history, not one per entry.
  into(parent, fill, before = null) {
    const frag = document.createDocumentFragment();
    const container = this.container;
    this.container = frag;
    try {
      fill();
      this.closeAssistant();
    } finally {
      this.container = container;
    }
    parent.insertBefore(frag, before);
  }

  line(text, kind = 'status') {
    this.container.append(h('p', { class: kind }, text));
  }

  // The user's message, or their answer to the agent's question.
  user(text, answer) {
    this.closeAssistant();
    this.lastInput = text;
    const who = h('div', { class: 'who' }, answer ? 'You answered' : 'You',
      copyButton(answer ? 'your answer' : 'your message', () => text));
    // Only the newest message of the page keeps an Edit button.
    if (this.editButton) { this.editButton.remove(); this.editButton = null; }
    if (!answer && this.onEdit) {
      const edit = this.onEdit;
      this.editButton = h('button', { type: 'button', class: 'copy', 'aria-label': 'Edit and resend your message', onclick: () => edit(text) }, 'Edit');
      who.append(this.editButton);
    }
    const body = h('div', { class: 'body' }, text);
    this.container.append(h('div', { class: `msg user${answer ? ' answer' : ''}` }, who, body));
    return body;
  }

  delta(text) {
    if (!this.assistant) {
      this.assistant = h('div', { class: 'msg assistant', 'aria-live': 'polite' },
        h('div', { class: 'who' }, 'Assistant'), h('div', { class: 'body' }));
      this.container.append(this.assistant);
      this.text = '';
    }
    this.text += text;
    this.sawText = true;
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        if (this.assistant) {
          const body = this.assistant.querySelector('.body');
          // Code is highlighted once the answer is closed, not per frame.
          clear(body).append(renderMarkdown(this.text, { highlight: false }));
        }
      });
    }
  }

  closeAssistant() {
    if (this.assistant) {
      const body = this.assistant.querySelector('.body');
      clear(body).append(renderMarkdown(this.text));
      const source = this.text;
      this.assistant.querySelector('.who').append(copyButton('the answer', () => source));
      this.assistant.removeAttribute('aria-live');
    }
    this.assistant = null;
    this.text = '';
  }

  tool(callId, name, args) {
    this.closeAssistant();
    const status = h('span', { class: 'badge' }, 'running');
    const body = h('div', { class: 'body' },
      h('div', { class: 'muted' }, 'Arguments'),
      h('pre', {}, typeof args === 'string' ? args : JSON.stringify(args, null, 2)));
    let parsed = args;
    if (typeof args === 'string') { try { parsed = JSON.parse(args); } catch { parsed = null; } }
    const link = this.info && parsed && documentLink(this.info, parsed.path);
    if (link) body.append(h('a', { href: link, class: 'doc-link' }, 'Open in the viewer'));
    const card = h('details', { class: 'tool', dataset: { call: callId } },
      h('summary', {}, h('strong', {}, name), ' ', status), body);
    this.container.append(card);
    this.tools.set(callId, { card, status, body });
    return this.tools.get(callId);
  }

  toolEnded(callId, name, isError, content, metadata, status, media) {
    const t = this.tools.get(callId) || this.tool(callId, name, {});
    const cancelled = status === 'cancelled';
    t.status.textContent = cancelled ? 'cancelled' : isError ? 'error' : 'done';
    t.status.className = `badge ${isError ? 'err' : 'ok'}`;
    // A call that ended no longer waits for anyone's decision.
    this.decided(callId, null);
    if (isError) t.card.classList.add('error');
    const images = mediaRefNodes(this.session, media);
    t.body.append(h('div', { class: 'muted' }, 'Result'), h('pre', { class: 'observation' }, content),
      ...images);
    // A screenshot is what the call is for: show it without a click.
    if (images.length) t.card.open = true;
    const artifact = metadata && ((metadata.command && metadata.command.artifact)
      || (metadata.offload && metadata.offload.artifact));
    if (artifact) {
      const full = h('pre', { hidden: true });
      t.body.append(h('button', {
        type: 'button',
        onclick: async () => {
          try {
            const r = await fetch(`/api/sessions/${this.session}/artifact${query({ path: artifact })}`,
              { headers: { Authorization: `Bearer ${token()}` } });
            full.textContent = await r.text();
            full.hidden = false;
          } catch (e) { toast(errorText(e), 'error'); }
        },
      }, 'Show the full output'), full);
    }
  }

  approval(ev) {
    // An MCP server's sampling request is asked on the call it runs in.
    const callId = ev.sampling ? ev.sampling.tool_call_id : ev.call_id;
    const t = this.tools.get(callId) || this.tool(callId, ev.tool, {});
    t.card.open = true;
    const why = ev.sampling ? `The MCP server ${ev.sampling.server} asks the model for an answer (at most ${ev.sampling.max_tokens} tokens):`
      : ev.outside_sandbox ? `Runs outside the sandbox: ${ev.outside_sandbox}`
        : ev.control ? `Changes ${ev.control}` : 'This call needs your approval.';
    const box = h('div', { class: 'prompt', role: 'group', 'aria-label': `Approve ${ev.tool}` }, h('p', {}, why));
    if (ev.sampling) box.append(h('pre', { class: 'observation' }, ev.sampling.preview));
    // Where the command would run, when it is a command.
    if (ev.workdir) box.append(h('p', { class: 'muted' }, 'in ', h('code', {}, ev.workdir)));
    const decide = async (decision) => {
      try {
        await api('POST', `/api/sessions/${this.session}/approvals/${encodeURIComponent(ev.call_id)}`, { decision });
      } catch (e) { toast(errorText(e), 'error'); }
    };
    this.prompts.set(ev.call_id, box);
    // Sampling is asked every time: approve or deny.
    if (ev.sampling) {
      box.append(h('div', { class: 'row' },
        h('button', { type: 'button', class: 'primary', onclick: () => decide('approve') }, 'Approve'),
        h('button', { type: 'button', class: 'danger', onclick: () => decide('deny') }, 'Deny')));
      t.body.prepend(box);
      return;
    }
    // All four decisions; the server narrows a grant wider than the call
    // allows to the widest it does.
    box.append(h('div', { class: 'row' },
      h('button', { type: 'button', class: 'primary', onclick: () => decide('approve') }, 'Approve'),
      h('button', { type: 'button', onclick: () => decide('approve_for_session') }, 'Approve for this session'),
      h('button', { type: 'button', onclick: () => decide('approve_for_workspace') }, 'Approve for this workspace'),
      h('button', { type: 'button', class: 'danger', onclick: () => decide('deny') }, 'Deny')));
    t.body.prepend(box);
  }

  // A running MCP call's progress, on its card's badge.
  progress(ev) {
    const t = this.tools.get(ev.call_id);
    if (!t) return;
    const amount = ev.total ? `${ev.progress}/${ev.total} (${Math.round(Math.min(100, (ev.progress / ev.total) * 100))}%)` : `${ev.progress}`;
    t.status.textContent = `running ${amount}${ev.message ? `: ${ev.message}` : ''}`;
  }

  // A log message of the MCP server a call runs on, inside its card.
  toolLog(ev) {
    const t = this.tools.get(ev.call_id);
    if (!t) { this.line(`MCP server ${ev.server} (${ev.level}): ${ev.message}`); return; }
    const from = ev.logger ? `${ev.server}/${ev.logger}` : ev.server;
    t.body.append(h('div', { class: `log ${ev.level}` }, h('span', { class: 'muted' }, `${from} ${ev.level}: `), ev.message));
  }

  // An MCP server's form: one field per property of its restricted
  // schema (text, number, yes/no, a choice, several choices), answered
  // with Send, Decline or Cancel; the server checks nothing we did not.
  elicitation(ev) {
    const t = this.tools.get(ev.call_id) || this.tool(ev.call_id, ev.server, {});
    t.card.open = true;
    const schema = ev.schema || {};
    const required = new Set(schema.required || []);
    const props = schema.properties || {};
    const inputs = [];
    const form = h('form', { class: 'prompt elicitation', 'aria-label': `Form of ${ev.server}` },
      h('p', {}, h('strong', {}, ev.message)));
    for (const [name, p] of Object.entries(props)) {
      const label = `${p.title || name}${required.has(name) ? ' *' : ''}`;
      const choices = p.enum ? p.enum.map((v, i) => [v, (p.enumNames && p.enumNames[i]) || v])
        : p.oneOf ? p.oneOf.map((o) => [o.const, o.title || o.const]) : null;
      const items = p.type === 'array' && p.items
        ? (p.items.enum ? p.items.enum.map((v) => [v, v]) : (p.items.anyOf || p.items.oneOf || []).map((o) => [o.const, o.title || o.const]))
        : null;
      let input;
      let read;
      if (p.type === 'boolean') {
        input = h('input', { type: 'checkbox', checked: p.default === true });
        read = () => input.checked;
      } else if (items) {
        const defaults = new Set(p.default || []);
        input = h('select', { multiple: true }, items.map(([v, text]) => h('option', { value: v, selected: defaults.has(v) }, text)));
        read = () => Array.from(input.selectedOptions).map((o) => o.value);
      } else if (choices) {
        input = h('select', {}, [required.has(name) ? '' : h('option', { value: '' }, '—')],
          choices.map(([v, text]) => h('option', { value: v, selected: p.default === v }, text)));
        read = () => (input.value === '' ? undefined : input.value);
      } else if (p.type === 'number' || p.type === 'integer') {
        input = h('input', { type: 'number', step: p.type === 'integer' ? '1' : 'any', min: p.minimum, max: p.maximum, value: p.default ?? '' });
        read = () => (input.value === '' ? undefined : Number(input.value));
      } else {
        const kind = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[p.format] || 'text';
        input = h('input', { type: kind, value: p.default ?? '' });
        read = () => (input.value === '' ? undefined : input.value);
      }
      inputs.push([name, read]);
      form.append(field(label, input, p.description));
    }
    const send = async (action) => {
      const body = { action };
      if (action === 'accept') {
        body.content = {};
        for (const [name, read] of inputs) {
          const v = read();
          if (v !== undefined) body.content[name] = v;
        }
      }
      try {
        await api('POST', `/api/sessions/${this.session}/elicitations/${encodeURIComponent(ev.id)}`, body);
      } catch (e) { toast(errorText(e), 'error'); }
    };
    form.onsubmit = (e) => { e.preventDefault(); send('accept'); };
    form.append(h('div', { class: 'row' },
      h('button', { type: 'submit', class: 'primary' }, 'Send'),
      h('button', { type: 'button', onclick: () => send('decline') }, 'Decline'),
      h('button', { type: 'button', class: 'danger', onclick: () => send('cancel') }, 'Cancel')));
    this.prompts.set(ev.id, form);
    t.body.prepend(form);
  }

  // The form `ev.id` was answered (here, elsewhere, by a policy or a
  // cancellation): its fields go, what happened shows.
  elicitationAnswered(ev) {
    const form = this.prompts.get(ev.id);
    if (!form) return;
    this.prompts.delete(ev.id);
    const words = { accept: 'Sent.', decline: 'Declined.', cancel: 'Cancelled.' };
    const by = ev.by === 'cancellation' ? ' (the turn was cancelled)' : ev.by === 'policy' ? ' (nobody could answer)' : '';
    form.replaceWith(h('p', { class: 'muted' }, (words[ev.action] || ev.action) + by));
  }

  // The turn ended: nothing it asked for approval waits any longer (a
  // decision would have come as `approval_decided`), so no live buttons
  // stay — after a reload, in a second browser, or when the process that
  // asked went away.
  expirePrompts() {
    for (const [callId, box] of this.prompts) {
      this.prompts.delete(callId);
      box.replaceChildren(h('p', { class: 'muted' }, 'No longer waiting for a decision.'));
    }
  }

  // The approval of `callId` was decided (by anyone: this page, another
  // client, a cancellation): its buttons go, the decision shows.
  decided(callId, ev) {
    const box = this.prompts.get(callId);
    if (!box) return;
    this.prompts.delete(callId);
    if (!ev) { box.remove(); return; }
    const words = {
      approved: 'Approved.',
      approved_for_session: 'Approved for this session.',
      approved_for_workspace: 'Approved for this workspace.',
      denied: 'Denied.',
    };
    const by = ev.by === 'cancellation' ? ' (the turn was cancelled)' : ev.by === 'policy' ? ' (by policy)' : '';
    box.replaceChildren(h('p', { class: 'muted' }, (words[ev.decision] || ev.decision) + by));
  }

  // `idle`: resolves once the turn that asked has ended (the answer starts
  // the next turn, which the session takes only then); `sent`: after the
  // answer was taken (the page follows the turn it started).
  ask(ev, idle, sent) {
    this.closeAssistant();
    const input = h('input', { type: 'text', 'aria-label': 'Your answer' });
    let sending = false;
    const send = async (text) => {
      if (!text || sending) return;
      sending = true;
      try {
        for (let attempt = 0; ; attempt += 1) {
          if (idle) await idle();
          try {
            const accepted = await api('POST', `/api/sessions/${this.session}/input`, { text });
            if (sent) sent(accepted);
            break;
          } catch (e) {
            if (e.code !== 'session/busy' || attempt >= 20) throw e;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      } catch (e) { toast(errorText(e), 'error'); }
      sending = false;
    };
    const box = h('form', {
      class: 'prompt question',
      onsubmit: (e) => { e.preventDefault(); send(input.value.trim()); },
    },
    h('p', {}, h('strong', {}, ev.question)),
    (ev.options || []).length ? h('div', { class: 'row' }, ev.options.map((o) =>
      h('button', { type: 'button', onclick: () => send(o) }, o))) : '',
    h('div', { class: 'row' }, input, h('button', { type: 'submit', class: 'primary' }, 'Answer')));
    this.container.append(box);
    this.question = box;
    return input;
  }

  child(ev) {
    this.closeAssistant();
    const status = h('span', { class: 'badge' }, 'working');
    const inner = h('div', { class: 'chat' });
    const box = h('details', { class: 'child', open: true },
      h('summary', {}, 'Delegated to ', h('strong', {}, ev.agent), ' ', status), inner);
    this.container.append(box);
    const r = new Renderer(inner, ev.child_session_id);
    this.children.set(ev.call_id, { r, status, box });
  }

  // One event. Returns true when the turn finished.
  event(type, ev, hooks = {}) {
    switch (type) {
      case 'session_started':
        // A new process: what the last one asked for approval waits no more.
        this.expirePrompts();
        if (ev.resumed) this.line(`Resumed on ${ev.model}.`);
        return false;
      case 'turn_started': {
        this.sawText = false;
        // Input while a question is open is its answer.
        const open = this.question;
        if (open && ev.input) {
          this.answered(open);
          this.question = null;
        }
        if (this.retry) { this.retry.remove(); this.retry = null; }
        if (ev.input) this.user(ev.input, !!open);
        if (hooks.busy) hooks.busy(true);
        return false;
      }
      case 'message_delta':
        this.delta(ev.text || '');
        return false;
      case 'tool_started':
        this.tool(ev.call_id, ev.tool, ev.arguments);
        return false;
      case 'approval_requested':
        this.approval(ev);
        return false;
      case 'approval_decided':
        this.decided(ev.call_id, ev);
        return false;
      case 'tool_progress':
        this.progress(ev);
        return false;
      case 'tool_log':
        this.toolLog(ev);
        return false;
      case 'elicitation_requested':
        this.elicitation(ev);
        return false;
      case 'elicitation_answered':
        this.elicitationAnswered(ev);
        return false;
      case 'tool_ended':
        this.toolEnded(ev.call_id, ev.tool, ev.is_error, ev.content, ev.metadata, ev.status, ev.media);
        return false;
      case 'command_ended':
        this.line(`Background command ${ev.is_error ? 'failed' : 'finished'}: ${ev.command}`);
        return false;
      case 'input_requested':
        if (hooks.ask) hooks.ask(ev); else this.ask(ev);
        return false;
      case 'dispatch_started':
        this.child(ev);
        return false;
      case 'child': {
        const c = this.children.get(ev.call_id);
        if (c && ev.event) c.r.event(ev.event.type, ev.event);
        return false;
      }
      case 'dispatch_ended': {
        const c = this.children.get(ev.call_id);
        if (c) {
          c.status.textContent = ev.is_error ? 'failed' : 'done';
          c.status.className = `badge ${ev.is_error ? 'err' : 'ok'}`;
          c.box.open = false;
        }
        return false;
      }
      case 'task_update':
        this.line(ev.message);
        return false;
      case 'turn_completed':
        if (ev.text && !this.assistant && !this.sawText) {
          this.delta(ev.text);
        }
        this.closeAssistant();
        if (ev.status && ev.status !== 'completed' && ev.status !== 'waiting_for_input') {
          this.line(`The turn ended: ${ev.status.replace(/_/g, ' ')}.`);
        }
        this.expirePrompts();
        if (hooks.busy) hooks.busy(false);
        return true;
      case 'turn_cancelled':
        this.closeAssistant();
        this.line('The turn was cancelled.');
        this.expirePrompts();
        if (hooks.busy) hooks.busy(false);
        return true;
      case 'error':
        this.closeAssistant();
        this.line(`${ev.message} (${ev.code})`, 'error');
        return false;
      case 'turn_failed': {
        // The error just before it said why; the turn ends visibly, with a
        // Retry that sends the last message again.
        this.closeAssistant();
        this.expirePrompts();
        const text = this.lastInput;
        const retry = h('div', { class: 'turn-failed', role: 'group', 'aria-label': 'The turn failed' },
          h('p', { class: 'error' }, `The turn failed (${ev.code || 'error'}).`),
          text && hooks.retry ? h('button', { type: 'button', class: 'primary', onclick: () => hooks.retry(text) }, 'Retry') : '');
        this.container.append(retry);
        this.retry = retry;
        if (hooks.busy) hooks.busy(false);
        return true;
      }
      case 'warning':
        this.line(`${ev.message} (${ev.code})`);
        return false;
      case 'mcp_server':
        if (ev.error) this.line(`MCP server ${ev.server}: ${ev.state} — ${ev.error}`);
        return false;
      case 'tools_activated':
        this.line(`Tools turned on: ${(ev.tools || []).join(', ')}`);
        return false;
      case 'context_compacted':
        this.line('Earlier messages were summarized to fit the context.');
        return false;
      case 'sources_applied':
        this.line('Changed sources apply from this turn.');
        return false;
      case 'preview_started':
        this.line(`Preview ${ev.preview_id} serving at ${ev.url} (shown beside the chat).`);
        return false;
      case 'preview_stopped':
        this.line(`Preview ${ev.preview_id} stopped.`);
        return false;
      case 'graph_invalid':
        this.line(ev.message, 'error');
        return false;
      case 'session_stopped':
        this.line('The session stopped.');
        this.expirePrompts();
        if (hooks.busy) hooks.busy(false);
        return true;
      default:
        return false;
    }
  }

  // A stored transcript entry.
  entry(message) {
    if (message.role === 'user') {
      const text = typeof message.content === 'string' ? message.content
        : (message.content || []).map((p) => p.text || '').join('');
      this.user(text).append(...mediaNodes(message.media));
    } else if (message.role === 'assistant') {
      const text = typeof message.content === 'string' ? message.content
        : (message.content || []).map((p) => p.text || '').join('');
      if (text) { this.delta(text); this.closeAssistant(); }
      for (const call of message.tool_calls || []) {
        this.tool(call.id, call.name, call.arguments);
        const asked = this.questions.get(call.id);
        // A call that asked the user shows as the question it was; an
        // open one is asked again from the snapshot's pending inputs.
        if (asked && asked.request && asked.answer !== null && asked.answer !== undefined) {
          this.askedBox(asked.request.question);
        }
      }
    } else if (message.role === 'tool') {
      const t = this.tools.get(message.tool_call_id);
      const content = typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
      if (t) {
        this.toolEnded(message.tool_call_id, '', !!message.is_error, content, null);
        t.body.append(...mediaNodes(message.media));
      }
      const asked = this.questions.get(message.tool_call_id);
      if (asked && this.question) {
        this.answered(this.question);
        this.question = null;
        const answer = asked.answer;
        this.user(typeof answer === 'string' ? answer : (answer && answer.text) || JSON.stringify(answer), true);
      }
    }
  }

  // A question already answered (or being answered now): its text, marked
  // answered once the answer is in.
  askedBox(question) {
    this.closeAssistant();
    const box = h('div', { class: 'prompt question' }, h('p', {}, h('strong', {}, question)));
    this.container.append(box);
    this.question = box;
    return box;
  }

  answered(box) {
    const q = box.querySelector('strong');
    box.replaceChildren(h('p', {}, h('strong', {}, q ? q.textContent : ''), ' ', h('span', { class: 'muted' }, 'answered')));
  }
}

// The composer's attachments: a button and drag and drop upload files into
// the Work session's folder; each shows as a chip until the message goes.
function attachmentTray(id) {
  const uploaded = [];
  const chips = h('ul', { class: 'chips', 'aria-label': 'Attached files' });
  const input = h('input', { type: 'file', multiple: true, hidden: true, 'aria-label': 'Attach files' });
  const draw = () => {
    clear(chips).append(...uploaded.map((name, i) => h('li', { class: 'chip' },
      h('span', {}, name),
      h('button', {
        type: 'button',
        'aria-label': `Leave ${name} out of the message`,
        title: 'Leave out of the message (the file stays in the folder)',
        onclick: () => { uploaded.splice(i, 1); draw(); },
      }, '×'))));
    chips.hidden = !uploaded.length;
  };
  const upload = async (files) => {
    for (const file of files) {
      try {
        const r = await fetch(`/api/sessions/${id}/attachments${query({ name: file.name })}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token()}`, 'Content-Type': 'application/octet-stream' },
          body: file,
        });
        const body = await r.json().catch(() => null);
        if (!r.ok) throw new Error(body && body.message ? `${file.name}: ${body.message}` : `${file.name}: ${r.status}`);
        uploaded.push(body.name);
        draw();
      } catch (e) { toast(errorText(e), 'error'); }
    }
  };
  input.addEventListener('change', () => { upload([...input.files]); input.value = ''; });
  const button = h('button', { type: 'button', onclick: () => input.click() }, 'Attach files', input);
  draw();
  return {
    chips,
    button,
    names: () => [...uploaded],
    clear: () => { uploaded.length = 0; draw(); },
    dropOn: (area) => {
      area.addEventListener('dragover', (e) => {
        if ([...(e.dataTransfer?.types || [])].includes('Files')) { e.preventDefault(); area.classList.add('dropping'); }
      });
      area.addEventListener('dragleave', (e) => { if (e.target === area) area.classList.remove('dropping'); });
      area.addEventListener('drop', (e) => {
        if (!e.dataTransfer || !e.dataTransfer.files.length) return;
        e.preventDefault();
        area.classList.remove('dropping');
        upload([...e.dataTransfer.files]);
      });
    },
    upload,
  };
}

// Older history, a page at a time as the reader scrolls up to it (or asks
// with the button); the reader's place stays where it was.
function olderPages(log, id, session, earlier, signal) {
  if (!earlier) return;
  const more = h('button', { type: 'button' }, 'Show earlier messages');
  const top = h('div', { class: 'older' }, more);
  log.prepend(top);
  let before = earlier;
  let loading = false;
  const seen = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) load();
  }, { root: log, rootMargin: '600px 0px 0px 0px' });
  async function load() {
    if (loading || !before) return;
    loading = true;
    try {
      const page = await get(`/api/sessions/${id}/transcript${query({ before })}`);
      const r = new Renderer(null, id, session);
      r.questions = new Map((page.questions || []).map((q) => [q.tool_call_id, q]));
      const height = log.scrollHeight;
      const from = log.scrollTop;
      r.into(log, () => { for (const e of page.transcript || []) r.entry(e.message); }, top.nextSibling);
      log.scrollTop = from + (log.scrollHeight - height);
      before = page.earlier;
      if (!before) { seen.disconnect(); top.remove(); }
    } catch (e) {
      if (!signal.aborted) toast(errorText(e), 'error');
    }
    loading = false;
    // Still near the top (a short page): the next one.
    if (before && !signal.aborted && log.scrollTop < 600) setTimeout(load, 0);
  }
  more.addEventListener('click', load);
  seen.observe(top);
  signal.addEventListener('abort', () => seen.disconnect());
}

async function loadSkills(mode) {
  try {
    const listed = await get(`/api/skills${query({ mode })}`);
    return (listed.items || []).filter((s) => s.valid && s.manual
      && (s.effective_modes || []).includes(mode)).map((s) => ({ name: s.name, description: s.description }));
  } catch {
    return [];
  }
}

// The session's prompt commands (`/name`: Claude Code commands, codex
// prompts, MCP prompts), asked for once, when `/` is first typed.
function promptCommands(id) {
  let loaded = null;
  let items = [];
  return () => {
    if (!loaded) {
      loaded = get(`/api/sessions/${id}/commands`)
        .then((r) => { items = r.items || []; })
        .catch(() => { items = []; });
    }
    return { items, loaded };
  };
}

// The composer's `$name` / `/skill:name` suggestions, and `/name` of the
// session's prompt commands at the start of the message.
function suggestions(textarea, skills, commands) {
  const list = h('ul', { class: 'suggest', role: 'listbox', id: 'skill-suggestions', hidden: true });
  let items = [];
  let active = 0;
  const word = () => {
    const upto = textarea.value.slice(0, textarea.selectionStart);
    if (commands && /^\/[\w:.-]*$/.test(upto) && !upto.startsWith('/skill:')) return upto;
    const m = upto.match(/(^|\s)(\$[\w-]*|\/skill:[\w-]*|\/sk[a-z]*)$/);
    return m ? m[2] : null;
  };
  // A prompt command at the start: `/name` with its argument hint.
  const commandItems = (w) => {
    const listed = commands();
    if (!listed.items.length) listed.loaded.then(() => { if (word() === w) show(); });
    return listed.items.filter((c) => `/${c.name}`.startsWith(w)).map((c) => ({
      name: c.name,
      insert: `/${c.name} `,
      description: [c.argument_hint, c.description].filter(Boolean).join(' — '),
    }));
  };
  const close = () => { list.hidden = true; items = []; textarea.setAttribute('aria-expanded', 'false'); };
  const pick = (i) => {
    const w = word();
    if (!w || !items[i]) return;
    const prefix = w.startsWith('$') ? '$' : '/skill:';
    const start = textarea.selectionStart - w.length;
    const text = items[i].insert || `${prefix}${items[i].name} `;
    textarea.value = `${textarea.value.slice(0, start)}${text}${textarea.value.slice(textarea.selectionStart)}`;
    const at = start + text.length;
    textarea.setSelectionRange(at, at);
    close();
    textarea.focus();
  };
  const show = () => {
    const w = word();
    if (!w) { close(); return; }
    const typed = w.startsWith('$') ? w.slice(1) : w.startsWith('/skill:') ? w.slice(7) : '';
    const asCommand = commands && w.startsWith('/') && !w.startsWith('/skill:');
    const skillsToo = !asCommand || '/skill:'.startsWith(w);
    items = [
      ...(asCommand ? commandItems(w) : []),
      ...(skillsToo ? skills().filter((s) => s.name.startsWith(typed)) : []),
    ].slice(0, 20);
    if (!items.length) { close(); return; }
    active = Math.min(active, items.length - 1);
    clear(list).append(...items.map((s, i) => h('li', {
      role: 'option',
      id: `sugg-${i}`,
      'aria-selected': String(i === active),
      onmousedown: (e) => { e.preventDefault(); pick(i); },
    }, h('strong', {}, s.name), ' ', h('span', { class: 'muted' }, s.description))));
    list.hidden = false;
    textarea.setAttribute('aria-expanded', 'true');
    textarea.setAttribute('aria-activedescendant', `sugg-${active}`);
  };
  textarea.setAttribute('role', 'combobox');
  textarea.setAttribute('aria-controls', 'skill-suggestions');
  textarea.setAttribute('aria-autocomplete', 'list');
  textarea.setAttribute('aria-expanded', 'false');
  textarea.addEventListener('input', () => { active = 0; show(); });
  textarea.addEventListener('keydown', (e) => {
    if (list.hidden) return;
    if (e.key === 'ArrowDown') { e.preventDefault(); active = (active + 1) % items.length; show(); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); active = (active + items.length - 1) % items.length; show(); }
    else if (e.key === 'Enter' || e.key === 'Tab') { e.preventDefault(); e.stopImmediatePropagation(); pick(active); }
    else if (e.key === 'Escape') { e.preventDefault(); close(); }
  });
  textarea.addEventListener('blur', () => setTimeout(close, 100));
  return list;
}

// The delegation tree: this session, then every session below it nested
// under the one that dispatched it (`sessions show`'s tree). It starts from
// the snapshot's depth-first `tree` and grows from `dispatch_started`
// events at any depth (they arrive wrapped in `child` events, one per
// level), so it reads the same live and after a reload. An item's
// `aria-level` is its dispatch depth plus one (this session is level 1);
// `data-depth` is the depth itself.
class DispatchTree {
  constructor(root, lead, entries) {
    this.list = h('ul', { class: 'dispatch-tree', 'aria-label': 'Delegation tree' });
    const below = h('ul', {});
    this.list.append(h('li', { 'aria-level': 1, 'aria-current': 'page', dataset: { session: root, depth: 0 } },
      h('strong', {}, lead || 'lead'), ' ', h('span', { class: 'muted' }, '(this session)'), below));
    this.summary = h('summary', {});
    this.box = h('details', { class: 'card dispatch-tree', open: true }, this.summary, this.list);
    // The list below each session, by its id.
    this.below = new Map([[root, below]]);
    this.count = 0;
    // Depth first: each entry's parent is the last one a level up.
    const path = [root];
    for (const e of entries) {
      const s = e.session || {};
      path.length = Math.max(1, Math.min(path.length, e.depth));
      this.add(s.id, path[path.length - 1], s.lead || 'agent', e.depth);
      path.push(s.id);
    }
    this.box.hidden = this.count === 0;
  }

  add(id, parent, agent, depth) {
    if (!id || this.below.has(id)) return;
    const list = this.below.get(parent);
    if (!list) return;
    const nested = h('ul', {});
    list.append(h('li', { 'aria-level': depth + 1, dataset: { session: id, depth } },
      h('a', { href: `#/chat/${id}`, title: `Session ${id}` }, agent), nested));
    this.below.set(id, nested);
    this.count += 1;
    this.summary.textContent = `Delegated to ${this.count} session${this.count === 1 ? '' : 's'}`;
    this.box.hidden = false;
  }

  // One event of the session's stream.
  event(type, ev) {
    while (type === 'child' && ev && ev.event) { ev = ev.event; type = ev.type; }
    if (type === 'dispatch_started' && ev) {
      this.add(ev.child_session_id, ev.parent_session_id, ev.agent, ev.depth);
    }
  }
}

export async function chatView(app, id) {
  const main = app.main;
  const shown = await get(`/api/sessions/${id}/snapshot`);
  const session = shown.session;
  const mode = session.workspace && session.workspace.mode ? session.workspace.mode : app.mode;
  const status = h('span', { class: 'status', role: 'status' }, '');
  const cancel = h('button', { type: 'button', class: 'danger', hidden: true }, 'Cancel turn');
  const log = h('div', { class: 'chat', id: 'conversation', role: 'region', 'aria-label': 'Conversation', tabindex: '0' });
  const textarea = h('textarea', { 'aria-label': 'Message', placeholder: 'Message the agent — $skill or /skill:name to pick a skill' });
  let skills = [];
  const list = suggestions(textarea, () => skills, promptCommands(id));
  const send = h('button', { type: 'submit', class: 'primary' }, 'Send');
  const renderer = new Renderer(log, id, session);
  const tree = new DispatchTree(id, session.lead, shown.tree || []);
  // The sidebar follows the open session's mode.
  if (app.followMode) app.followMode(mode);
  let busy = false;
  // Who waits for the running turn to end (an answer to its question).
  let idleWaiters = [];
  const idle = () => (busy ? new Promise((r) => idleWaiters.push(r)) : Promise.resolve());
  const setBusy = (b) => {
    if (busy !== b) app.refreshSessions();
    busy = b;
    status.textContent = b ? 'Working…' : '';
    cancel.hidden = !b;
    if (!b) { const w = idleWaiters; idleWaiters = []; w.forEach((r) => r()); }
  };
  const sendMessage = async (text) => {
    const accepted = await api('POST', `/api/sessions/${id}/messages`, { text });
    // A page showing the stored transcript follows from what the request
    // caused, not from the session's first event.
    ensureFollowing(accepted && accepted.after_event);
  };
  cancel.addEventListener('click', async () => {
    try { await api('POST', `/api/sessions/${id}/cancel`); } catch (e) { toast(errorText(e), 'error'); }
  });
  // Files attached to the next message (a Work session's folder holds
  // them once uploaded); the message names them.
  const attachments = mode === 'work' ? attachmentTray(id) : null;
  const composer = h('form', {
    class: 'composer',
    onsubmit: async (e) => {
      e.preventDefault();
      const typed = textarea.value.trim();
      const files = attachments ? attachments.names() : [];
      if (!typed && !files.length) return;
      const text = files.length
        ? `${typed}${typed ? '\n\n' : ''}Attached (in the session's folder): ${files.map((f) => `\`${f}\``).join(', ')}`
        : typed;
      try {
        await sendMessage(text);
        textarea.value = '';
        if (attachments) attachments.clear();
      } catch (err) { toast(errorText(err), 'error'); }
    },
  }, list, attachments ? attachments.chips : '', textarea,
  h('div', { class: 'row' }, send, cancel, attachments ? attachments.button : '', h('span', { class: 'spacer' }), status));
  if (attachments) attachments.dropOn(main);
  // Edit and resend: the last message back in the composer, to send
  // corrected as the next message.
  renderer.onEdit = (text) => {
    textarea.value = text;
    textarea.focus();
    textarea.setSelectionRange(text.length, text.length);
  };
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && list.hidden) { e.preventDefault(); composer.requestSubmit(); }
  });
  main.classList.add('fill');
  // Why each MCP server the session's surface hides is not offered.
  const hidden = (shown.mcp_hidden || []).length
    ? h('details', { class: 'card mcp-hidden' },
      h('summary', {}, `${shown.mcp_hidden.length} MCP server(s) hidden in this WebBridge conversation`),
      h('ul', {}, shown.mcp_hidden.map((d) => h('li', {}, h('code', {}, d.code), ' ', d.message))))
    : '';
  main.append(
    h('div', { class: 'row chat-head' },
      h('h1', {}, session.title || session.lead || 'Session'),
      h('span', { class: 'badge' }, mode === 'coding' ? 'Coding' : 'Work'),
      session.surface === 'webbridge'
        ? h('span', { class: 'badge', title: 'Tagged for the browser surface: only webbridge-safe MCP servers are offered' }, 'WebBridge')
        : '',
      h('span', { class: 'muted' }, session.model || ''),
      h('span', { class: 'spacer' }),
      h('a', { href: filesHref(id, 0, '') }, 'Files')),
    hidden, tree.box,
    log, composer);
  loadSkills(mode).then((s) => { skills = s; });

  const hooks = {
    busy: setBusy,
    ask: (ev) => {
      const input = renderer.ask(ev, idle, (accepted) => ensureFollowing(accepted && accepted.after_event));
      input.focus();
    },
    retry: async (text) => {
      try { await sendMessage(text); } catch (err) { toast(errorText(err), 'error'); }
    },
  };
  const controller = new AbortController();
  // The session's dev servers, beside the chat.
  const previews = new PreviewPane(id, main);
  previews.refresh();
  app.teardown = () => {
    controller.abort();
    grown.disconnect();
    keepEnd.disconnect();
    previews.remove();
    main.classList.remove('fill');
  };
  // The transcript scrolls in its own box above the composer, so the
  // composer never covers it; it follows the end while the reader is there.
  // Only the reader scrolling up lets go of the end (content growing
  // under a programmatic scroll does not).
  let stuck = true;
  let lastTop = 0;
  const toEnd = () => { stuck = true; log.scrollTop = log.scrollHeight; lastTop = log.scrollTop; };
  log.addEventListener('scroll', () => {
    const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    if (log.scrollTop < lastTop - 2) stuck = atEnd;
    else if (atEnd) stuck = true;
    lastTop = log.scrollTop;
  });
  const grown = new MutationObserver(() => { if (stuck) toEnd(); });
  grown.observe(log, { childList: true, subtree: true, characterData: true });
  const keepEnd = new ResizeObserver(() => { if (stuck) toEnd(); });
  keepEnd.observe(log);
  // Follows the session's events from `from` (the snapshot's seam, or
  // what a request returned); the stream resumes itself after a drop.
  let following = false;
  const ensureFollowing = (from = 0) => {
    if (following) return;
    following = true;
    follow(id, from, (e) => {
      previews.event(e.type);
      tree.event(e.type, e.data || {});
      return renderer.event(e.type, e.data || {}, hooks);
    }, controller.signal)
      .catch((err) => toast(errorText(err), 'error'))
      .finally(() => { following = false; });
  };
  // The snapshot renders once, detached from the page; its last turn (and
  // what follows) arrives as events after `after_event`.
  renderer.questions = new Map((shown.questions || []).map((q) => [q.tool_call_id, q]));
  renderer.into(log, () => {
    for (const entry of shown.transcript || []) renderer.entry(entry.message);
  });
  const open = (shown.pending_inputs || []).find((p) => p.answer === null);
  if (open && open.request) hooks.ask({ call_id: open.tool_call_id, question: open.request.question, options: open.request.options });
  toEnd();
  olderPages(log, id, session, shown.earlier, controller.signal);
  ensureFollowing(shown.after_event);
  if (shown.busy) setBusy(true);
  textarea.focus();
}
