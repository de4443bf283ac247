// The sidebar: the inbox (every plan and approval waiting for a decision, across runs, newest
// first) and the runs list. The window title carries the inbox count.
import { call, newestRead } from './api.js';
import { $, h, clear, age, when, badge, shorten, agentName } from './dom.js';
import { state } from './state.js';
import { showError } from './banner.js';
import { beingOpened, go, onViewChange, redraw } from './nav.js';

export function renderInbox() {
  const list = clear($('inbox'));
  const count = state.inbox.length;
  $('inbox-count').textContent = String(count);
  if (count) delete $('inbox-count').dataset.zero; else $('inbox-count').dataset.zero = '';
  $('inbox-empty').hidden = count > 0;
  document.title = count ? `Plandesk — ${count} waiting` : 'Plandesk';
  state.inbox.forEach((item, index) => {
    const title = item.kind === 'plan'
      ? (item.title || 'Untitled plan')
      : `${item.toolName} ${item.args && item.args.path ? item.args.path : ''}`;
    const agent = agentName(item.source);
    const kind = (item.kind === 'plan' ? `Plan · rev ${item.revisionNo}` : 'Approval') + (agent ? ` · ${agent}` : '');
    const li = h('li', {
      role: 'option',
      id: `inbox-${index}`,
      'aria-selected': String(index === state.selected),
      dataset: { runId: item.runId, toolCallId: item.toolCallId },
      onclick: () => { state.selected = index; openInboxItem(item); },
    },
    h('span', { class: 'title' }, title),
    h('span', { class: 'meta' }, h('span', {}, kind), h('span', { title: when(item.since) }, age(item.since)),
      h('span', {}, shorten(item.prompt, 40))));
    list.append(li);
  });
}

function openInboxItem(item) {
  renderInbox();
  go('run', item.runId);
}

/** How a run stands: one of Plandesk's runs that nobody drives though it would go on was
 * interrupted, whatever its stored status (the backend says which: `interrupted`). */
function shownStatus(run) {
  return run.interrupted ? 'interrupted' : run.status;
}

function renderRuns() {
  const list = clear($('runs'));
  for (const run of state.runs.slice(0, 60)) {
    const current = state.view && state.view.runId === run.id;
    list.append(h('li', {
      class: current ? 'current' : '',
      dataset: { runId: run.id },
      onclick: () => go('run', run.id),
    },
    h('span', { class: 'title' }, shorten(run.prompt, 60)),
    h('span', { class: 'meta' }, badge(shownStatus(run)), h('span', {}, age(run.updatedAt)), h('span', {}, agentName(run.source) || run.model))));
  }
}

// Asked often (each inbox change): only the newest answer is drawn.
const runsRead = newestRead();

export async function refreshRuns() {
  const newest = runsRead();
  try {
    const runs = await call('runs');
    if (!newest()) return;
    state.runs = runs;
    renderRuns();
    followSessionStatus();
  } catch (e) { if (newest()) showError(e); }
}

/** An outside agent's session stands as its agent last reported (working, finished, a plan
 * waiting): the head of its view, drawn before, follows the listing. */
function followSessionStatus() {
  const view = state.view;
  const run = view?.name === 'run' && state.runs.find((r) => r.id === view.runId);
  const head = $('run-badge');
  if (!run || !head || !run.source || run.source.kind === 'engine') return;
  if (head.textContent !== badge(run.status).textContent) head.replaceWith(Object.assign(badge(run.status), { id: 'run-badge' }));
}

// The inbox comes from the watcher's events and from calls. A call's answer may be older than an
// event that came while it was asked (read before a plan arrived, answered after the event that
// brought it): it is then dropped, since the event's is newer and any change after it comes as
// an event too.
let inboxEvents = 0;

/** The watcher's inbox: always the newest. */
export function inboxChanged(items) {
  inboxEvents += 1;
  setInbox(items);
}

/** The inbox, asked for (the watcher may be a poll away); `null` if an event came meanwhile. */
export async function readInbox() {
  const seen = inboxEvents;
  const items = await call('inbox');
  return seen === inboxEvents ? items : null;
}

/** A new inbox (from the watcher or after a stream ended): keeps the highlighted item if it is still there. */
export function setInbox(items) {
  const before = state.inbox[state.selected];
  state.inbox = items;
  const keep = before ? items.findIndex((i) => i.runId === before.runId && i.toolCallId === before.toolCallId) : -1;
  // Gone (decided): the run on screen's item if it has a new one (a revised plan), else none
  // until another item is opened (j opens the first).
  state.selected = keep >= 0 ? keep : viewedIndex(state.view);
  renderInbox();
  refreshRuns();
  recheckRun();
}

/** Opens the run on screen again if what waits in it changed (e.g. a revised plan from another
 * process). A run being opened is checked when it is open: it may show the change already. */
function recheckRun() {
  const view = state.view;
  if (!view || view.name !== 'run' || state.live.get(view.runId)?.running) return;
  const opening = beingOpened('run', view.runId);
  if (opening) {
    opening.then(recheckRun);
    return;
  }
  const mine = state.inbox.filter((i) => i.runId === view.runId).map((i) => `${i.toolCallId}:${i.sha256}`).join();
  if (mine !== view.pendingKey) redraw('run', view.runId, { keepScroll: true });
}

/** j/k: highlights the next or previous inbox item and opens its run. */
export function moveSelection(step) {
  if (!state.inbox.length) return;
  state.selected = Math.max(0, Math.min(state.inbox.length - 1, state.selected + step));
  const item = state.inbox[state.selected];
  renderInbox();
  $(`inbox-${state.selected}`)?.scrollIntoView({ block: 'nearest' });
  go('run', item.runId);
}

/** Opens a run (a notification was clicked, a link or `plandesk open` named it), highlighting
 *  its pending call in the inbox: the named one, else the run's first. */
export function openPending(target) {
  const index = state.inbox.findIndex((i) => i.runId === target.runId
    && (!target.toolCallId || i.toolCallId === target.toolCallId));
  if (index >= 0) state.selected = index;
  renderInbox();
  return go('run', target.runId);
}

/** The tray's "Open Plandesk": the inbox, and its highlighted plan unless one is on screen. */
export function showInbox() {
  $('inbox').focus();
  const item = state.inbox[state.selected] || state.inbox[0];
  const onPending = state.view && state.view.name === 'run' && state.inbox.some((i) => i.runId === state.view.runId);
  if (item && !onPending) openPending(item);
}

/** Marks the run on screen in the runs list. */
function markCurrentRun(view) {
  for (const li of $('runs').children) li.classList.toggle('current', li.dataset.runId === view.runId);
}

onViewChange(markCurrentRun);

/** On a phone the inbox folds into its heading while a view is open, so that the plan has the
 * screen; its toggle (Show / Hide) unfolds it with History and the other buttons. On a wider
 * screen the sidebar is always whole and the toggle is not shown (style.css). */
export function foldInbox(folded) {
  document.querySelector('.sidebar').classList.toggle('unfolded', !folded);
  const toggle = $('inbox-toggle');
  toggle.setAttribute('aria-expanded', String(!folded));
  toggle.textContent = folded ? 'Show' : 'Hide';
}

// Folded when another view opens, not when the one on screen is drawn again (a live change).
let shown = '';
onViewChange((view) => {
  const now = `${view.name}:${view.runId || ''}`;
  if (now !== shown) foldInbox(true);
  shown = now;
  highlightViewed(view);
});

/** The inbox highlights what is on screen: an item of the run shown (the one highlighted if it
 * is of that run), or none when the view shows no waiting item (a decided plan, History). */
function highlightViewed(view) {
  const at = state.inbox[state.selected];
  if (view.name === 'run' && at && at.runId === view.runId) return;
  const index = viewedIndex(view);
  if (index === state.selected) return;
  state.selected = index;
  renderInbox();
}

/** Where in the inbox the run `view` shows waits (its first item), or -1. */
function viewedIndex(view) {
  return view?.name === 'run' ? state.inbox.findIndex((i) => i.runId === view.runId) : -1;
}
