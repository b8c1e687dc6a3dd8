// The Preview pane: the dev server a session's `preview` tool runs, shown
// beside the chat through the server's proxy, with Reload and Open in a new
// tab. It follows `preview_started` and `preview_stopped` and, when a page
// opens, the previews already running; the proxied page is sandboxed (an
// origin of its own), so the app the agent wrote cannot read the UI's token.

import { get } from './api.js';
import { h, toast, errorText } from './dom.js';

const FRAME_SANDBOX = 'allow-scripts allow-forms allow-popups allow-modals allow-downloads';

export class PreviewPane {
  // `main`: the page, marked `with-preview` while the pane shows.
  constructor(session, main) {
    this.session = session;
    this.main = main;
    this.shown = null;
    this.frame = h('iframe', { title: 'Preview', sandbox: FRAME_SANDBOX, referrerpolicy: 'no-referrer' });
    this.label = h('span', { class: 'muted preview-label' });
    this.open = h('a', { target: '_blank', rel: 'noopener noreferrer' }, 'Open in new tab');
    const reload = h('button', {
      type: 'button',
      'aria-label': 'Reload the preview',
      // A sandboxed frame's own location cannot be read: load its page
      // again from the proxy.
      onclick: () => { if (this.shown) this.frame.src = this.shown.proxy_path; },
    }, 'Reload');
    const close = h('button', { type: 'button', 'aria-label': 'Hide the preview', onclick: () => this.hide() }, '×');
    this.pane = h('aside', { class: 'preview-pane', 'aria-label': 'Preview', hidden: true },
      h('div', { class: 'row preview-bar' }, h('strong', {}, 'Preview'), this.label,
        h('span', { class: 'spacer' }), reload, this.open, close),
      this.frame);
    main.append(this.pane);
  }

  // Shows the newest running preview, or hides the pane when none runs.
  async refresh() {
    let list;
    try {
      list = await get(`/api/sessions/${this.session}/previews`);
    } catch (e) {
      toast(errorText(e), 'error');
      return;
    }
    const serving = (list.items || []).filter((p) => p.status === 'running' && p.proxy_path);
    const newest = serving[serving.length - 1];
    if (newest) this.show(newest); else this.hide();
  }

  show(preview) {
    const changed = !this.shown || this.shown.proxy_path !== preview.proxy_path;
    this.shown = preview;
    this.label.textContent = `${preview.command} — ${preview.url || ''}`;
    this.open.href = preview.proxy_path;
    if (changed) this.frame.src = preview.proxy_path;
    this.pane.hidden = false;
    this.main.classList.add('with-preview');
  }

  hide() {
    this.pane.hidden = true;
    this.main.classList.remove('with-preview');
  }

  // One event of the session's stream.
  event(type) {
    if (type === 'preview_started' || type === 'preview_stopped') this.refresh();
  }

  remove() {
    this.hide();
    this.pane.remove();
  }
}
