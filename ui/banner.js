// The error banner above the view: what failed, and at most one action (e.g. Retry).
import { describe } from './api.js';
import { $ } from './dom.js';

export function showError(error, action) {
  $('banner').className = 'banner';
  $('banner-text').textContent = describe(error);
  const button = $('banner-action');
  button.hidden = !action;
  if (action) {
    button.textContent = action.label;
    button.onclick = () => { hideBanner(); action.run(); };
  }
  $('banner').hidden = false;
}

/** Something the person should know that is not a failure (the info style). */
export function showNotice(text) {
  showError({ message: text });
  $('banner').className = 'banner info';
}

export function hideBanner() {
  $('banner').hidden = true;
}
