// The keyboard: j/k move in the inbox, a approves, r goes to the feedback box, s switches the plan
// between rendered and source, c comments on the selected lines, e edits the plan, n new run,
// h history, ? the list, Ctrl+Enter sends the box it is typed in, Esc leaves a box. Single
// letters act only when no text box has focus.
import { $ } from './dom.js';
import { hideBanner } from './banner.js';
import { go, viewEl } from './nav.js';
import { moveSelection } from './sidebar.js';
import { toggleSource } from './plan.js';
import { openHelp } from './settings.js';
import { commentOnSelection } from './comments.js';

function typing(target) {
  return target && (target.tagName === 'TEXTAREA' || target.tagName === 'INPUT' || target.tagName === 'SELECT');
}

export function onKey(event) {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    const target = event.target;
    if (target.id === 'feedback') {
      event.preventDefault();
      const reject = $('reject');
      if (reject?.rejectNow) reject.rejectNow(); else reject?.click();
    }
    else if (target.id === 'message') { event.preventDefault(); $('send')?.click(); }
    else if (target.id === 'comment-text') { event.preventDefault(); $('comment-save')?.click(); }
    else if (target.id === 'plan-editor') { event.preventDefault(); $('edit-save')?.click(); }
    else if (target.id === 'prompt' || target.closest?.('form.form')) { event.preventDefault(); $('start')?.click(); }
    return;
  }
  if (event.key === 'Escape') {
    if (event.target.id === 'plan-editor') { $('edit-cancel')?.click(); return; }
    if (event.target.id === 'comment-text') { $('comment-cancel')?.click(); viewEl().focus(); return; }
    if (typing(event.target)) { event.target.blur(); viewEl().focus(); }
    hideBanner();
    return;
  }
  if (typing(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
  if (document.querySelector('dialog[open]')) return;
  switch (event.key) {
    case 'j': moveSelection(1); break;
    case 'k': moveSelection(-1); break;
    case 'a': $('approve')?.click(); break;
    case 'r': if ($('feedback')) $('feedback').focus(); else $('reject')?.click(); break;
    case 's': toggleSource(); break;
    case 'c': if (!$('comment')) return; commentOnSelection(); break;
    case 'e': if (!$('edit')) return; $('edit').click(); break;
    case 'n': if ($('new-run').hidden) return; go('new'); break;
    case 'h': go('history'); break;
    case '?': openHelp(); break;
    default: return;
  }
  event.preventDefault();
}
