// Side-by-side rendering of the engine's diff rows, changed words marked.
import { h } from './dom.js';

function cell(line, side) {
  if (!line) return [h('td', { class: 'no none' }), h('td', { class: 'blank' })];
  const kind = side === 'left' ? 'del' : 'ins';
  const changed = line.segments.some((s) => s.changed);
  const content = line.segments.map((s) => (s.changed ? h('mark', {}, s.text) : s.text));
  return [
    h('td', { class: 'no' }, String(line.number)),
    h('td', { class: changed || line.whole ? kind : '' }, content.length ? content : ' '),
  ];
}

function row(r, notes) {
  const left = r.left ? { ...r.left, whole: r.kind === 'removed' || r.kind === 'changed' } : null;
  const right = r.right ? { ...r.right, whole: r.kind === 'added' || r.kind === 'changed' } : null;
  const tr = h('tr', { class: r.kind }, ...cell(left, 'left'), ...cell(right, 'right'));
  const here = (r.right && notes.get(r.right.number)) || [];
  return [tr, ...here.map((note) => h('tr', { class: 'comment-row' }, h('td', { colspan: '4' }, note)))];
}

/** Unchanged stretches longer than this are folded, keeping CONTEXT lines on each side. */
const FOLD = 8;
const CONTEXT = 3;

/**
 * A table of the diff (`diff.rows` of `{kind, left, right}`), long unchanged runs folded.
 * `notes` maps a right-hand line number to elements shown under that line (comments).
 */
export function diffTable(diff, leftLabel, rightLabel, notes = new Map()) {
  const body = [];
  const rowsOf = (r) => row(r, notes);
  const rows = diff.rows;
  for (let i = 0; i < rows.length;) {
    let j = i;
    while (j < rows.length && rows[j].kind === 'equal') j += 1;
    const run = j - i;
    const keepHead = i === 0 ? 0 : CONTEXT;
    const keepTail = j === rows.length ? 0 : CONTEXT;
    if (run > FOLD && run > keepHead + keepTail + 1) {
      rows.slice(i, i + keepHead).forEach((r) => body.push(...rowsOf(r)));
      const hidden = rows.slice(i + keepHead, j - keepTail);
      const fold = h('tr', { class: 'fold' }, h('td', { colspan: '4' },
        h('button', { type: 'button', class: 'fold-button' }, `⋯ ${hidden.length} unchanged lines`)));
      fold.querySelector('button').addEventListener('click', () => fold.replaceWith(...hidden.flatMap(rowsOf)));
      body.push(fold);
      rows.slice(j - keepTail, j).forEach((r) => body.push(...rowsOf(r)));
    } else {
      rows.slice(i, j).forEach((r) => body.push(...rowsOf(r)));
    }
    if (j < rows.length) body.push(...rowsOf(rows[j]));
    i = j + 1;
  }
  return h('table', { class: 'diff', 'aria-label': 'Side-by-side comparison' },
    h('colgroup', {}, h('col', { class: 'no-col' }), h('col'), h('col', { class: 'no-col' }), h('col')),
    h('thead', {}, h('tr', {}, h('th', { colspan: '2' }, leftLabel), h('th', { colspan: '2' }, rightLabel))),
    h('tbody', {}, body));
}
