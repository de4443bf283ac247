// The only module that talks to the backend. Errors arrive as {code, message}. In the desktop
// app that is Tauri's IPC; in a browser (the web review of `plandesk serve`) it is HTTP: each
// command a POST to /api/<command> with the session's cookie, events one server-sent stream.
import { forgetDrafts } from './drafts.js';

const tauri = () => window.__TAURI__;

/** Whether this page is the web review in a browser (no desktop app behind it). */
export const inBrowser = () => !tauri();

export function call(command, args = {}) {
  if (tauri()) return tauri().core.invoke(command, args);
  return webCall(command, args);
}

async function webCall(command, args) {
  // A run's channel does not cross HTTP: its end is said once the command is answered.
  const { onEvent, ...rest } = args;
  let response;
  try {
    response = await fetch(`/api/${encodeURIComponent(command)}`, {
      method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rest),
    });
  } catch {
    throw { code: 'offline', message: 'The Plandesk server cannot be reached. Check the connection and try again.' };
  }
  const body = await response.json().catch(() => null);
  if (response.status === 401) signedOut();
  if (!response.ok) throw body && body.message ? body : { code: 'http', message: `The server answered ${response.status}.` };
  if (onEvent && onEvent.web) {
    const runId = rest.runId || (rest.request && rest.request.runId);
    setTimeout(() => onEvent.web({ event: 'ended', data: { runId, status: null } }));
  }
  return body;
}

/** The session ended (signed out, revoked, expired): the page goes back to signing in, and
 * what was typed here is not left for whoever signs in next. */
export function signedOut() {
  forgetDrafts();
  location.replace('/?signin=1');
}

let events = null;
const listeners = [];
let retry = 1000;

/** The server's event stream, opened on the first listener. A stream the browser gave up on
 * (the server restarted and refused it, or was away too long) is opened again with backoff,
 * after a command has said whether this browser is still signed in (401: to sign-in). */
function eventSource() {
  if (!events) {
    events = new EventSource('/api/events');
    events.addEventListener('signed-out', signedOut);
    events.addEventListener('open', () => { retry = 1000; });
    for (const [event, listener] of listeners) events.addEventListener(event, listener);
    events.addEventListener('error', () => {
      if (events.readyState !== EventSource.CLOSED) return; // the browser reconnects itself
      events = null;
      setTimeout(() => webCall('set_viewing', {}).then(eventSource, eventSource), retry);
      retry = Math.min(retry * 2, 30000);
    });
  }
  return events;
}

/** What reads a tool call of the run `runId` in full (`run_detail` sends long ones as previews). */
export function wholeToolCall(runId) {
  return (toolCallId) => call('tool_call', { runId, toolCallId });
}

/** A channel for one run's events: chunks, then how the stream ended. */
export function runChannel(onEvent) {
  if (!tauri()) return { web: onEvent };
  const channel = new (tauri().core.Channel)();
  channel.onmessage = onEvent;
  return channel;
}

export function listen(event, handler) {
  if (tauri()) return tauri().event.listen(event, (e) => handler(e.payload));
  const listener = (e) => handler(JSON.parse(e.data));
  listeners.push([event, listener]);
  eventSource().addEventListener(event, listener);
  return Promise.resolve(() => {
    listeners.splice(listeners.findIndex(([, l]) => l === listener), 1);
    events?.removeEventListener(event, listener);
  });
}

/**
 * For what is read again and again (a list at each change of its filter or of the inbox):
 * call the returned `begin` as a read starts; the check it returns says whether that read is
 * still the newest, so that an answer overtaken by a newer read's is never drawn.
 */
export function newestRead() {
  let begun = 0;
  return () => {
    const read = ++begun;
    return () => read === begun;
  };
}

/** A message for any error a command may throw. */
export function describe(error) {
  if (error && typeof error === 'object' && 'message' in error) return error.message;
  return String(error);
}
