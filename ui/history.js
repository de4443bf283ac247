// History: every revision of every plan, filtered by status and searched by title and text; and
// one revision on its own (rendered or source, with what the rendering hides).
import { call, newestRead } from './api.js';
import { h, clear, when, badge, shorten, emptyState } from './dom.js';
import { showError, showNotice } from './banner.js';
import { go, keepInEntry, latest, register, restored, setView, viewEl } from './nav.js';
import { planView } from './plan.js';
import { renderRevisionProgress } from './progress.js';

const STATUSES = ['all', 'pending', 'approved', 'rejected', 'superseded', 'abandoned', 'expired', 'answered-in-agent'];

async function showHistory(filter = { status: 'all', query: '' }) {
  // Back to the history: its filter, and where it was scrolled to once its first page is in.
  const back = restored();
  let scroll = back?.scroll || 0;
  filter = back?.filter || filter;
  setView({ name: 'history' });
  const status = h('select', { id: 'history-status', 'aria-label': 'Status' },
    STATUSES.map((s) => h('option', { value: s, selected: s === filter.status }, s === 'all' ? 'All revisions' : (s[0].toUpperCase() + s.slice(1)).replace(/-/g, ' '))));
  const query = h('input', { id: 'history-query', type: 'search', value: filter.query, placeholder: 'Search titles and plan text', 'aria-label': 'Search' });
  const rows = h('div', { class: 'rows', id: 'history-rows' });
  // Each change of the filter reads the list again; only the newest read is shown, on this view.
  const reads = newestRead();
  const load = async () => {
    const newest = reads();
    const stale = () => !newest() || !rows.isConnected;
    const filter = { status: status.value, query: query.value };
    keepInEntry({ filter });
    const read = (before) => call('history', { filter, before, limit: PAGE });
    let first;
    try { first = await read(null); } catch (e) {
      if (stale()) return;
      // Not the list of another filter under this one's controls: what failed, and a retry.
      showError(e);
      clear(rows).append(emptyState('Could not read the history', e?.message || String(e),
        h('button', { type: 'button', id: 'history-retry', onclick: load }, 'Try again')));
      return;
    }
    if (stale()) return;
    clear(rows);
    if (!first.revisions.length) rows.append(emptyState('No revisions', query.value || status.value !== 'all' ? 'Nothing matches this filter.' : 'Plans you review will be kept here, every revision.'));
    else listInPages(rows, first, read, historyRow, stale);
    if (scroll) viewEl().scrollTop = scroll;
    scroll = 0;
  };
  status.addEventListener('change', load);
  let timer;
  query.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(load, 150); });
  clear(viewEl()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'History'),
    h('div', { class: 'meta-line' }, 'Every plan revision, never overwritten, with what you decided.')),
  h('button', { type: 'button', id: 'open-audit', onclick: () => go('audit') }, 'Audit trail')),
  h('div', { class: 'filters' }, query, status), rows);
  await load();
}

/** How many rows the history reads at a time. */
const PAGE = 100;

/**
 * Lists `first` (a page of the history: `{ revisions, more }`) in `container`, and the pages
 * after it as the list's end comes into view: `read(before)` reads the page of revisions older
 * than the revision `before`. A history of thousands opens at once and scrolls smoothly, and
 * the window holds only what was scrolled to. Rows are never listed twice: each page starts
 * after the last one's end, whatever was added since. `stale()` says that the view reads
 * another list now: this one stops.
 */
function listInPages(container, first, read, row, stale) {
  const more = h('div', { class: 'list-more muted' });
  let last = null;
  let reading = false;
  const show = (page) => {
    more.before(...page.revisions.map(row));
    last = page.revisions.length ? page.revisions[page.revisions.length - 1].id : last;
    more.replaceChildren(page.more ? 'More…' : '');
    return page.more;
  };
  const next = async () => {
    if (reading) return;
    reading = true;
    observer.unobserve(more);
    more.replaceChildren('Loading more…');
    try {
      const page = await read(last);
      if (stale()) return observer.disconnect();
      // Observed again: if the end is still in view, the next page is read at once.
      if (show(page)) observer.observe(more);
      else observer.disconnect();
    } catch (e) {
      if (stale()) return observer.disconnect();
      showError(e);
      more.replaceChildren(h('button', { type: 'button', class: 'link', onclick: next }, 'Could not read more. Try again'));
    } finally { reading = false; }
  };
  const observer = new IntersectionObserver((entries) => {
    if (stale()) observer.disconnect();
    else if (entries.some((e) => e.isIntersecting)) next();
  }, { rootMargin: '400px' });
  container.append(more);
  if (show(first)) observer.observe(more);
}

function historyRow(r) {
  return h('button', { class: 'row-item', type: 'button', onclick: () => go('revision', r.id) },
    h('span', { class: 'title' }, h('strong', {}, r.title || 'Untitled plan'), ` · revision ${r.revisionNo}`),
    badge(r.status),
    h('span', { class: 'meta-line' }, h('span', {}, r.path), h('span', {}, when(r.submittedAt)),
      r.decidedBy ? h('span', {}, `decided by ${r.decidedBy}`) : '', h('span', {}, shorten(r.prompt, 60))),
    r.feedback ? h('span', { class: 'feedback-quote' }, `“${r.feedback}”`) : '');
}

async function showRevision(id) {
  const current = latest();
  let revision;
  try { revision = await call('revision', { id }); } catch (e) { showError(e); return; }
  if (!current()) return;
  setView({ name: 'revision', runId: revision.runId });
  const plan = planView(revision, {});
  const progress = h('div', { id: 'revision-progress' });
  clear(viewEl()).append(
    h('div', { class: 'page-head' }, h('div', {},
      h('h1', {}, revision.title || 'Untitled plan'),
      h('div', { class: 'meta-line' }, badge(revision.status), h('span', {}, revision.path),
        h('span', {}, `Revision ${revision.revisionNo} of ${revision.revisionsInThread}`), h('span', {}, when(revision.submittedAt)),
        revision.decidedBy ? h('span', {}, `decided by ${revision.decidedBy}`) : '')),
    h('div', { class: 'actions' },
      revision.revisionsInThread > 1 ? h('button', { type: 'button', onclick: () => go('compare', revision.id, null) }, 'Compare revisions') : '',
      h('button', { type: 'button', onclick: () => go('run', revision.runId) }, 'Open the run'))),
    revision.feedback ? h('div', { class: 'between' }, h('div', { class: 'fb' }, h('strong', {}, 'Feedback: '), revision.feedback)) : '',
    progress,
    h('div', { class: 'plan-bar' }, plan.toggle),
    h('section', { class: 'review' }, plan.warning, plan.rendered, plan.source));
  // An approved plan keeps what was done after its approval.
  if (revision.status === 'approved') renderRevisionProgress(revision.id, progress);
}

register('history', showHistory);
register('revision', showRevision);

/** What each kind of audit entry records, in words (the export keeps the kinds). */
const KIND_WORDS = {
  submitted: 'Submitted', decided: 'Decided', commented: 'Commented', 'comment-resolved': 'Resolved a comment',
  'comment-reopened': 'Reopened a comment', edited: 'Edited the plan', 'mode-switched': 'Switched mode',
  answered: 'Answered the agent', 'token-created': 'Gave access', 'token-revoked': 'Took access back',
  'step-marked': 'Marked a step',
};

/** A comment's lines and words, as its `commented` entry recorded them. */
function commentWords(d) {
  const [start, end] = d.lines || [];
  return `${start === end ? `line ${start}` : `lines ${start}–${end}`}: “${shorten(d.text, 120)}”`;
}

/** What an audit entry says, in a line. The revision it is about is the Revision column's: the
 * store's own numbering of revisions is not the plan's ("revision 2"), and is left out; nor is
 * a comment's id: a comment resolved or reopened is named by its lines and words, from the
 * entry that recorded it (`comments`, by id), where the trail shown holds it. */
function detail(entry, comments) {
  const d = entry.data || {};
  switch (entry.kind) {
    case 'submitted': return d.title || d.path || '';
    case 'decided': return `${d.action}${d.feedback ? `: “${shorten(d.feedback, 120)}”` : ''}`;
    case 'commented': return commentWords(d);
    case 'mode-switched': return `${d.from} → ${d.to}`;
    case 'comment-resolved': case 'comment-reopened': {
      const comment = comments.get(d.commentId);
      return comment ? `the comment on ${commentWords(comment)}` : 'a comment';
    }
    case 'edited': return d.path || '';
    case 'answered': return shorten(d.answer, 140);
    case 'step-marked': return `step ${d.step}: ${d.mark === 'clear' ? 'mark cleared' : d.mark.replace(/-/g, ' ')}`;
    case 'token-created': case 'token-revoked': return tokenDetail(entry, d);
    default: return shorten(JSON.stringify(d), 140);
  }
}

/** A token's entry in words: an agent's token, a sign-in link (made, used from a browser, or
 * withdrawn) or a browser's session (signed in, signed out). */
function tokenDetail(entry, d) {
  const name = `“${d.token}”`;
  const created = entry.kind === 'token-created';
  switch (d.kind) {
    case 'pairing':
      if (created) return `sign-in link made for ${name}`;
      return entry.process === 'web' ? `sign-in link for ${name} used` : `sign-in link for ${name} withdrawn`;
    case 'session': return created ? `${name} signed in from a browser` : `${name} signed out`;
    default: return `agent token ${name} ${created ? 'created' : 'revoked'}`;
  }
}

/** The audit trail: who did what, when, from where; whether its chain holds; export. */
async function showAudit() {
  const current = latest();
  let audit;
  try { audit = await call('audit', { runId: null }); } catch (e) { showError(e); return; }
  if (!current()) return;
  setView({ name: 'audit' });
  const check = audit.check;
  // What was checked and what could not be, in the library's words (the CLI's too). Nothing
  // found wrong but the end not checked to the newest entry is a warning, not a pass.
  const endChecked = check.head.state === 'reached' && check.head.recorded === check.entries;
  const state = !check.holds ? 'broken' : endChecked ? 'ok' : 'unchecked';
  const chain = h('p', { class: `audit-chain ${state}`, id: 'audit-chain' }, check.summary);
  const exportButton = h('button', { type: 'button', id: 'export-audit', onclick: async () => {
    try {
      const path = await call('export_audit', {});
      if (path) showNotice(`Exported to ${path}`);
    } catch (e) { showError(e); }
  } }, 'Export as JSON lines');
  // Roles spelled out: on a phone the table is laid out as blocks (style.css), which takes a
  // table's meaning away in some browsers' accessibility trees.
  const comments = new Map(audit.entries.filter((e) => e.kind === 'commented').map((e) => [e.data?.commentId, e.data]));
  const rows = audit.entries.slice().reverse().map((e) => h('tr', { role: 'row', dataset: { kind: e.kind } },
    h('td', { role: 'cell' }, when(e.at)),
    h('td', { role: 'cell' }, e.actor),
    h('td', { role: 'cell' }, e.process),
    h('td', { role: 'cell' }, KIND_WORDS[e.kind] || e.kind),
    h('td', { role: 'cell', title: e.revisionSha || '' }, e.revisionSha ? e.revisionSha.slice(0, 10) : ''),
    h('td', { role: 'cell', class: 'detail' }, detail(e, comments))));
  clear(viewEl()).append(
    h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'Audit trail'),
      h('div', { class: 'meta-line' }, 'Every submission, comment, edit, decision and mode switch. Append-only; each entry carries the hash of the one before.')),
    h('div', { class: 'actions' }, exportButton, h('button', { type: 'button', onclick: () => go('history') }, 'Back to history'))),
    chain,
    rows.length
      ? h('table', { class: 'audit-table', id: 'audit-table', role: 'table' },
        h('thead', { role: 'rowgroup' }, h('tr', { role: 'row' }, ['When', 'Who', 'From', 'What', 'Revision', 'Detail'].map((t) => h('th', { role: 'columnheader' }, t)))),
        h('tbody', { role: 'rowgroup' }, rows))
      : emptyState('Nothing yet', 'Decisions and the plans they were made on will be listed here.'));
}

register('audit', showAudit);
