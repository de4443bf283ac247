// A run's transcript: built from stored items, then extended live from chunks. Elements are only
// ever appended or updated in place, so nothing jumps while the model streams.
import { h, shorten } from './dom.js';

function pretty(value) {
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2);
}

function argSummary(args) {
  if (args && typeof args === 'object') {
    if (typeof args.path === 'string') return args.path;
    return shorten(JSON.stringify(args), 80);
  }
  return shorten(String(args ?? ''), 80);
}

/** What a tool result says, for its one-line summary. */
function resultSummary(result) {
  if (result && typeof result === 'object') {
    if (typeof result.content === 'string') return shorten(result.content, 90);
    if (typeof result.message === 'string') return shorten(result.message, 90);
  }
  return shorten(pretty(result), 90);
}

/** "12 KB", "1.4 MB". */
function size(bytes) {
  if (bytes < 1000 * 1000) return `${Math.round(bytes / 1000)} KB`;
  return `${(bytes / 1000 / 1000).toFixed(1)} MB`;
}

/**
 * Makes `details` (a tool call's line, whose `pre` shows a preview of `fullBytes`) show the
 * whole value the first time it is opened: `whole()` fetches it. A line with no `fullBytes`
 * shows its value whole already, and is left as it is.
 */
function wholeOnOpen(details, fullBytes, whole) {
  if (!fullBytes) return;
  const pre = details.querySelector('pre');
  const note = h('div', { class: 'preview-note' }, `The start of ${size(fullBytes)}: all of it shows when this is opened.`);
  pre.before(note);
  let asked = false;
  details.addEventListener('toggle', () => {
    if (!details.open || asked) return;
    asked = true;
    note.textContent = `Loading all ${size(fullBytes)}…`;
    whole().then((value) => {
      pre.textContent = pretty(value);
      note.remove();
    }, (e) => {
      asked = false; // opening it again tries again
      note.textContent = `Only the start is shown: the rest could not be read (${e && e.message ? e.message : e}).`;
    });
  });
}

/** Chunks sent only once the model's turn before them is stored. */
const AFTER_TURN = new Set(['tool-result', 'tool-error', 'tool-call-suspended', 'tool-call-approval', 'tool-output-denied',
  'step-finish', 'finish']);

export class Transcript {
  constructor() {
    this.el = h('div', { class: 'transcript', 'aria-live': 'polite', 'aria-label': 'Transcript' });
    this.texts = new Map(); // text id -> element
    this.calls = new Map(); // tool call id -> details element
    this.unstored = []; // resolves a promise each, once the model's turn so far is stored
  }

  /** Items as `run_detail` returns them; long arguments and results come as previews (their
   * `fullBytes` says how long they are), which `whole(toolCallId)` reads in full when opened. */
  load(items, whole) {
    for (const item of items) {
      switch (item.kind) {
        case 'user': this.user(item.text); break;
        case 'assistant': this.el.append(h('div', { class: 'msg assistant' }, item.text)); break;
        case 'tool-call':
          wholeOnOpen(this.call(item.toolCallId, item.toolName, item.args), item.fullBytes, () => whole(item.toolCallId).then((full) => full.args));
          break;
        case 'tool-result':
          wholeOnOpen(this.result(item.toolCallId, item.toolName, item.result), item.fullBytes, () => whole(item.toolCallId).then((full) => full.result));
          break;
        default: break;
      }
    }
  }

  user(text) {
    this.el.append(h('div', { class: 'msg user' }, text));
  }

  call(id, name, args) {
    const state = h('span', { class: 'state' });
    const details = h('details', { class: 'tool', dataset: { callId: id } },
      h('summary', {}, h('span', { class: 'name' }, name), h('span', { class: 'arg' }, argSummary(args)), state),
      h('pre', {}, pretty(args)));
    details.stateEl = state;
    this.calls.set(id, details);
    this.el.append(details);
    return details;
  }

  result(id, name, result, isError = false) {
    const text = pretty(result);
    const failed = isError || (result && typeof result === 'object' && result.isError === true);
    // Collapsed: the summary line carries the gist, the whole result is one click away.
    const details = h('details', { class: `tool result${failed ? ' error' : ''}`, dataset: { resultOf: id } },
      h('summary', {}, h('span', { class: 'name' }, `${name} →`), h('span', { class: 'arg' }, resultSummary(result))),
      h('pre', {}, text));
    this.el.append(details);
    const call = this.calls.get(id);
    if (call) call.stateEl.textContent = failed ? 'failed' : 'done';
    return details;
  }

  /** Opens the lines that are open in `live`, the stream's transcript this one replaces once
   * the stream ended: a line a person opened stays open, and shows its value whole. */
  keepOpen(live) {
    for (const open of live.el.querySelectorAll('details[open]')) {
      const { callId, resultOf } = open.dataset;
      const mine = callId ? this.calls.get(callId)
        : resultOf && this.el.querySelector(`details[data-result-of="${CSS.escape(resultOf)}"]`);
      if (mine) mine.open = true;
    }
  }

  /** The model's turn so far is stored (a chunk of AFTER_TURN says so): a value opened while
   * it streamed in can be read whole now. */
  stored() {
    for (const stored of this.unstored.splice(0)) stored();
  }

  /** Applies one chunk of the live stream. Long arguments and results come as previews, as in
   * `load` (`argsFullBytes`, `resultFullBytes`), read in full by `whole(toolCallId)`. */
  chunk(chunk, whole) {
    const p = chunk.payload || {};
    if (AFTER_TURN.has(chunk.type)) this.stored();
    const read = () => whole(p.toolCallId);
    switch (chunk.type) {
      case 'text-start': {
        const el = h('div', { class: 'msg assistant streaming' });
        this.texts.set(p.id, el);
        this.el.append(el);
        break;
      }
      case 'text-delta': {
        const el = this.texts.get(p.id);
        if (el) el.append(document.createTextNode(p.text));
        break;
      }
      case 'text-end': {
        const el = this.texts.get(p.id);
        if (el) el.classList.remove('streaming');
        break;
      }
      case 'tool-call': {
        const details = this.call(p.toolCallId, p.toolName, p.args);
        if (!chunk.argsFullBytes) break;
        // It streams in while the model is still answering; the backend stores the turn once the
        // model is done, so all of it can be read from then on (the chunks in AFTER_TURN).
        const stored = new Promise((resolve) => this.unstored.push(resolve));
        wholeOnOpen(details, chunk.argsFullBytes, () => stored.then(read).then((full) => full.args));
        break;
      }
      case 'tool-result': wholeOnOpen(this.result(p.toolCallId, p.toolName, p.result), chunk.resultFullBytes, () => read().then((full) => full.result)); break;
      // Stored as {error}: the whole message, as the line showed its start.
      case 'tool-error': wholeOnOpen(this.result(p.toolCallId, p.toolName, p.error, true), chunk.resultFullBytes, () => read().then((full) => full.result?.error ?? full.result)); break;
      case 'tool-call-suspended':
      case 'tool-call-approval': {
        const call = this.calls.get(p.toolCallId);
        if (call) call.stateEl.textContent = 'waiting for you';
        break;
      }
      case 'tool-output-denied': {
        const call = this.calls.get(p.toolCallId);
        if (call) call.stateEl.textContent = 'declined';
        break;
      }
      default: break;
    }
  }
}
