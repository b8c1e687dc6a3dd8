// "Log in" for an MCP server over HTTP that asks for an OAuth login
// (state `needs-login`). The server starts the login and returns the
// authorization server's page, opened in a new tab; the authorization
// server sends that tab back to evoflux's callback, which stores the
// tokens and restarts the server. Meanwhile this page watches the
// server's state and shows the list again once it has changed.

import { api, get } from './api.js';
import { h, toast, errorText } from './dom.js';

const POLL_MS = 2000;

// The button for one server's row, or null when it needs no login.
export function loginButton(s, rerender) {
  if (s.state !== 'needs-login') return null;
  const button = h('button', {
    type: 'button',
    class: 'primary',
    'aria-label': `Log in to ${s.server}`,
    onclick: async () => {
      button.disabled = true;
      // Opened now, inside the click, so no popup blocker stops it; the
      // address comes once the server has started the login.
      const tab = window.open('', '_blank');
      if (tab) tab.opener = null;
      let start;
      try {
        start = await api('POST', `/api/mcp/servers/${encodeURIComponent(s.server)}/login`);
      } catch (e) {
        if (tab) tab.close();
        toast(errorText(e), 'error');
        button.disabled = false;
        return;
      }
      if (tab) {
        tab.location.href = start.authorization_url;
        toast(`Finish logging in to ${s.server} in the new tab.`);
      } else {
        // Blocked anyway: a link the user opens.
        button.replaceWith(h('a', {
          href: start.authorization_url, target: '_blank', rel: 'noopener noreferrer',
        }, `Open the login for ${s.server}`));
      }
      await watch(s.server, start.expires_in_secs * 1000, button, rerender);
    },
  }, 'Log in');
  return button;
}

// Polls the server's state until it leaves `needs-login` (the callback
// restarted it), the login expires, or the list is gone; then shows the
// list again.
async function watch(server, limitMs, anchor, rerender) {
  const until = Date.now() + limitMs;
  while (Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (!document.body.contains(anchor) && !document.querySelector(`tr[data-server="${CSS.escape(server)}"]`)) return;
    let now;
    try {
      now = await get(`/api/mcp/servers/${encodeURIComponent(server)}`);
    } catch { continue; }
    if (now.state !== 'needs-login') {
      toast(`${server}: ${now.state}.`);
      await rerender();
      return;
    }
  }
  await rerender();
}
