// A plan as the reviewer sees it. The engine sanitises `html` (comrak with raw HTML escaped, then
// ammonia); it is the only HTML this window inserts.
import { call } from './api.js';
import { h } from './dom.js';
import { showError } from './banner.js';

/** A revision's rendered plan, under a head that already names it. */
export function planArticle(revision, attrs) {
  const body = h('article', { class: 'plan review-body', ...attrs });
  body.innerHTML = revision.html; // sanitised by the engine (comrak, raw HTML escaped, then ammonia)
  // The whole plan is rendered (its title heading too, as the CLI shows it): the head names it.
  if (revision.title) body.querySelector(':scope > h1:first-child')?.remove();
  return body;
}

/** Links in plans open in the system browser, never in this window. */
export function onLinkClick(event) {
  const link = event.target.closest && event.target.closest('a[href]');
  if (!link) return;
  event.preventDefault();
  if (link.closest('.plan')) call('open_link', { url: link.getAttribute('href') }).catch(showError);
}
