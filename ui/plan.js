// A plan as the reviewer sees it: rendered, or its exact source (Rendered / Source, key `s`),
// under a warning when the source holds things the rendered view does not show. The engine
// sanitises the rendered pages and the source view (comrak with raw HTML escaped, then ammonia);
// they are the only HTML this window inserts. Everything else, findings included, is set as text.
//
// A long plan is tens of thousands of elements: laid out at once it would hold the window for
// hundreds of milliseconds when it appears, and again when it goes. The engine hands it over in
// pages of whole blocks; only the pages near the screen are in the document, the others are
// empty boxes of their height (measured once shown, estimated before), filled as they near the
// screen and emptied when far from it.
import { call, inBrowser } from './api.js';
import { h } from './dom.js';
import { showError } from './banner.js';
import { viewEl } from './nav.js';

/** HTML filled at once when a plan appears (of what came with it): the first screen. The pages
 * near it are filled as soon as it is laid out (by the observer below). */
const FIRST_BYTES = 4 * 1024;
/** Pages within this much of the screen (above and below) are in the document. */
const NEAR = '150%';
/** Estimated height of a page not yet shown, per byte of its HTML; refined by each page shown. */
const estimate = { px: 0, bytes: 0, perByte: 0.2 };

/**
 * The parts of a revision's plan view, for the caller to place: `toggle` (Rendered / Source),
 * `warning` (null when nothing is hidden), `rendered` and `source` (one of them shown).
 * `id` names the rendered article; the source is `${id}-source`. `rendered.onFill(f)` calls
 * `f(page)` for each page put in the document from then on (to mark what is selected in it).
 * `scroller` is the element that scrolls the plan.
 */
export function planView(revision, { id, scroller = viewEl() } = {}) {
  const rendered = h('article', { class: 'plan review-body', id, 'aria-label': 'The plan, rendered' });
  paginate(rendered, revision, scroller);
  const source = h('div', { class: 'plan-source-view review-body', id: id ? `${id}-source` : null,
    'aria-label': 'The plan, exact source', hidden: true });
  // Fetched the first time it is shown (or read, e.g. by a selection): a second copy of a large
  // plan would cost its transfer and its layout when the plan appears.
  let filled = null;
  source.fill = () => {
    filled = filled || call('revision_source', { id: revision.id }).then((s) => {
      source.innerHTML = s.sourceHtml; // sanitised by the engine: escaped, invisible characters marked
    }, (e) => { filled = null; showError(e); });
    return filled;
  };

  const renderedButton = h('button', { type: 'button', id: 'show-rendered', 'aria-pressed': 'true' }, 'Rendered');
  const sourceButton = h('button', { type: 'button', id: 'show-source', 'aria-pressed': 'false', title: 'The exact text the agent wrote (s)', key: 's' },
    'Source');
  const toggle = h('div', { class: 'plan-toggle', role: 'group', 'aria-label': 'Show the plan as' }, renderedButton, sourceButton);

  const show = (mode) => {
    const asSource = mode === 'source';
    if (asSource) source.fill();
    rendered.hidden = asSource;
    source.hidden = !asSource;
    renderedButton.setAttribute('aria-pressed', String(!asSource));
    sourceButton.setAttribute('aria-pressed', String(asSource));
    if (warning) warning.showButton.hidden = asSource;
  };
  renderedButton.addEventListener('click', () => show('rendered'));
  sourceButton.addEventListener('click', () => show('source'));
  const warning = hiddenWarning(revision, () => show('source'));
  return { toggle, warning, rendered, source };
}

/**
 * The editor's live preview of `pages` (a whole plan's HTML in pages, as the engine rendered
 * it), built in `article` (not yet in the document) for `scroller` to show from its scroll
 * position `at`: only the pages near it are filled, as in a review. `heights` keeps each page's
 * height from one preview to the next (by its HTML without line numbers, which an edit above
 * it shifts), so that what is on screen stays where it was as the text changes. Returns what
 * stops it, which keeps the heights of its pages as they are then.
 */
export function pagedPreview(article, pages, { scroller, heights, at }) {
  return paginate(article, { id: null, title: '', pages }, scroller, { heights, at });
}

/**
 * Fills `article` with the plan's pages, and keeps only those near the screen filled. The
 * revision brings its first pages (`pages`) and every page's length (`pageBytes`); the others
 * are fetched once the first are on screen. With `at`, the pages filled first are those near
 * that scroll position of `scroller`; `heights` as in `pagedPreview`. Returns what stops it.
 */
function paginate(article, revision, scroller, { heights = null, at = null } = {}) {
  const fills = [];
  article.onFill = (f) => fills.push(f);
  const sizes = revision.pageBytes || revision.pages.map((html) => html.length);
  const pages = sizes.map((bytes, index) => {
    let el = null;
    return { html: revision.pages[index] ?? null, bytes, index, filled: false, wanted: false, boxed: false,
      // Made when first needed: those of the pages past the first screen, once it is laid out.
      get el() { return (el ||= h('div', { class: 'plan-page' })); } };
  });
  if (heights) for (const page of pages) page.key = page.html.replace(/ data-sourcepos="[^"]*"/g, '');
  const fill = (page) => {
    page.el.innerHTML = page.html; // sanitised by the engine
    // The whole plan is rendered (its title heading too, as the CLI shows it): the head names it.
    if (page.index === 0 && revision.title) page.el.querySelector(':scope > h1:first-child')?.remove();
    page.el.style.height = '';
    page.filled = true;
    page.wanted = false;
    for (const f of fills) f(page.el);
  };
  // A page above the screen that changes height would move what is on screen: keep it still.
  const reveal = (page, above) => {
    const before = parseFloat(page.el.style.height) || 0;
    fill(page);
    if (above) scroller.scrollTop += page.el.getBoundingClientRect().height - before;
  };
  const heightOf = (page) => heights?.get(page.key) ?? Math.round(page.bytes * estimate.perByte);
  const sized = (page) => { page.el.style.height = `${heightOf(page)}px`; };
  const learn = (page, px) => {
    heights?.set(page.key, px);
    estimate.px += px;
    estimate.bytes += page.bytes;
    estimate.perByte = estimate.px / estimate.bytes;
  };
  let bytes = 0;
  let y = 0;
  const screen = at === null ? 0 : scroller.clientHeight || window.innerHeight;
  // Until the plan is first laid out, each run of pages not filled is one box of their height:
  // a long plan's hundreds of empty boxes cost its first frame milliseconds (measured in the app:
  // 2-4 ms for the 241 of a 200 KB plan), and go in right after it (`split`, below).
  const later = []; // { el, pages, px }: a box standing for pages not filled, until split
  for (const page of pages) {
    const top = y;
    y += heightOf(page);
    const near = at === null ? bytes < FIRST_BYTES : y >= at - screen && top <= at + 2 * screen;
    if (near && page.html !== null) {
      fill(page);
      bytes += page.bytes;
      article.append(page.el);
      continue;
    }
    let box = later.at(-1);
    if (!box || box.el !== article.lastChild) {
      box = { el: h('div', { class: 'plan-later' }), pages: [], px: 0 };
      later.push(box);
      article.append(box.el);
    }
    box.pages.push(page);
    page.boxed = true;
    box.px += heightOf(page);
    box.el.style.height = `${box.px}px`;
  }
  if (heights) {
    // Only this plan's pages are worth remembering.
    const keys = new Set(pages.map((page) => page.key));
    for (const key of [...heights.keys()]) if (!keys.has(key)) heights.delete(key);
  }
  let stopped = false;
  let observer = null;
  const stop = () => {
    stopped = true;
    observer?.disconnect();
    const height = (page) => {
      if (page.filled) return page.el.getBoundingClientRect().height;
      return page.boxed ? heightOf(page) : parseFloat(page.el.style.height) || heightOf(page);
    };
    if (heights) for (const page of pages) heights.set(page.key, height(page));
  };
  if (pages.every((p) => p.filled)) return stop;

  const byEl = new Map(); // a page's element -> the page, once observed
  const observe = (page) => { byEl.set(page.el, page); observer.observe(page.el); };
  let first = true;
  observer = new IntersectionObserver((entries) => {
    // Gone with its view, or stopped (entries queued before may still come): nothing to do.
    if (stopped) return;
    if (!article.isConnected) { observer.disconnect(); return; }
    if (first) {
      // Laid out for the first time: what the first pages measure sizes the ones not shown yet,
      // and each takes its own box (observed from now on; those near the screen are filled).
      first = false;
      for (const page of pages) if (page.filled) learn(page, page.el.getBoundingClientRect().height);
      for (const page of pages) if (!page.filled && !page.measured) sized(page);
      split();
    }
    for (const entry of entries) {
      const page = byEl.get(entry.target);
      if (!page) continue; // a box split since
      if (entry.isIntersecting && !page.filled) {
        if (page.html === null) { page.wanted = true; continue; } // filled when it comes
        reveal(page, entry.rootBounds && entry.boundingClientRect.bottom <= entry.rootBounds.top);
      } else if (!entry.isIntersecting) {
        page.wanted = false;
        if (!page.filled || article.hidden || selectedIn(page.el)) continue;
        // Far from the screen: an empty box of the height it had.
        const height = page.el.getBoundingClientRect().height;
        if (!page.measured) learn(page, height);
        page.measured = true;
        page.el.style.height = `${height}px`;
        page.el.textContent = '';
        page.filled = false;
      }
    }
  }, { root: scroller, rootMargin: `${NEAR} 0px` });
  const split = () => {
    for (const box of later.splice(0)) {
      observer.unobserve(box.el);
      box.el.replaceWith(...box.pages.map((page) => page.el));
      for (const page of box.pages) {
        page.boxed = false;
        observe(page);
      }
    }
  };
  for (const page of pages) if (page.filled) observe(page);
  for (const box of later) observer.observe(box.el);

  const from = pages.findIndex((p) => p.html === null);
  if (from < 0) return stop;
  call('revision_pages', { id: revision.id, from }).then((rest) => {
    rest.forEach((html, i) => { if (pages[from + i]) pages[from + i].html = html; });
    const top = scroller.getBoundingClientRect().top;
    for (const page of pages) if (page.wanted && page.html !== null) reveal(page, page.el.getBoundingClientRect().bottom <= top);
  }, showError);
  return stop;
}

/** Whether the person's text selection reaches into `el` (its page stays while it does). */
function selectedIn(el) {
  const sel = window.getSelection();
  return Boolean(sel && sel.rangeCount && !sel.isCollapsed && sel.containsNode(el, true));
}

/** `s`: switches the plan on screen between rendered and source. */
export function toggleSource() {
  document.querySelector('.plan-toggle button[aria-pressed="false"]')?.click();
}

/** "This plan holds N things the rendered view does not show", each with its line. */
function hiddenWarning(revision, showSource) {
  const found = revision.hidden || [];
  const omitted = revision.hiddenOmitted || 0;
  const total = found.length + omitted;
  if (!total) return null;
  const showButton = h('button', { type: 'button', id: 'hidden-show-source', onclick: showSource }, 'Show the source');
  const strip = h('div', { class: 'hidden-warning', id: 'hidden-warning', role: 'note', 'aria-label': 'Hidden content' },
    h('div', { class: 'hidden-warning-head' },
      h('span', { class: 'hidden-warning-icon', 'aria-hidden': 'true' }, '!'),
      h('p', {},
        h('strong', {}, `This plan holds ${total === 1 ? '1 thing' : `${total} things`} the rendered view does not show.`),
        ' The agent has the plan as written, these included: check them in the source before you decide.'),
      showButton),
    h('ul', { class: 'hidden-list' }, found.map((f) => h('li', { dataset: { kind: f.kind } },
      h('span', { class: 'hidden-line' }, `Line ${f.line}`),
      h('span', { class: 'hidden-detail' }, f.detail),
      h('code', { class: 'hidden-excerpt' }, f.excerpt)))),
    omitted ? h('p', { class: 'hidden-more' }, `…and ${omitted} more not listed here.`) : '');
  strip.showButton = showButton;
  return strip;
}

/** Links in plans open in the system browser, never in this window (in a browser: a new tab
 * that knows nothing of this page). Only web and mail links. */
export function onLinkClick(event) {
  const link = event.target.closest && event.target.closest('a[href]');
  if (!link) return;
  event.preventDefault();
  if (!link.closest('.plan')) return;
  const url = link.getAttribute('href');
  if (inBrowser()) {
    if (/^(https?:|mailto:)/i.test(url)) window.open(url, '_blank', 'noopener,noreferrer');
    else showError({ code: 'invalid-input', message: `Only web and mail links open from a plan, not ${url}` });
    return;
  }
  call('open_link', { url }).catch(showError);
}
