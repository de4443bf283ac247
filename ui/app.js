// Plandesk's window: inbox, runs, review, history, comparison. It only displays and asks; the
// backend decides. Plan HTML arrives sanitised by the engine and is the only HTML inserted.
import { call, runChannel, listen, describe } from './api.js';
import { h, clear, age, when, badge, shorten } from './dom.js';
import { Transcript } from './transcript.js';
import { diffTable } from './diff.js';

const $ = (id) => document.getElementById(id);

const state = {
  info: null,
  inbox: [],
  runs: [],
  selected: -1, // index in the inbox of the highlighted item
  view: null, // { name, runId?, ... }
  live: new Map(), // runId -> { transcript, status, running }
  metrics: {}, // timings the benchmark reads
};
window.__plandesk = state; // for the end-to-end tests and benchmarks

// ---------- banner ----------

function showError(error, action) {
  $('banner').className = 'banner';
  $('banner-text').textContent = describe(error);
  const button = $('banner-action');
  button.hidden = !action;
  if (action) {
    button.textContent = action.label;
    button.onclick = () => { hideBanner(); action.run(); };
  }
  $('banner').hidden = false;
}

function hideBanner() {
  $('banner').hidden = true;
}

// ---------- sidebar ----------

function renderInbox() {
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
    const kind = item.kind === 'plan' ? `Plan · rev ${item.revisionNo}` : 'Approval';
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

function renderRuns() {
  const list = clear($('runs'));
  for (const run of state.runs.slice(0, 60)) {
    const current = state.view && state.view.runId === run.id;
    list.append(h('li', {
      class: current ? 'current' : '',
      dataset: { runId: run.id },
      onclick: () => openRun(run.id),
    },
    h('span', { class: 'title' }, shorten(run.prompt, 60)),
    h('span', { class: 'meta' }, badge(run.status), h('span', {}, age(run.updatedAt)), h('span', {}, run.model))));
  }
}

async function refreshRuns() {
  try {
    state.runs = await call('runs');
    renderRuns();
  } catch (e) { showError(e); }
}

function setInbox(items) {
  const before = state.inbox[state.selected];
  state.inbox = items;
  const keep = before ? items.findIndex((i) => i.runId === before.runId && i.toolCallId === before.toolCallId) : -1;
  state.selected = keep >= 0 ? keep : Math.min(state.selected, items.length - 1);
  renderInbox();
  refreshRuns();
  // A run on screen whose pending item changed (e.g. a revised plan from another process).
  const view = state.view;
  if (view && view.name === 'run' && !state.live.get(view.runId)?.running) {
    const mine = items.filter((i) => i.runId === view.runId).map((i) => `${i.toolCallId}:${i.sha256}`).join();
    if (mine !== view.pendingKey) openRun(view.runId, { keepScroll: true });
  }
}

// ---------- views ----------

const view = () => $('view');

function setView(next) {
  state.view = next;
  call('set_viewing', { runId: next.runId || null }).catch(() => {});
  renderRuns();
}

function openInboxItem(item) {
  renderInbox();
  openRun(item.runId);
}

function emptyState(title, text, action) {
  return h('div', { class: 'empty' }, h('h2', {}, title), h('p', {}, text), action || '');
}

function showNewRun() {
  setView({ name: 'new' });
  const info = state.info || {};
  const workspace = h('input', { id: 'workspace', type: 'text', value: info.workspace || '', spellcheck: 'false', 'aria-label': 'Workspace folder' });
  const prompt = h('textarea', { id: 'prompt', rows: '5', placeholder: 'e.g. Add a --verbose flag that prints each step', 'aria-label': 'What should the agent do?' });
  const model = h('input', { id: 'model', type: 'text', spellcheck: 'false', list: 'model-options', placeholder: info.defaultModel || 'demo', 'aria-label': 'Model' });
  const suggestions = [...new Set([info.defaultModel, 'demo', 'openai:gpt-4.1', 'anthropic:claude-sonnet-4-5', 'ollama:llama3.2'].filter(Boolean))];
  const options = h('datalist', { id: 'model-options' }, suggestions.map((spec) => h('option', { value: spec })));
  const start = h('button', { id: 'start', class: 'primary', type: 'submit' }, 'Start run', h('kbd', {}, 'Ctrl+Enter'));
  const form = h('form', { class: 'form card', onsubmit: (e) => { e.preventDefault(); startRun(workspace.value, prompt.value, model.value, start); } },
    h('label', {}, 'Workspace folder',
      h('div', { class: 'row' }, workspace, h('button', { type: 'button', onclick: async () => {
        try { const dir = await call('pick_workspace'); if (dir) workspace.value = dir; } catch (e) { showError(e); }
      } }, 'Choose…'))),
    h('label', {}, 'What should the agent do?', prompt,
      h('span', { class: 'hint' }, 'It writes a plan first; nothing in the folder changes until you approve it.')),
    h('label', {}, 'Model',
      model, options,
      h('span', { class: 'hint' }, `Empty: ${info.defaultModel || 'demo'} — ${info.defaultModelReason || ''}. Also openai:MODEL, anthropic:MODEL, ollama:MODEL.`)),
    h('div', { class: 'actions' }, start));
  clear(view()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'New run'),
    h('div', { class: 'meta-line' }, 'Pick a folder, say what you want, and review the plan before anything is built.'))), form);
  prompt.focus();
}

async function startRun(workspace, prompt, model, button) {
  hideBanner();
  button.disabled = true;
  const live = newLive();
  try {
    const runId = await call('start_run', { request: { workspace, prompt, model: model || null }, onEvent: live.channel });
    live.transcript.user(prompt.trim());
    live.runId = runId;
    state.live.set(runId, live);
    // The run is stored just before its `start` chunk: until then show it from the stream alone.
    setView({ name: 'run', runId, pendingKey: '' });
    clear(view()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, shorten(prompt, 140)),
      h('div', { class: 'meta-line' }, badge('running')))), live.transcript.el, h('div', { class: 'run-status', 'aria-live': 'polite' }),
    h('div', { id: 'review-slot' }));
    updateStatus(live);
    if (live.started) openRun(runId, { live });
  } catch (e) {
    showError(e);
  } finally {
    button.disabled = false;
  }
}

/** A live stream's state; chunks that arrive before the view is built are kept in order. */
function newLive() {
  const live = { transcript: new Transcript(), running: true, status: 'running', runId: null };
  live.channel = runChannel((event) => onRunEvent(live, event));
  return live;
}

function onRunEvent(live, event) {
  if (event.event === 'chunk') {
    const chunk = event.data;
    live.runId = chunk.runId;
    live.transcript.chunk(chunk);
    if (chunk.type === 'start') {
      live.started = true;
      if (state.view && state.view.runId === chunk.runId) openRun(chunk.runId, { live });
    }
    if (chunk.type === 'tool-call-suspended' || chunk.type === 'tool-call-approval') {
      // The stream ends right after this; the review is built once, when it has.
      state.metrics.suspendedAt = performance.now();
      live.status = 'suspended';
    }
    if (chunk.type === 'error') {
      live.error = chunk.payload.error;
    }
    if (state.metrics.awaitFirstChunk) {
      state.metrics.firstResumedChunk = performance.now() - state.metrics.awaitFirstChunk;
      state.metrics.awaitFirstChunk = null;
    }
    updateStatus(live);
    return;
  }
  live.running = false;
  if (event.event === 'ended') {
    live.status = event.data.status;
    if (event.data.error) live.error = event.data.error;
  } else if (event.event === 'refused') {
    // E.g. another process is driving this run right now: say so; the run itself is unchanged.
    live.status = 'failed';
    live.error = event.data;
    showError(event.data);
  } else if (event.event === 'cancelled') {
    live.status = 'cancelled';
  }
  updateStatus(live);
  const runId = live.runId || (event.data && event.data.runId);
  const shown = state.view && state.view.runId === runId ? openRun(runId, { live, keepScroll: true }) : Promise.resolve();
  // The inbox watcher notices too, within a poll; this keeps the sidebar in step at once.
  shown.then(() => call('inbox')).then(setInbox).catch(showError);
}

function updateStatus(live) {
  const el = document.querySelector('.run-status');
  if (!el || !state.view || state.view.runId !== live.runId) return;
  clear(el);
  if (live.running) el.append(h('span', { class: 'spinner' }), live.status === 'suspended' ? 'Waiting for you' : 'Working…');
}

async function openRun(runId, { live, keepScroll } = {}) {
  const scroll = view().scrollTop;
  let detail;
  try {
    detail = await call('run_detail', { runId });
  } catch (e) {
    showError(e);
    return;
  }
  live = live || state.live.get(runId);
  const pendingKey = detail.pending.map((i) => `${i.toolCallId}:${i.sha256}`).join();
  setView({ name: 'run', runId, pendingKey });
  let transcript;
  if (live) {
    transcript = live.transcript;
    if (!live.running) {
      // The stream is over: the stored transcript is the truth from here on.
      transcript = new Transcript();
      transcript.load(detail.transcript);
      state.live.delete(runId);
    }
  } else {
    transcript = new Transcript();
    transcript.load(detail.transcript);
  }
  const run = detail.run;
  const cancel = live && live.running
    ? h('button', { type: 'button', onclick: () => call('cancel_run', { runId }).catch(showError) }, 'Stop')
    : '';
  const head = h('div', { class: 'page-head' },
    h('div', {},
      h('h1', {}, shorten(run.prompt, 140)),
      h('div', { class: 'meta-line' }, badge(live && live.running ? 'running' : run.status),
        h('span', {}, run.model), h('span', {}, run.workspace), h('span', { title: when(run.createdAt) }, `started ${age(run.createdAt)}`))),
    cancel);
  const status = h('div', { class: 'run-status', 'aria-live': 'polite' });
  const review = h('div', { id: 'review-slot' });
  const footer = h('div', { id: 'run-footer' });
  const reviewing = detail.pending.length > 0 && !(live && live.running);
  if (reviewing) {
    // The plan is what the person came for: it comes first, the way there folded below it.
    const steps = transcript.el.children.length;
    const fold = h('details', { class: 'transcript-fold' }, h('summary', {}, `How the agent got here (${steps} steps)`), transcript.el);
    clear(view()).append(head, review, fold, status, footer);
  } else {
    clear(view()).append(head, transcript.el, status, review, footer);
  }
  if (live) { live.runId = runId; updateStatus(live); }
  if (detail.pending.length) {
    await renderPending(detail.pending[0], review);
  } else if (!(live && live.running)) {
    renderFooter(detail, footer);
  }
  if (detail.error && !(live && live.running)) {
    showError(`The model failed: ${detail.error.message}`, { label: 'Retry', run: () => retryRun(runId) });
  }
  if (keepScroll) view().scrollTop = scroll;
}

async function renderPending(item, slot) {
  if (item.kind === 'plan') return renderPlanReview(item, slot);
  return renderApproval(item, slot);
}

/** A revision's rendered plan, under a head that already names it. */
function planArticle(revision, attrs) {
  const body = h('article', { class: 'plan review-body', ...attrs });
  body.innerHTML = revision.html; // sanitised by the engine (comrak, raw HTML escaped, then ammonia)
  // The whole plan is rendered (its title heading too, as the CLI shows it): the head names it.
  if (revision.title) body.querySelector(':scope > h1:first-child')?.remove();
  return body;
}

async function renderPlanReview(item, slot) {
  const revision = await call('revision', { id: item.revisionId });
  const feedback = h('textarea', { id: 'feedback', rows: '3', placeholder: 'What should change? Leave empty to tell it in your next message.', 'aria-label': 'Feedback' });
  const approve = h('button', { id: 'approve', class: 'approve', type: 'button', onclick: () => decide(item, revision, true, '') }, 'Approve', h('kbd', {}, 'a'));
  const reject = h('button', { id: 'reject', class: 'reject', type: 'button', onclick: () => decide(item, revision, false, feedback.value) }, 'Reject', h('kbd', {}, 'r'));
  const compare = revision.revisionNo > 1
    ? h('button', { id: 'compare', type: 'button', onclick: () => showCompare(revision.id, null) }, `Compare with revision ${revision.revisionNo - 1}`)
    : '';
  const body = planArticle(revision, { id: 'plan' });
  const card = h('section', { class: 'review', 'aria-label': 'Plan to review', dataset: { sha: revision.sha256 } },
    h('div', { class: 'review-head' },
      h('div', {},
        h('h2', { id: 'plan-title' }, revision.title || 'Untitled plan'),
        h('div', { class: 'meta-line' }, h('span', { id: 'plan-path' }, revision.path),
          h('span', { id: 'plan-revision' }, `Revision ${revision.revisionNo}`),
          h('span', { title: when(revision.submittedAt) }, age(revision.submittedAt)))),
      compare),
    body,
    h('div', { class: 'review-foot' }, feedback, h('div', { class: 'actions' }, approve, reject,
      h('span', { class: 'hint' }, 'Ctrl+Enter in the box rejects with your feedback.'))));
  clear(slot).append(card);
  state.metrics.planRenderedAt = performance.now();
  if (state.metrics.suspendedAt) {
    state.metrics.suspendToRendered = state.metrics.planRenderedAt - state.metrics.suspendedAt;
    state.metrics.suspendedAt = null;
  }
}

function renderApproval(item, slot) {
  const reason = h('textarea', { id: 'feedback', rows: '2', placeholder: 'Why not? (optional, the model sees it)', 'aria-label': 'Reason' });
  const args = item.args || {};
  const preview = typeof args.content === 'string'
    ? h('pre', { class: 'approval-content' }, args.content)
    : h('pre', {}, JSON.stringify(args, null, 2));
  const card = h('section', { class: 'review', 'aria-label': 'Tool call to approve' },
    h('div', { class: 'review-head' }, h('div', {},
      h('h2', {}, `${item.toolName} wants to run`),
      h('div', { class: 'meta-line' }, args.path ? h('span', {}, args.path) : '', h('span', {}, age(item.since))))),
    h('div', { class: 'review-body tool' }, preview),
    h('div', { class: 'review-foot' }, reason, h('div', { class: 'actions' },
      h('button', { id: 'approve', class: 'approve', type: 'button', onclick: () => decide(item, null, true, '') }, 'Approve', h('kbd', {}, 'a')),
      h('button', { id: 'reject', class: 'reject', type: 'button', onclick: () => decide(item, null, false, reason.value) }, 'Decline', h('kbd', {}, 'r')))));
  clear(slot).append(card);
}

/**
 * Carries a run on (a decision, a message, a retry): the stored transcript is laid down first,
 * then `invoke(channel)` starts the continuation, whose chunks append below it in order.
 * Returns the error that stopped it, or null.
 */
async function follow(runId, invoke, { said } = {}) {
  hideBanner();
  const live = newLive();
  live.runId = runId;
  try {
    const detail = await call('run_detail', { runId });
    live.transcript.load(detail.transcript);
    if (said) live.transcript.user(said);
    await invoke(live.channel);
  } catch (e) {
    showError(e);
    return e;
  }
  state.live.set(runId, live);
  await openRun(runId, { live });
  return null;
}

async function decide(item, revision, approve, feedback) {
  const buttons = document.querySelectorAll('#approve, #reject');
  buttons.forEach((b) => { b.disabled = true; });
  const text = feedback && feedback.trim() ? feedback.trim() : null;
  const error = await follow(item.runId, (channel) => {
    state.metrics.awaitFirstChunk = performance.now();
    return call('decide', {
      request: { runId: item.runId, toolCallId: item.toolCallId, approve, feedback: text, revision: revision ? revision.sha256 : null },
      onEvent: channel,
    });
  });
  if (error) {
    buttons.forEach((b) => { b.disabled = false; });
    if (error.code === 'stale-revision') openRun(item.runId);
    return;
  }
  // Rejected without feedback: the run waits for the person's next message.
  if (!approve && !text && item.kind === 'plan') $('message')?.focus();
}

function renderFooter(detail, footer) {
  const run = detail.run;
  if (run.status === 'failed' || detail.interrupted) {
    // Interrupted: its process stopped mid-step, or after a decision was recorded but before the
    // run went on. Either way it carries on from its last saved state.
    const note = detail.interrupted
      ? h('p', { class: 'hint', id: 'interrupted' }, 'This run stopped before it finished (its process ended). Continue it from where it was.')
      : '';
    footer.append(h('div', { class: 'actions' }, note,
      h('button', { id: 'retry', class: 'primary', type: 'button', onclick: () => retryRun(run.id) }, run.status === 'failed' ? 'Retry' : 'Continue')));
    return;
  }
  if (run.status === 'running' || run.status === 'suspended') {
    footer.append(h('p', { class: 'hint' }, run.status === 'running' ? 'Another Plandesk process is running this right now.' : 'Waiting for a decision.'));
    return;
  }
  const feedbackWait = detail.waiting === 'feedback';
  const box = h('textarea', { id: 'message', rows: '3', 'aria-label': 'Your next message',
    placeholder: feedbackWait ? 'The plan was sent back: tell the agent what to change.' : 'Send the agent another message.' });
  const send = h('button', { id: 'send', class: 'primary', type: 'button', onclick: () => sendMessage(run.id, box.value) }, 'Send', h('kbd', {}, 'Ctrl+Enter'));
  footer.append(h('div', { class: 'card form' },
    h('label', {}, feedbackWait ? 'Waiting for your instructions' : 'Message', box), h('div', { class: 'actions' }, send)));
  if (feedbackWait) box.focus();
}

async function sendMessage(runId, text) {
  if (!text.trim()) return;
  await follow(runId, (channel) => call('send_message', { runId, text, onEvent: channel }), { said: text.trim() });
}

function retryRun(runId) {
  return follow(runId, (channel) => call('retry_run', { runId, onEvent: channel }));
}

// ---------- comparison ----------

async function showCompare(rightId, leftId) {
  hideBanner();
  let thread;
  try {
    thread = await call('plan_thread', { id: rightId });
  } catch (e) { showError(e); return; }
  const right = thread.find((r) => r.id === rightId) || thread[thread.length - 1];
  const left = leftId ? thread.find((r) => r.id === leftId) : thread[Math.max(0, thread.indexOf(right) - 1)];
  const pick = (id, selected) => h('select', { id, 'aria-label': id === 'left-rev' ? 'Older revision' : 'Newer revision' },
    thread.map((r) => h('option', { value: String(r.id), selected: r.id === selected.id }, `Revision ${r.revisionNo} · ${r.status}`)));
  const leftSel = pick('left-rev', left);
  const rightSel = pick('right-rev', right);
  const onChange = () => showCompare(Number(rightSel.value), Number(leftSel.value));
  leftSel.addEventListener('change', onChange);
  rightSel.addEventListener('change', onChange);
  let comparison;
  try {
    comparison = await call('compare', { left: left.id, right: right.id });
  } catch (e) { showError(e); return; }
  setView({ name: 'compare', runId: right.runId });
  const between = comparison.between.map((step) => h('div', { class: 'fb' },
    h('strong', {}, `Revision ${step.revisionNo} was ${step.action}`),
    step.feedback ? `: “${step.feedback}”` : ' without feedback'));
  clear(view()).append(
    h('div', { class: 'page-head' }, h('div', {},
      h('h1', {}, comparison.right.title || 'Untitled plan'),
      h('div', { class: 'meta-line' }, h('span', {}, comparison.right.path),
        h('span', { id: 'diff-stats' }, `${comparison.diff.changed} changed · ${comparison.diff.added} added · ${comparison.diff.removed} removed`))),
    h('button', { type: 'button', onclick: () => openRun(right.runId) }, 'Back to the run')),
    h('div', { class: 'diff-head' }, 'Compare', leftSel, 'with', rightSel),
    between.length ? h('div', { class: 'between', id: 'between' }, between) : '',
    diffTable(comparison.diff, `Revision ${comparison.left.revisionNo}`, `Revision ${comparison.right.revisionNo}`));
}

// ---------- history ----------

async function showHistory(filter = { status: 'all', query: '' }) {
  setView({ name: 'history' });
  const status = h('select', { id: 'history-status', 'aria-label': 'Status' },
    ['all', 'pending', 'approved', 'rejected', 'superseded'].map((s) => h('option', { value: s, selected: s === filter.status }, s === 'all' ? 'All revisions' : s)));
  const query = h('input', { id: 'history-query', type: 'search', value: filter.query, placeholder: 'Search titles and plan text', 'aria-label': 'Search' });
  const rows = h('div', { class: 'rows', id: 'history-rows' });
  const load = async () => {
    try {
      const list = await call('history', { filter: { status: status.value, query: query.value } });
      clear(rows);
      if (!list.length) rows.append(emptyState('No revisions', query.value || status.value !== 'all' ? 'Nothing matches this filter.' : 'Plans you review will be kept here, every revision.'));
      for (const r of list) {
        rows.append(h('button', { class: 'row-item', type: 'button', onclick: () => showRevision(r.id) },
          h('span', { class: 'title' }, h('strong', {}, r.title || 'Untitled plan'), ` · revision ${r.revisionNo}`),
          badge(r.status),
          h('span', { class: 'meta-line' }, h('span', {}, r.path), h('span', {}, when(r.submittedAt)), h('span', {}, shorten(r.prompt, 60))),
          r.feedback ? h('span', { class: 'feedback-quote' }, `“${r.feedback}”`) : ''));
      }
    } catch (e) { showError(e); }
  };
  status.addEventListener('change', load);
  let timer;
  query.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(load, 150); });
  clear(view()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'History'),
    h('div', { class: 'meta-line' }, 'Every plan revision, never overwritten, with what you decided.'))),
  h('div', { class: 'filters' }, query, status), rows);
  await load();
}

async function showRevision(id) {
  let revision;
  try { revision = await call('revision', { id }); } catch (e) { showError(e); return; }
  setView({ name: 'revision', runId: revision.runId });
  const body = planArticle(revision, {});
  clear(view()).append(
    h('div', { class: 'page-head' }, h('div', {},
      h('h1', {}, revision.title || 'Untitled plan'),
      h('div', { class: 'meta-line' }, badge(revision.status), h('span', {}, revision.path),
        h('span', {}, `Revision ${revision.revisionNo} of ${revision.revisionsInThread}`), h('span', {}, when(revision.submittedAt)))),
    h('div', { class: 'actions' },
      revision.revisionsInThread > 1 ? h('button', { type: 'button', onclick: () => showCompare(revision.id, null) }, 'Compare revisions') : '',
      h('button', { type: 'button', onclick: () => openRun(revision.runId) }, 'Open the run'))),
    revision.feedback ? h('div', { class: 'between' }, h('div', { class: 'fb' }, h('strong', {}, 'Feedback: '), revision.feedback)) : '',
    h('section', { class: 'review' }, body));
}

// ---------- settings, help, keyboard ----------

function openSettings() {
  const s = state.info.settings;
  $('set-notifications').checked = s.notifications;
  $('set-titles').checked = s.notificationTitles;
  $('settings-model').textContent = `New runs use ${state.info.defaultModel} (${state.info.defaultModelReason}).`;
  $('settings-data').textContent = `Store: ${state.info.dataDir}`;
  $('settings').showModal();
}

async function saveSettings() {
  try {
    state.info.settings = await call('save_settings', { settings: {
      notifications: $('set-notifications').checked,
      notificationTitles: $('set-titles').checked,
    } });
    $('settings').close();
  } catch (e) { showError(e); }
}

function moveSelection(step) {
  if (!state.inbox.length) return;
  state.selected = Math.max(0, Math.min(state.inbox.length - 1, state.selected + step));
  const item = state.inbox[state.selected];
  renderInbox();
  $(`inbox-${state.selected}`)?.scrollIntoView({ block: 'nearest' });
  openRun(item.runId);
}

function typing(target) {
  return target && (target.tagName === 'TEXTAREA' || target.tagName === 'INPUT' || target.tagName === 'SELECT');
}

function onKey(event) {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    const target = event.target;
    if (target.id === 'feedback') { event.preventDefault(); $('reject')?.click(); }
    else if (target.id === 'message') { event.preventDefault(); $('send')?.click(); }
    else if (target.id === 'prompt' || target.closest?.('form.form')) { event.preventDefault(); $('start')?.click(); }
    return;
  }
  if (event.key === 'Escape') {
    if (typing(event.target)) { event.target.blur(); view().focus(); }
    hideBanner();
    return;
  }
  if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
  if (document.querySelector('dialog[open]')) return;
  switch (event.key) {
    case 'j': moveSelection(1); break;
    case 'k': moveSelection(-1); break;
    case 'a': $('approve')?.click(); break;
    case 'r': $('feedback')?.focus(); break;
    case 'n': showNewRun(); break;
    case 'h': showHistory(); break;
    case '?': $('help').showModal(); break;
    default: return;
  }
  event.preventDefault();
}

// Links in plans open in the system browser, never in this window.
function onClick(event) {
  const link = event.target.closest && event.target.closest('a[href]');
  if (!link) return;
  event.preventDefault();
  if (link.closest('.plan')) call('open_link', { url: link.getAttribute('href') }).catch(showError);
}

async function boot() {
  $('new-run').addEventListener('click', showNewRun);
  $('history-btn').addEventListener('click', () => showHistory());
  $('settings-btn').addEventListener('click', openSettings);
  $('help-btn').addEventListener('click', () => $('help').showModal());
  $('settings-save').addEventListener('click', saveSettings);
  $('settings-cancel').addEventListener('click', () => $('settings').close());
  $('banner-close').addEventListener('click', hideBanner);
  document.addEventListener('keydown', onKey);
  document.addEventListener('click', onClick);
  try {
    state.info = await call('app_info');
    await listen('inbox-changed', setInbox);
    await listen('open-plan', (target) => {
      const index = state.inbox.findIndex((i) => i.runId === target.runId && i.toolCallId === target.toolCallId);
      if (index >= 0) state.selected = index;
      renderInbox();
      openRun(target.runId);
    });
    state.inbox = await call('inbox');
    renderInbox();
    await refreshRuns();
  } catch (e) {
    showError(e);
    return;
  }
  if (state.inbox.length) {
    state.selected = 0;
    renderInbox();
    await openRun(state.inbox[0].runId);
  } else if (state.runs.length) {
    clear(view()).append(emptyState('Nothing is waiting for you', 'Plans the agent submits show up in the inbox on the left.',
      h('button', { class: 'primary', type: 'button', onclick: showNewRun }, 'Start a new run')));
    setView({ name: 'home' });
  } else {
    showNewRun();
  }
  state.metrics.interactiveAt = performance.now();
  document.body.dataset.ready = 'true';
}

boot();
