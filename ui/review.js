// What waits for a decision in a run: a plan to review (approve, or reject with feedback) or a
// tool call to approve (approve, or decline with a reason). A decision carries the run on.
import { call } from './api.js';
import { $, h, clear, age, when, agentName } from './dom.js';
import { markDecisionAnswered, markDecisionClicked, markPlanRendered } from './metrics.js';
import { go } from './nav.js';
import { state } from './state.js';
import { follow } from './live.js';
import { planView } from './plan.js';
import { commentsFor } from './comments.js';
import { openEditor } from './editor.js';
import { draft, dropDraft, keepDraft, setDraft } from './drafts.js';

/** Where the draft of what is said with a decision on `item` is kept. */
export const decisionDraft = (item) => `decision:${item.runId}:${item.toolCallId}`;

/** A decision's box for `item`: what was typed in it before is back, and it stays open. */
function decisionBox(item, attrs) {
  const box = h('textarea', attrs);
  if (keepDraft(box, decisionDraft(item))) box.classList.add('opened');
  else box.addEventListener('focus', () => box.classList.add('opened'), { once: true });
  return box;
}

/** Fills `slot` with the review of a pending item (`run_detail`'s `pending`); `revision`, the
 * item's plan revision if it is at hand already. */
export async function renderPending(item, slot, revision) {
  if (item.kind === 'plan') return renderPlanReview(item, slot, revision);
  return renderApproval(item, slot);
}

async function renderPlanReview(item, slot, given) {
  const revision = given && given.id === item.revisionId ? given : await call('revision', { id: item.revisionId });
  // The view it was read for was replaced meanwhile.
  if (!slot.isConnected) return;
  const { card, plan, comments } = planReview(item, revision, slot);
  clear(slot).append(card);
  markPlanRendered(plan.rendered);
  await comments.load();
}

/** The review of `revision` (of the pending `item`), to place in `slot`: its card, its plan
 * view and its comments (to load once placed). */
function planReview(item, revision, slot) {
  // On a phone's one line, the short form.
  const placeholder = window.matchMedia('(max-width: 640px)').matches
    ? 'Feedback, or a note if you approve'
    : 'Rejecting: what should change? (empty: tell it in your next message) · Approving: an optional note for the agent';
  const feedback = decisionBox(item, { id: 'feedback', rows: '3', placeholder, 'aria-label': 'Feedback or approval note' });
  const approve = h('button', { id: 'approve', class: 'approve', type: 'button', key: 'a',
    onclick: () => decide(item, revision, true, feedback.value, { acceptEdits: Boolean(acceptEdits?.box.checked) }) }, 'Approve');
  // What a click on Approve sends is on it: the text in the box goes with it as a note, which
  // some agents never pass on to their model (the backend says which: `notesReachAgent`).
  const noted = item.notesReachAgent === true ? 'Approve with note' : 'Approve (note not sent)';
  const approveWords = () => (feedback.value.trim() ? noted : 'Approve');
  const acceptEdits = acceptEditsBox(item, approve, approveWords);
  const sayApprove = () => { approve.firstChild.textContent = approvalLabel(approveWords(), acceptEdits?.box.checked); };
  feedback.addEventListener('input', sayApprove);
  sayApprove();
  // A rejection that says nothing (no feedback, no open comment) is asked about once: a stray
  // click, or a click meant for a button that was there a moment ago, sends the agent back
  // with nothing to go on.
  let openComments = 0;
  let askedEmpty = false;
  const rejectNow = () => decide(item, revision, false, feedback.value);
  const rejectOrAsk = () => {
    if (!feedback.value.trim() && !openComments && !askedEmpty) {
      askedEmpty = true;
      hint.classList.add('asking');
      hint.textContent = 'Nothing says what should change: Reject again to reject anyway (then tell the agent in your next message), or write it here.';
      feedback.focus();
      return;
    }
    rejectNow();
  };
  const reject = h('button', { id: 'reject', class: 'reject', type: 'button', onclick: rejectOrAsk, key: 'r' }, 'Reject');
  // Ctrl+Enter typed in the box (keys.js) is no stray click: it rejects as the box stands.
  reject.rejectNow = rejectNow;
  const compare = revision.revisionNo > 1
    ? h('button', { id: 'compare', type: 'button', onclick: () => go('compare', revision.id, null) }, `Compare with revision ${revision.revisionNo - 1}`)
    : '';
  const edit = h('button', { id: 'edit', type: 'button', title: 'Change the plan yourself before approving it (e)',
    onclick: () => openEditor(revision, slot, () => go('run', item.runId)), key: 'e' }, 'Edit');
  const plan = planView(revision, { id: 'plan' });
  const hint = h('span', { class: 'hint', id: 'decide-hint', role: 'status' }, 'Ctrl+Enter in the box rejects with your feedback.');
  const comments = commentsFor(revision, plan, {
    onCount: (open) => {
      openComments = open;
      // Asked about an empty rejection: the ask stands until a comment makes it say something.
      if (askedEmpty && !open) return;
      hint.classList.remove('asking');
      hint.textContent = open
        ? `${open === 1 ? '1 open comment goes' : `${open} open comments go`} with a rejection, each quoting its lines. Ctrl+Enter in the box rejects.`
        : 'Ctrl+Enter in the box rejects with your feedback.';
    },
  });
  const author = revision.author ? h('span', { id: 'plan-author', class: 'source' }, `Edited by ${revision.author}`) : '';
  const card = h('section', { class: 'review', 'aria-label': 'Plan to review', dataset: { sha: revision.sha256 } },
    h('div', { class: 'review-head' },
      h('div', {},
        h('h2', { id: 'plan-title' }, revision.title || 'Untitled plan'),
        h('div', { class: 'meta-line' },
          // Its workspace is in the page's head, just above.
          agentName(item.source) ? h('span', { id: 'plan-from', class: 'source' }, `From ${agentName(item.source)}`) : '',
          author,
          h('span', { id: 'plan-path' }, revision.path),
          h('span', { id: 'plan-revision' }, `Revision ${revision.revisionNo}`),
          h('span', { title: when(revision.submittedAt) }, age(revision.submittedAt)))),
      h('div', { class: 'review-tools' }, compare, edit, plan.toggle)),
    plan.warning,
    comments.bar,
    h('div', { class: 'review-main' }, h('div', { class: 'review-plan' }, plan.rendered, plan.source), comments.panel),
    h('div', { class: 'review-foot' }, feedback, h('div', { class: 'actions' }, approve, reject, hint), acceptEdits?.label || ''));
  return { card, plan, comments };
}

/** Where the choice of letting Claude Code edit without asking is remembered: with the drafts,
 * for this window until it closes or its person signs out (never for the next launch). */
const ACCEPT_EDITS = 'choice:accept-edits';

/** The label of an Approve button whose own words are `words`, with the choice of
 * [`acceptEditsBox`] said while it is made (`acceptEdits`): what a click grants is on the
 * button clicked. */
function approvalLabel(words, acceptEdits) {
  return acceptEdits ? `${words}, auto-accept edits` : words;
}

/** For Claude Code's plan: the choice its own dialog offers with an approval, to edit files
 * without asking from then on (`box`, in its `label`), as last chosen in this window. Null for
 * others. The `approve` button's label (its own words: `words()`) says the choice. */
export function acceptEditsBox(item, approve, words) {
  if (item.source?.kind !== 'claude-code') return null;
  const box = h('input', { type: 'checkbox', id: 'accept-edits', checked: draft(ACCEPT_EDITS) === 'yes' });
  const say = () => { approve.firstChild.textContent = approvalLabel(words(), box.checked); };
  box.addEventListener('change', () => { setDraft(ACCEPT_EDITS, box.checked ? 'yes' : ''); say(); });
  say();
  const label = h('label', { class: 'accept-edits', title: 'With your approval, as Claude Code\'s own “Yes, and auto-accept edits”: for the rest of its session' },
    box, ' Let Claude Code edit files without asking');
  return { box, label };
}

/** The review of a small plan that uses every kind of block, for the run view's warm-up
 * (`warmUpReview`, run.js): never shown. */
export function reviewCardForWarmUp() {
  const item = { runId: '', toolCallId: '', kind: 'plan', source: null, workspace: '' };
  const revision = { id: 0, title: 'Plan', path: 'plan.md', revisionNo: 1, submittedAt: Date.now(), sha256: '', hidden: [],
    pages: ['<h1>Plan</h1><h2>Step</h2><h3>Check</h3><p>Move <code>t1</code>, keep <strong>reads</strong> <em>working</em>, '
      + '<del>old</del> <a href="#">link</a>.</p><ul><li><input type="checkbox" disabled> check</li></ul><ol><li>one</li></ol>'
      + '<blockquote><p>quoted</p></blockquote><table><thead><tr><th>table</th></tr></thead><tbody><tr><td>t1</td></tr></tbody></table>'
      + '<pre><code>fn migrate() -> Result<()> { Ok(()) }</code></pre><hr>'] };
  return planReview(item, revision, h('div')).card;
}

function renderApproval(item, slot) {
  const reason = decisionBox(item, { id: 'feedback', rows: '2', placeholder: 'Why not? (optional, the model sees it)', 'aria-label': 'Reason' });
  const args = item.args || {};
  const preview = typeof args.content === 'string'
    ? h('pre', { class: 'approval-content' }, args.content)
    : h('pre', {}, JSON.stringify(args, null, 2));
  // Said as what it would do: "The agent wants to write src/greet.rs", with the tool and the
  // size of what it writes beside.
  const writes = item.toolName === 'write_file' && typeof args.path === 'string';
  const lines = typeof args.content === 'string' ? args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0) : null;
  const card = h('section', { class: 'review', 'aria-label': 'Tool call to approve' },
    h('div', { class: 'review-head' }, h('div', {},
      h('h2', {}, writes ? `The agent wants to write ${args.path}` : `${item.toolName} wants to run`),
      h('div', { class: 'meta-line' },
        writes ? h('span', {}, item.toolName) : args.path ? h('span', {}, args.path) : '',
        lines === null ? '' : h('span', {}, lines === 1 ? '1 line' : `${lines} lines`),
        h('span', { title: when(item.since) }, age(item.since))))),
    h('div', { class: 'review-body tool' }, preview),
    h('div', { class: 'review-foot' }, reason, h('div', { class: 'actions' },
      h('button', { id: 'approve', class: 'approve', type: 'button', onclick: () => decide(item, null, true, ''), key: 'a' }, 'Approve'),
      h('button', { id: 'reject', class: 'reject', type: 'button', onclick: () => decide(item, null, false, reason.value), key: 'r' }, 'Decline'))));
  clear(slot).append(card);
}

/** Sends a decision on `item` (`revision`, the plan's revision decided on; null for a tool
 * call); `text` is the feedback of a rejection or the note of an approval; `acceptEdits`, with
 * an approval of Claude Code's plan, lets it edit files without asking. */
export async function decide(item, revision, approve, text, { acceptEdits = false } = {}) {
  // Once: a second click (or key) before the view switches to the run does nothing. The
  // buttons are not redrawn as disabled: the view switches as soon as the run answers.
  if (item.deciding) return;
  item.deciding = true;
  markDecisionClicked(item.runId);
  text = text && text.trim() ? text.trim() : null;
  const error = await follow(item.runId, (channel) => call('decide', {
    request: { runId: item.runId, toolCallId: item.toolCallId, approve, feedback: approve ? null : text, note: approve ? text : null,
      revision: revision ? revision.sha256 : null, acceptEdits: approve && acceptEdits },
    onEvent: channel,
  }).then((answer) => {
    // Recorded: what was typed for it is said.
    markDecisionAnswered();
    dropDraft(decisionDraft(item));
    return answer;
  }));
  // Refused: follow() has put the run back on screen as it stands (a new review, with what was
  // typed still in its box), with the reason.
  if (error) return;
  // Rejected without feedback: the run waits for the person's next message.
  if (!approve && !text && item.kind === 'plan' && state.view?.runId === item.runId) $('message')?.focus();
}
