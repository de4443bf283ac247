// Edit before approving: the reviewer rewrites the plan beside a live preview (rendered by the
// engine, as every plan is); saving makes it a revision of theirs, written to the plan file,
// which then waits for their decision like any other. Closing the editor unsaved keeps their
// version as a draft, back the next time they edit that revision, until they start over.
import { call } from './api.js';
import { h, clear } from './dom.js';
import { showError, showNotice } from './banner.js';
import { pagedPreview } from './plan.js';
import { dropDraft, keepDraft } from './drafts.js';

/** Replaces `slot`'s content with an editor for `revision`; `done()` when saved or cancelled. */
export async function openEditor(revision, slot, done) {
  let source;
  try { source = await call('revision_source', { id: revision.id }); } catch (e) { showError(e); return; }
  const text = h('textarea', { id: 'plan-editor', spellcheck: 'false', 'aria-label': 'Your version of the plan' });
  text.value = source.markdown;
  const key = `edit:${revision.id}`;
  const resumed = keepDraft(text, key) && text.value !== source.markdown;
  const preview = h('article', { class: 'plan editor-preview', id: 'plan-preview', 'aria-label': 'Preview' });
  let timer;
  let asked = 0;
  // A long plan's preview is in pages, only those near its scroll position in the document: a
  // 200 KB plan built whole held the window ~190 ms at every pause in typing.
  const heights = new Map();
  let stop = () => {};
  const refresh = async () => {
    const mine = ++asked;
    try {
      const { pages } = await call('preview', { markdown: text.value });
      if (mine !== asked) return;
      const at = preview.scrollTop;
      stop(); // keeps the heights its pages have now
      // Built aside, then swapped in at once: the preview never shows, or measures, empty.
      const body = h('div');
      stop = pagedPreview(body, pages, { scroller: preview, heights, at }); // sanitised by the engine
      preview.replaceChildren(body);
      preview.scrollTop = at;
    } catch (e) { showError(e); }
  };
  text.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(refresh, 150); });
  const save = async () => {
    let edited;
    try { edited = await call('edit_plan', { revisionId: revision.id, text: text.value }); } catch (e) { showError(e); return; }
    dropDraft(key);
    if (edited.notWritten) showNotice(`Saved as revision ${edited.revision.revisionNo}. ${edited.notWritten}`);
    done(edited.revision);
  };
  const card = h('section', { class: 'review editor', 'aria-label': 'Edit the plan' },
    h('div', { class: 'review-head' }, h('div', {},
      h('h2', {}, `Editing: ${revision.title || 'Untitled plan'}`),
      h('div', { class: 'meta-line' }, `Your version becomes revision ${revision.revisionsInThread + 1} and is written to ${revision.path}. Approving it tells the agent what you changed.`),
      resumed ? resumedNote(() => {
        dropDraft(key);
        text.value = source.markdown;
        refresh();
        text.focus();
      }) : '')),
    h('div', { class: 'editor-panes' }, text, preview),
    h('div', { class: 'review-foot' }, h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'primary', id: 'edit-save', onclick: save }, 'Save my version'),
      h('button', { type: 'button', id: 'edit-cancel', title: 'Leave the editor; your version waits here until you save it or start over', onclick: () => done(null) }, 'Close'),
      h('span', { class: 'hint' }, 'Ctrl+Enter saves; Esc closes the editor, keeping your version for next time.'))));
  clear(slot).append(card);
  refresh();
  text.focus();
}

/** The line saying that the editor shows the version the person left unsaved, with a button
 * that puts the plan back as it was submitted (`startOver`) and takes the line away. */
function resumedNote(startOver) {
  const note = h('p', { class: 'meta-line', id: 'edit-resumed', role: 'status' }, 'Your unsaved version is back. ',
    h('button', { type: 'button', class: 'link', id: 'edit-start-over', onclick: () => { note.remove(); startOver(); } }, 'Start over from the plan'));
  return note;
}
