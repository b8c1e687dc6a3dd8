// The HTTP API client: the bearer token, JSON requests with the API's one
// error shape, and the session event stream (server-sent events read with
// fetch, so the token goes in a header and `Last-Event-ID` resumes).

const TOKEN_KEY = 'evoflux.token';

export function token() {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  const fromUrl = hash.get('token');
  if (fromUrl) {
    localStorage.setItem(TOKEN_KEY, fromUrl);
    history.replaceState(null, '', location.pathname + '#/chat');
  }
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  localStorage.setItem(TOKEN_KEY, value);
}

export function forgetToken() {
  localStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.field = body && body.field;
    this.diagnostics = (body && body.diagnostics) || [];
  }
}

export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  let payload;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(path, { method, headers, body: payload });
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = { message: text }; }
  if (!response.ok) throw new ApiError(response.status, json);
  return json;
}

export const get = (path) => api('GET', path);

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    for (const item of Array.isArray(v) ? v : [v]) q.append(k, item);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// Follows a session's events from after `lastId`, calling `onEvent` with
// {id, type, data} and dispatching each on `window` as an
// `evoflux:session-event` ({session, event}); reconnects (resuming from the
// last id seen) until `signal` aborts or the session stops.
export async function follow(sessionId, lastId, onEvent, signal) {
  let last = lastId || 0;
  let delay = 250;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: `Bearer ${token()}`, Accept: 'text/event-stream' };
      if (last) headers['Last-Event-ID'] = String(last);
      const response = await fetch(`/api/sessions/${sessionId}/events`, { headers, signal });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        throw new ApiError(response.status, body);
      }
      delay = 250;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = { id: 0, type: '', data: null };
          for (const line of frame.split('\n')) {
            if (line.startsWith('id:')) event.id = Number(line.slice(3).trim());
            else if (line.startsWith('event:')) event.type = line.slice(6).trim();
            else if (line.startsWith('data:')) {
              try { event.data = JSON.parse(line.slice(5).trim()); } catch { event.data = null; }
            }
          }
          if (!event.type) continue;
          if (event.id) last = event.id;
          onEvent(event);
          // Other parts of the page (the sidebar's session list) hear what
          // the followed session says too.
          window.dispatchEvent(new CustomEvent('evoflux:session-event', { detail: { session: sessionId, event } }));
          if (event.type === 'session_stopped') return last;
        }
      }
    } catch (e) {
      if (signal.aborted) return last;
      if (e instanceof ApiError && (e.status === 404 || e.status === 401)) throw e;
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
  return last;
}
