// A plan as the reviewer sees it: rendered, or its exact source (Rendered / Source, key `s`),
// under a warning when the source holds things the rendered view does not show. The engine
// sanitises `html` and `sourceHtml` (comrak with raw HTML escaped, then ammonia); they are the
// only HTML this window inserts. Everything else, findings included, is set as text.
import { call } from './api.js';
import { h } from './dom.js';
import { showError } from './banner.js';

/**
 * The parts of a revision's plan view, for the caller to place: `toggle` (Rendered / Source),
 * `warning` (null when nothing is hidden), `rendered` and `source` (one of them shown).
 * `id` names the rendered article; the source is `${id}-source`.
 */
export function planView(revision, { id } = {}) {
  const rendered = h('article', { class: 'plan review-body', id, 'aria-label': 'The plan, rendered' });
  rendered.innerHTML = revision.html; // sanitised by the engine
  // The whole plan is rendered (its title heading too, as the CLI shows it): the head names it.
  if (revision.title) rendered.querySelector(':scope > h1:first-child')?.remove();
  const source = h('div', { class: 'plan-source-view review-body', id: id ? `${id}-source` : null,
    'aria-label': 'The plan, exact source', hidden: true });
  // Filled the first time it is shown (or read, e.g. by a selection): a second copy of a large
  // plan in the document would cost its layout when the plan appears.
  let filled = false;
  source.fill = () => {
    if (filled) return;
    filled = true;
    source.innerHTML = revision.sourceHtml || ''; // sanitised by the engine: escaped, invisible characters marked
  };

  const renderedButton = h('button', { type: 'button', id: 'show-rendered', 'aria-pressed': 'true' }, 'Rendered');
  const sourceButton = h('button', { type: 'button', id: 'show-source', 'aria-pressed': 'false', title: 'The exact text the agent wrote (s)' },
    'Source', h('kbd', {}, 's'));
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

/** Links in plans open in the system browser, never in this window. */
export function onLinkClick(event) {
  const link = event.target.closest && event.target.closest('a[href]');
  if (!link) return;
  event.preventDefault();
  if (link.closest('.plan')) call('open_link', { url: link.getAttribute('href') }).catch(showError);
}
