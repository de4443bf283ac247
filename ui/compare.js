// Two revisions of a plan side by side, changed words marked, with the feedback that led from
// one to the next between them; the newer one, if it waits for a decision, approved from here.
import { call } from './api.js';
import { $, h, clear, shorten, agentName } from './dom.js';
import { diffTable } from './diff.js';
import { showError, hideBanner } from './banner.js';
import { go, latest, register, setView, viewEl } from './nav.js';
import { acceptEditsBox, decide, decisionDraft } from './review.js';
import { draft } from './drafts.js';
import { state } from './state.js';

/** Compares revision `rightId` with `leftId` (default: the one before it in its thread). */
async function showCompare(rightId, leftId) {
  hideBanner();
  const current = latest();
  let thread;
  try {
    thread = await call('plan_thread', { id: rightId });
  } catch (e) { showError(e); return; }
  if (!current()) return;
  const right = thread.find((r) => r.id === rightId) || thread[thread.length - 1];
  const left = leftId ? thread.find((r) => r.id === leftId) : thread[Math.max(0, thread.indexOf(right) - 1)];
  const pick = (id, selected) => h('select', { id, 'aria-label': id === 'left-rev' ? 'Older revision' : 'Newer revision' },
    thread.map((r) => h('option', { value: String(r.id), selected: r.id === selected.id }, `Revision ${r.revisionNo} · ${r.status}`)));
  const leftSel = pick('left-rev', left);
  const rightSel = pick('right-rev', right);
  const onChange = () => go('compare', Number(rightSel.value), Number(leftSel.value));
  leftSel.addEventListener('change', onChange);
  rightSel.addEventListener('change', onChange);
  let comparison;
  try {
    comparison = await call('compare', { left: left.id, right: right.id });
  } catch (e) { showError(e); return; }
  if (!current()) return;
  setView({ name: 'compare', runId: right.runId });
  const between = comparison.between.map((step) => h('div', { class: 'fb' },
    h('strong', {}, `Revision ${step.revisionNo} was ${step.action}`),
    step.feedback ? `: “${step.feedback}”` : ' without feedback'));
  // Comments beside the lines they are on now (in the newer revision), addressed or not.
  const notes = new Map();
  const gone = [];
  for (const c of comparison.comments || []) {
    const note = h('div', { class: 'compare-comment', dataset: { state: c.state, id: String(c.id) } },
      h('span', { class: `badge ${c.state}` }, c.state.replace('-', ' ')), ' ',
      h('strong', {}, `${c.author}, on revision ${c.revisionNo}: `), c.text);
    if (!c.now) { gone.push(note); continue; }
    const at = notes.get(c.now.end) || [];
    at.push(note);
    notes.set(c.now.end, at);
  }
  clear(viewEl()).append(
    h('div', { class: 'page-head' }, h('div', {},
      h('h1', {}, comparison.right.title || 'Untitled plan'),
      h('div', { class: 'meta-line' }, h('span', {}, comparison.right.path),
        h('span', { id: 'diff-stats' }, `${comparison.diff.changed} changed · ${comparison.diff.added} added · ${comparison.diff.removed} removed`))),
    h('button', { type: 'button', onclick: () => go('run', right.runId) }, 'Back to the run')),
    h('div', { class: 'diff-head' }, 'Compare', leftSel, 'with', rightSel),
    between.length ? h('div', { class: 'between', id: 'between' }, between) : '',
    gone.length ? h('div', { class: 'between', id: 'removed-comments' }, h('strong', {}, 'Comments on lines since removed'), ...gone) : '',
    diffTable(comparison.diff, `Revision ${comparison.left.revisionNo}`, `Revision ${comparison.right.revisionNo}`, notes),
    right.status === 'pending' ? decisionBar(right) : '');
}

/** Below a comparison whose newer revision waits for a decision: approve that revision (the
 * one compared, by its hash), or go to its review to reject it or approve with a note. */
function decisionBar(revision) {
  // Its agent, from the inbox: Claude Code's plan offers the choice its review offers.
  const waiting = state.inbox.find((i) => i.runId === revision.runId && i.toolCallId === revision.toolCallId);
  const item = { runId: revision.runId, toolCallId: revision.toolCallId, kind: 'plan', source: waiting?.source,
    notesReachAgent: waiting?.notesReachAgent };
  // What was typed in its review goes as the note, as an approval there would send it.
  const note = draft(decisionDraft(item));
  const sent = item.notesReachAgent === true;
  const words = `Approve revision ${revision.revisionNo}${!note.trim() ? '' : sent ? ' with note' : ' (note not sent)'}`;
  const approve = h('button', { id: 'approve', class: 'approve', type: 'button', key: 'a',
    onclick: () => decide(item, revision, true, note, { acceptEdits: Boolean(acceptEdits?.box.checked) }) }, words);
  const acceptEdits = acceptEditsBox(item, approve, () => words);
  const review = () => Promise.resolve(go('run', revision.runId)).then(() => $('feedback')?.focus());
  return h('div', { class: 'review-foot compare-decide' }, h('div', { class: 'actions' },
    approve,
    h('button', { id: 'reject', class: 'reject', type: 'button', key: 'r', onclick: review }, 'Reject…'),
    h('span', { class: 'hint' }, 'Reject, or approve with a note, from the review.')),
  note.trim() ? h('p', { class: 'hint', id: 'compare-note' }, sent
    ? `Your note from the review goes with the approval: “${shorten(note.trim(), 200)}”`
    : `Your note from the review is kept with the approval in Plandesk; ${agentName(item.source) || 'the agent'} does not pass it on: “${shorten(note.trim(), 200)}”`) : '',
  acceptEdits?.label || '');
}

register('compare', showCompare);
