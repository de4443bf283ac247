// A small element builder: text is always set as text, never parsed as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  let shortcut;
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'key') shortcut = value;
    else if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, value);
  }
  append(el, children);
  // `key`: a control's keyboard shortcut, shown after its label but not part of its name (a
  // screen reader says "Approve", not "Approve a"), and named for assistive technology.
  if (shortcut) {
    el.setAttribute('aria-keyshortcuts', shortcut.replace(/^Ctrl\+/, 'Control+').replace(/^[a-z]$/, (c) => c.toUpperCase()));
    el.append(h('kbd', { 'aria-hidden': 'true' }, shortcut));
  }
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// Date formats, each made once, when first used: `toLocaleString` with options builds a new
// formatter (ICU's locale data) on every call, and lists call it once per row.
const formats = {};
function format(name, options) {
  formats[name] ||= new Intl.DateTimeFormat(undefined, options);
  return formats[name];
}

/** Whether `millis` is a time a Date can hold (a formatter throws on any other). */
function isTime(millis) {
  return Number.isFinite(millis) && Math.abs(millis) <= 8.64e15;
}

/** "3 min ago", "2 h ago", or a date. */
export function age(millis, now = Date.now()) {
  const s = Math.max(0, Math.round((now - millis) / 1000));
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return isTime(millis) ? format('day', { month: 'short', day: 'numeric' }).format(millis) : '';
}

/** A moment, to the minute, as the person's locale writes it. */
export function when(millis) {
  return isTime(millis) ? format('moment', { dateStyle: 'medium', timeStyle: 'short' }).format(millis) : '';
}

/** A run's status in a person's words where the engine's word is its own ("suspended": its
 * plan or tool call waits for a decision; "waiting": it waits for the person's next message). */
const STATUS_WORDS = { suspended: 'to review', waiting: 'your turn' };

export function badge(status) {
  return h('span', { class: `badge ${status}` }, STATUS_WORDS[status] || String(status).replace(/-/g, ' '));
}

export function shorten(text, max) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export const $ = (id) => document.getElementById(id);

/** A centred message for a view with nothing to show yet, with an optional action. */
export function emptyState(title, text, action) {
  return h('div', { class: 'empty' }, h('h2', {}, title), h('p', {}, text), action || '');
}

const AGENTS = {
  'claude-code': 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI', droid: 'Factory Droid',
  'qwen-code': 'Qwen Code', 'kimi-code': 'Kimi Code', copilot: 'Copilot CLI', opencode: 'OpenCode',
  kilo: 'Kilo CLI', pi: 'Pi', mcp: 'MCP client',
};

/** The outside agent a plan came from, for people; null for Plandesk's own runs. */
export function agentName(source) {
  return source && source.kind !== 'engine' ? (AGENTS[source.kind] || source.kind) : null;
}
