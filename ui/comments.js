// Line comments on a plan under review. Select lines (click a block of the rendered plan,
// shift-click to extend, or select text in either view), press c or "Comment", write, save.
// Rejecting sends the open ones to the agent, each quoting its lines. Comments from earlier
// revisions show where their lines went, addressed or not, and can be resolved or reopened.
import { call, newestRead } from './api.js';
import { h, clear, age } from './dom.js';
import { showError } from './banner.js';

const STATES = { open: 'open', resolved: 'resolved', addressed: 'addressed', 'not-addressed': 'not addressed' };

/** `3:1-4:20` → {start: 3, end: 4}. */
function blockLines(el) {
  const m = /^(\d+):\d+-(\d+):\d+$/.exec(el.dataset.sourcepos || '');
  return m ? { start: Number(m[1]), end: Number(m[2]) } : null;
}

function label(lines) {
  return lines.start === lines.end ? `Line ${lines.start}` : `Lines ${lines.start}–${lines.end}`;
}

/** The `c` key acts on the review on screen, if any. */
let active = null;
export function commentOnSelection() {
  if (active) active.start();
}

/** A screen without a mouse or keys (a phone): no shift-click, no key hints. */
const touchOnly = () => window.matchMedia('(hover: none) and (pointer: coarse)').matches;

/**
 * Comments for `revision`, wired to its plan views: returns the panel to place and the bar
 * that says what is selected. `onCount(open)` is told how many comments a rejection sends.
 */
export function commentsFor(revision, plan, { onCount } = {}) {
  let selection = null;
  let comments = [];
  const list = h('ol', { class: 'comment-list', id: 'comments' });
  const form = h('div', { class: 'comment-form', id: 'comment-form', hidden: true });
  const selected = h('span', { id: 'selected-lines' });
  const commentButton = h('button', { type: 'button', id: 'comment', disabled: true, onclick: () => start(), key: 'c' },
    'Comment');
  // How to comment, said in the bar above the plan; where the comments go below the plan (a
  // phone, a narrow window: style.css), in their panel instead.
  const words = touchOnly()
    ? 'Tap a paragraph or list item of the plan, then Comment.'
    : 'Select lines of the plan (click a paragraph or list item, shift-click for more), then press c.';
  const hints = [h('span', { class: 'muted comment-hint', id: 'comment-hint' }, words), h('p', { class: 'muted comment-hint' }, words)];
  const bar = h('div', { class: 'select-bar' }, hints[0], selected, commentButton);
  const panel = h('aside', { class: 'comments', 'aria-label': 'Comments' }, h('h3', {}, 'Comments'), form, list, hints[1]);
  /** Beside the plan, the panel takes its column only while it holds something (a comment, or
   * one being written): until then the plan has the width. */
  function fit() {
    panel.classList.toggle('empty', !comments.length && form.hidden);
    for (const hint of hints) hint.hidden = comments.length > 0 || Boolean(selection);
  }

  /** Marks the blocks under `root` that are selected, or commented on. */
  function decorate(root) {
    for (const el of root.querySelectorAll('[data-sourcepos]')) {
      const l = blockLines(el);
      el.classList.toggle('line-selected', Boolean(selection && l && l.start >= selection.start && l.end <= selection.end));
      const on = l ? comments.filter((c) => c.now && c.state !== 'resolved' && c.now.start <= l.end && c.now.end >= l.start).length : 0;
      el.classList.toggle('commented', on > 0);
      if (on) el.dataset.comments = String(on); else delete el.dataset.comments;
    }
  }
  // A long plan's pages come and go as it scrolls: each is marked as it comes.
  plan.rendered.onFill(decorate);

  function select(lines) {
    selection = lines;
    decorate(plan.rendered);
    selected.textContent = lines ? `${label(lines)} selected` : '';
    commentButton.disabled = !lines;
    // Kept in sight while something is selected (style.css), however far down the plan.
    bar.classList.toggle('active', Boolean(lines));
    fit();
  }

  // Clicking a block selects its lines; shift-click extends; a click on a link does not select.
  plan.rendered.addEventListener('click', (event) => {
    if (event.target.closest('a')) return;
    if (!window.getSelection().isCollapsed) return;
    const block = event.target.closest('[data-sourcepos]');
    const lines = block && blockLines(block);
    if (!lines) return;
    if (event.shiftKey && selection) {
      select({ start: Math.min(selection.start, lines.start), end: Math.max(selection.end, lines.end) });
    } else if (selection && selection.start === lines.start && selection.end === lines.end) {
      select(null);
    } else {
      select(lines);
    }
  });
  // Selected text in either view selects the lines it spans.
  const fromText = () => {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return;
    const range = sel.getRangeAt(0);
    if (plan.rendered.contains(range.commonAncestorContainer)) {
      const at = (node) => (node.nodeType === 1 ? node : node.parentElement)?.closest('[data-sourcepos]');
      const a = at(range.startContainer);
      const b = at(range.endContainer);
      const la = a && blockLines(a);
      const lb = b && blockLines(b);
      if (la && lb) select({ start: Math.min(la.start, lb.start), end: Math.max(la.end, lb.end) });
    } else if (plan.source.contains(range.commonAncestorContainer)) {
      const pre = plan.source.querySelector('code') || plan.source;
      const lineAt = (container, offset) => {
        const r = document.createRange();
        r.setStart(pre, 0);
        r.setEnd(container, offset);
        return r.toString().split('\n').length;
      };
      select({ start: lineAt(range.startContainer, range.startOffset), end: lineAt(range.endContainer, range.endOffset) });
    }
  };
  plan.rendered.addEventListener('mouseup', fromText);
  plan.source.addEventListener('mouseup', fromText);

  function start() {
    fromText();
    if (!selection) {
      showError({ message: 'Select the lines to comment on first: click a paragraph or list item of the plan.' });
      return;
    }
    const lines = selection;
    const text = h('textarea', { id: 'comment-text', rows: '3', placeholder: `Your comment on ${label(lines).toLowerCase()}`, 'aria-label': 'Comment' });
    const save = async () => {
      try {
        await call('add_comment', { revisionId: revision.id, lines, text: text.value });
      } catch (e) { showError(e); return; }
      // The list first: the panel stays while the comment goes from the form to the list.
      await load();
      form.hidden = true;
      clear(form);
      select(null);
    };
    const cancel = () => { form.hidden = true; clear(form); fit(); };
    clear(form).append(
      h('div', { class: 'comment-form-head' }, label(lines)),
      text,
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary', id: 'comment-save', onclick: save }, 'Save comment'),
        h('button', { type: 'button', id: 'comment-cancel', onclick: cancel }, 'Cancel')));
    form.hidden = false;
    fit();
    text.focus();
  }

  async function setResolved(comment, resolved) {
    try { await call('resolve_comment', { id: comment.id, resolved }); } catch (e) { showError(e); return; }
    await load();
  }

  function item(c) {
    const from = c.revisionId === revision.id ? label(c.lines)
      : `${label(c.lines)} of revision ${c.revisionNo}${c.now ? (c.now.start !== c.lines.start || c.now.end !== c.lines.end ? `, now ${label(c.now).toLowerCase()}` : '') : ', since removed'}`;
    return h('li', { class: `comment ${c.state}`, dataset: { state: c.state, id: String(c.id) } },
      h('div', { class: 'comment-head' },
        h('span', { class: 'comment-lines' }, from),
        h('span', { class: `badge ${c.state}` }, STATES[c.state] || c.state),
        h('span', { class: 'muted' }, `${c.author} · ${age(c.createdAt)}`)),
      h('pre', { class: 'comment-quote' }, c.quote.split('\n').map((line, i) => `${c.lines.start + i} │ ${line}`).join('\n')),
      h('p', { class: 'comment-text' }, c.text),
      c.state === 'resolved'
        ? h('button', { type: 'button', class: 'link reopen', onclick: () => setResolved(c, false) }, 'Reopen')
        : h('button', { type: 'button', class: 'link resolve', onclick: () => setResolved(c, true) }, 'Resolve'));
  }

  // Reloaded after each change: only the newest answer is drawn.
  const reads = newestRead();
  async function load() {
    const newest = reads();
    let answer;
    try { answer = await call('comments', { revisionId: revision.id }); } catch (e) { if (newest()) showError(e); return; }
    if (!newest()) return;
    comments = answer;
    clear(list).append(...comments.map(item));
    list.hidden = !comments.length;
    fit();
    decorate(plan.rendered);
    if (onCount) onCount(comments.filter((c) => c.state === 'open').length);
  }

  fit();
  active = { start };
  return { panel, bar, load };
}
