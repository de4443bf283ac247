// The only module that talks to the backend. Errors arrive as {code, message}.
const tauri = () => {
  if (!window.__TAURI__) throw { code: 'no-backend', message: 'The Plandesk backend is not available.' };
  return window.__TAURI__;
};

export function call(command, args = {}) {
  return tauri().core.invoke(command, args);
}

/** What reads a tool call of the run `runId` in full (`run_detail` sends long ones as previews). */
export function wholeToolCall(runId) {
  return (toolCallId) => call('tool_call', { runId, toolCallId });
}

/** A channel for one run's events: chunks, then how the stream ended. */
export function runChannel(onEvent) {
  const channel = new (tauri().core.Channel)();
  channel.onmessage = onEvent;
  return channel;
}

export function listen(event, handler) {
  return tauri().event.listen(event, (e) => handler(e.payload));
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
