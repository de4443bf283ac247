// After Approve: in a run's view, the approved plan with each step's state beside it (live as
// the agent works), what it changed outside the plan, and marks a person sets by hand.
import { call, listen } from './api.js';
import { h, clear, age, when } from './dom.js';
import { state } from './state.js';
import { showError } from './banner.js';

const STATE_LABEL = { done: 'Done', 'not-done-yet': 'Not done yet', 'not-applicable': 'Not applicable' };
const STATE_MARK = { done: '✓', 'not-done-yet': '○', 'not-applicable': '–' };

/** Fills `slot` with the run's progress, if it has an approved plan; keeps it current while the
 * run is on screen. */
export async function renderProgress(runId, slot) {
  if (await fill(slot, 'progress', { runId })) {
    slot.dataset.runId = runId;
    followChanges();
  }
}

/** Fills `slot` with what was done on an approved revision (its history keeps it). */
export function renderRevisionProgress(revisionId, slot) {
  return fill(slot, 'revision_progress', { revisionId });
}

/** Reads progress with `command`; draws it in `slot`. Whether there was any. */
async function fill(slot, command, args) {
  let progress;
  try {
    progress = await call(command, args);
  } catch (e) {
    showError(e);
    return false;
  }
  if (!progress || !slot.isConnected) return false;
  draw(slot, progress);
  return true;
}

function draw(slot, progress) {
  // The agent's own word (its "finished"), not a count of steps: said as the agent's.
  const working = progress.finished
    ? h('span', { class: 'badge finished', title: 'The agent said it finished, and did nothing after' }, 'agent finished')
    : slot.dataset.stopped === 'true'
      ? h('span', { class: 'badge interrupted', title: 'The run stopped before the agent said it finished' }, 'agent stopped')
      : h('span', { class: 'badge running', title: 'The agent has not said it finished' }, 'agent working');
  // What the plan lists under Context, Risks and the like is not work to do: apart, folded.
  const steps = progress.steps.filter((step) => !step.context).map((step) => stepItem(slot, progress, step));
  const context = progress.steps.filter((step) => step.context);
  const unplanned = progress.files.filter((f) => f.changed && !f.planned);
  const commands = progress.commands;
  clear(slot).append(h('section', { class: 'card progress', id: 'progress', 'aria-label': 'Progress of the approved plan' },
    h('div', { class: 'progress-head' },
      h('h2', {}, 'Approved plan'),
      h('span', { class: 'progress-summary', id: 'progress-summary' }, progress.summary),
      working),
    h('div', { class: 'meta-line' },
      h('span', {}, progress.title),
      h('span', {}, `revision ${progress.revisionNo}`),
      progress.approvedAt ? h('span', { title: when(progress.approvedAt) }, `approved ${age(progress.approvedAt)}`) : '',
      progress.lastAt ? h('span', { title: when(progress.lastAt) }, `last change ${age(progress.lastAt)}`) : ''),
    steps.length
      ? h('ol', { class: 'steps', id: 'progress-steps' }, steps)
      : h('p', { class: 'hint' }, 'The plan has no list of steps: every changed file is listed below.'),
    context.length ? h('details', { class: 'hint', id: 'progress-context' },
      h('summary', {}, `Not counted as steps: ${context.length === 1 ? '1 list item' : `${context.length} list items`} under headings such as Context or Risks`),
      h('ul', {}, context.map((step) => h('li', {}, withCode(step.text))))) : '',
    unplanned.length ? h('div', { class: 'unplanned', id: 'unplanned' },
      h('h3', {}, `Changed outside the plan (${unplanned.length})`),
      h('ul', {}, unplanned.map((f) => changedFile(progress, f)))) : '',
    progress.gitError ? h('p', { class: 'hint', id: 'git-error' }, `The workspace's own changes are not shown: ${progress.gitError}.`) : '',
    commands.length ? h('details', { class: 'commands' },
      h('summary', {}, `Commands run (${commands.length})`),
      h('ul', {}, commands.map((c) => h('li', {}, h('code', {}, c.command),
        c.exitCode === null || c.exitCode === undefined ? '' : h('span', { class: c.exitCode === 0 ? 'hint' : 'exit-failed' }, ` exit ${c.exitCode}`))))) : ''));
}

function stepItem(slot, progress, step) {
  const shown = [...step.changed, ...step.ran];
  const mark = (value) => async () => {
    try {
      draw(slot, await call('mark_step', { revisionId: progress.revisionId, step: step.number, mark: value }));
    } catch (e) {
      showError(e);
    }
  };
  // Only the plan its agent works on now is marked (an older approval is history).
  const actions = !progress.current ? []
    : step.byHand
    ? [h('button', { type: 'button', class: 'link', onclick: mark('clear') }, 'Clear mark')]
    : step.state === 'not-done-yet'
      ? [h('button', { type: 'button', class: 'link', onclick: mark('done') }, 'Mark done'),
        h('button', { type: 'button', class: 'link', onclick: mark('not-applicable') }, 'Not applicable')]
      : [];
  return h('li', { class: 'step', dataset: { state: step.state } },
    h('span', { class: 'step-mark', 'aria-hidden': 'true' }, STATE_MARK[step.state]),
    h('div', { class: 'step-body' },
      h('div', { class: 'step-text' }, withCode(step.text)),
      h('div', { class: 'step-state' },
        h('span', { class: 'step-label' }, STATE_LABEL[step.state] + (step.byHand ? ' (marked by hand)' : '')),
        shown.length ? h('span', { class: 'step-shown' }, shown.map((s) => h('code', {}, s))) : '')),
    h('div', { class: 'step-actions' }, actions));
}

/** A file changed outside the plan: a click shows its diff below it (as git or the agent
 * says it), a second one hides it. */
function changedFile(progress, file) {
  const diff = h('pre', { class: 'file-diff', hidden: true });
  const open = async () => {
    if (!diff.hidden) { diff.hidden = true; return; }
    let found;
    try {
      found = await call('file_diff', { revisionId: progress.revisionId, path: file.path });
    } catch (e) {
      showError(e);
      return;
    }
    clear(diff).append(...(found
      ? found.text.split('\n').map((line) => h('span', { class: line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : '' }, `${line}\n`))
      : [h('span', { class: 'hint' }, 'No diff is known for this file: the workspace is no git repository and the agent reported none.')]));
    diff.hidden = false;
  };
  return h('li', {},
    h('button', { type: 'button', class: 'link file-link', onclick: open, title: 'Show what changed' }, h('code', {}, file.path)),
    lines(file), file.outside ? h('span', { class: 'hint' }, ' outside the workspace') : '',
    diff);
}

/** A file's lines added and removed, when git counted them. */
function lines(file) {
  if (file.added === null || file.added === undefined) return '';
  return h('span', { class: 'hint' }, ` +${file.added} −${file.removed ?? 0}`);
}

/** A step's text with its `code spans` shown as code (as text: nothing in it is markup). */
function withCode(text) {
  return text.split('`').map((part, i) => (i % 2 ? h('code', {}, part) : part));
}

let following = false;

/** Live: whatever changes in the store (the agent recorded more work), the progress on screen
 * is read again (the app says so with each `inbox-changed`; the web review's stream with
 * `store-changed` when the inbox stayed the same). */
function followChanges() {
  if (following) return;
  following = true;
  Promise.all([listen('inbox-changed', refresh), listen('store-changed', refresh)]).catch(() => { following = false; });
}

// One read at a time (on a large repository one takes a moment): changes that come meanwhile
// are read once, after it.
let reading = false;
let again = false;

async function refresh() {
  if (reading) { again = true; return; }
  const slot = document.getElementById('progress-slot');
  const runId = slot?.dataset.runId;
  if (!runId || state.view?.runId !== runId) return;
  reading = true;
  try {
    await renderProgress(runId, slot);
  } finally {
    reading = false;
  }
  if (again) { again = false; refresh(); }
}
