// The run view: a run's transcript (live while it streams), what waits for a decision, and what
// can happen next: a message, a retry after a failed model call, or Continue after the process
// driving it stopped.
import { call, wholeToolCall } from './api.js';
import { $, h, clear, age, when, badge, shorten, agentName } from './dom.js';
import { Transcript } from './transcript.js';
import { state } from './state.js';
import { showError } from './banner.js';
import { latest, register, setView, viewEl } from './nav.js';
import { follow, updateStatus } from './live.js';
import { renderPending, reviewCardForWarmUp } from './review.js';
import { renderProgress } from './progress.js';
import { dropDraft, keepDraft, setDraft } from './drafts.js';

/** Draws the run `runId`: from `detail` (its `run_detail`) and `revision` (the revision of
 * its pending plan) when given, else as read now. */
async function showRun(runId, { live, keepScroll, detail, revision } = {}) {
  // Read only when needed: reading it lays out the view about to be replaced.
  const scroll = keepScroll ? viewEl().scrollTop : 0;
  const current = latest();
  if (!detail) {
    try {
      detail = await call('run_detail', { runId });
    } catch (e) {
      showError(e);
      return;
    }
    // Opened again meanwhile (e.g. the run ended and handed its review over), or moved on from.
    if (!current()) return;
  }
  live = live || state.live.get(runId);
  const pendingKey = detail.pending.map((i) => `${i.toolCallId}:${i.sha256}`).join();
  // `stream`: the live stream this view shows, if any (its start need not redraw it).
  let transcript;
  if (live) {
    transcript = live.transcript;
    if (!live.running) {
      // The stream is over: the stored transcript is the truth from here on.
      transcript = new Transcript();
      transcript.load(detail.transcript, wholeToolCall(runId));
      transcript.keepOpen(live.transcript);
      state.live.delete(runId);
    }
  } else {
    transcript = new Transcript();
    transcript.load(detail.transcript, wholeToolCall(runId));
  }
  // `transcript` and `detail`: what is on screen, for a decision or a message to carry on.
  setView({ name: 'run', runId, pendingKey, stream: live && live.running ? live : null, transcript, detail });
  const run = detail.run;
  const streaming = Boolean(live && live.running);
  const cancel = streaming
    ? h('button', { type: 'button', onclick: () => call('cancel_run', { runId }).catch(showError) }, 'Stop')
    : '';
  const shownStatus = streaming ? 'running' : detail.interrupted ? 'interrupted' : run.status;
  const head = runHead(run, shownStatus, cancel);
  const status = h('div', { class: 'run-status', 'aria-live': 'polite' });
  const review = h('div', { id: 'review-slot' });
  const footer = h('div', { id: 'run-footer' });
  const reviewing = detail.pending.length > 0 && !streaming;
  // A review shows from the top, unless kept. Set on what is laid out already (the view about
  // to go), not on the new view, which setting it would lay out at once.
  if (reviewing && !keepScroll) viewEl().scrollTop = 0;
  if (reviewing) {
    // The plan is what the person came for: it comes first, the way there folded below it.
    clear(viewEl()).append(head, review, transcriptFold(transcript), status, footer);
  } else {
    // After an approval: the plan's steps and what the agent did, above how it went.
    // A run that stopped short of its end (interrupted, failed): its agent is not working.
    const progress = h('div', { id: 'progress-slot', dataset: { stopped: String(shownStatus === 'interrupted' || shownStatus === 'failed') } });
    clear(viewEl()).append(head, progress, transcript.el, status, review, footer);
    renderProgress(runId, progress);
  }
  if (live) { live.runId = runId; updateStatus(live); }
  if (detail.pending.length) {
    await renderPending(detail.pending[0], review, revision);
    if (!current()) return;
  } else if (!streaming) {
    renderFooter(detail, footer);
  }
  if (detail.error && !streaming) {
    showError(`The model failed: ${detail.error.message}`, { label: 'Retry', run: () => retryRun(runId) });
  }
  if (keepScroll) viewEl().scrollTop = scroll;
}

/** The head of a run's view: its prompt, how it stands, its model, workspace and age, and
 * `action` (Stop while it streams). */
function runHead(run, shownStatus, action) {
  return h('div', { class: 'page-head' },
    h('div', {},
      h('h1', {}, shorten(run.prompt, 140)),
      h('div', { class: 'meta-line' }, Object.assign(badge(shownStatus), { id: 'run-badge' }),
        // An outside agent's session: the agent, not the id it is kept under.
        h('span', {}, agentName(run.source) || run.model), h('span', {}, run.workspace), h('span', { title: when(run.createdAt) }, `started ${age(run.createdAt)}`))),
    action);
}

/** A run's transcript folded below its review; none for an outside agent's session, which
 * has no transcript here. */
function transcriptFold(transcript) {
  const steps = transcript.el.children.length;
  if (!steps) return '';
  return h('details', { class: 'transcript-fold' }, h('summary', {}, `How the agent got here (${steps} steps)`), transcript.el);
}

/**
 * Lays out, once and out of sight, the view of a run waiting on a small plan that uses every
 * kind of block, so that the first real one after launch finds its fonts matched and loaded,
 * its styles and its form controls ready (measured: the first plan's layout took 25–40 ms
 * more than later ones, and the view around it 6–9 ms more). Built and taken down in one
 * task: nothing else can see it.
 */
export function warmUpReview() {
  const run = { prompt: 'Plan', model: 'demo', workspace: '/', createdAt: Date.now() };
  const transcript = new Transcript();
  transcript.user('Plan');
  const status = h('div', { class: 'run-status' }, h('span', { class: 'spinner' }), 'Waiting for you');
  const slot = h('div', { class: 'warm-up', 'aria-hidden': 'true' },
    runHead(run, 'suspended', ''), reviewCardForWarmUp(), transcriptFold(transcript), status);
  document.body.append(slot);
  slot.getBoundingClientRect();
  slot.remove();
}

/** Below a run that is not streaming: Continue, Retry, a note, or the message box. */
function renderFooter(detail, footer) {
  const run = detail.run;
  const agent = agentName(run.source);
  if (agent) {
    // An outside agent's session: Plandesk answers its plans; the agent itself runs elsewhere.
    footer.append(h('p', { class: 'hint', id: 'agent-session' },
      `This ${agent} session works in ${run.workspace}. Its plans wait here for you; the work goes on in ${agent}.`));
    return;
  }
  if (detail.interrupted || run.status === 'failed') {
    const button = h('button', { id: 'retry', class: 'primary', type: 'button', onclick: async () => {
      button.disabled = true;
      if (await retryRun(run.id)) button.disabled = false;
    } }, detail.interrupted ? 'Continue' : 'Retry');
    if (!detail.interrupted) {
      footer.append(h('div', { class: 'actions' }, button));
      return;
    }
    // Nobody drives it, yet it can go on: its process stopped mid-step, or after a decision was
    // recorded but before the run went on. Either way it carries on from its last saved state.
    const why = run.status === 'suspended'
      ? 'Your decision was saved, but the process applying it stopped before the run went on.'
      : 'The process running it stopped in the middle of a step (it was closed, killed or crashed).';
    footer.append(h('div', { class: 'card notice', id: 'interrupted-card' },
      h('p', { id: 'interrupted' }, h('strong', {}, 'This run was interrupted. '), why,
        ' Continue carries it on from its last saved state.'),
      h('div', { class: 'actions' }, button)));
    return;
  }
  if (run.status === 'running' || run.status === 'suspended') {
    footer.append(h('p', { class: 'hint' }, run.status === 'running' ? 'Another Plandesk process is running this right now.' : 'Waiting for a decision.'));
    return;
  }
  const feedbackWait = detail.waiting === 'feedback';
  const box = h('textarea', { id: 'message', rows: '3', 'aria-label': 'Your next message',
    placeholder: feedbackWait ? 'The plan was sent back: tell the agent what to change.' : 'Send the agent another message.' });
  keepDraft(box, `message:${run.id}`);
  // Once: a second click (or Ctrl+Enter) before the view switches to the run sends nothing more.
  let sent = false;
  const send = h('button', { id: 'send', class: 'primary', type: 'button', onclick: () => {
    if (sent || !box.value.trim()) return;
    sent = true;
    sendMessage(run.id, box.value);
  }, key: 'Ctrl+Enter' }, 'Send');
  footer.append(h('div', { class: 'card form' },
    h('label', {}, feedbackWait ? 'Waiting for your instructions' : 'Message', box), h('div', { class: 'actions' }, send)));
  if (feedbackWait) box.focus();
}

/** Sends `text` as the person's next message: its draft is dropped as it shows in the
 * transcript, and back in the box if the run refuses it. */
async function sendMessage(runId, text) {
  const key = `message:${runId}`;
  dropDraft(key);
  const error = await follow(runId, (channel) => call('send_message', { runId, text, onEvent: channel }), { said: text.trim() });
  if (!error) return;
  setDraft(key, text);
  const box = $('message');
  if (box && !box.value) box.value = text;
}

/** Calls the model again (a failed run) or carries an interrupted run on; the error, or null. */
function retryRun(runId) {
  return follow(runId, (channel) => call('retry_run', { runId, onEvent: channel }));
}

register('run', showRun);
