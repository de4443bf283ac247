// Drafts: what a person typed and has not sent yet (a rejection's feedback or an approval's note,
// a decline's reason, the next message, their version of a plan), kept for what it was written
// for. Opening another run, going Back, a revised plan redrawing the view or a decision refused
// never loses it; sending it, or starting over, drops it. Kept in memory while typing, and in the
// window's session storage when the page goes away (a reload): gone with the window, sent nowhere.
const PREFIX = 'plandesk-draft:';
const kept = new Map(); // key -> text
const gone = new Set(); // keys dropped since the page loaded, still in the session's storage
let forgotten = false; // signed out: nothing is kept any more

function storage() {
  try { return window.sessionStorage; } catch { return null; } // refused (a locked-down webview)
}

// What a reload left.
try {
  const stored = storage();
  for (let i = 0; stored && i < stored.length; i += 1) {
    const name = stored.key(i);
    if (name?.startsWith(PREFIX)) kept.set(name.slice(PREFIX.length), stored.getItem(name));
  }
} catch { /* unreadable: nothing to bring back */ }

window.addEventListener('pagehide', () => {
  const stored = storage();
  if (!stored || forgotten) return;
  for (const key of gone) stored.removeItem(PREFIX + key);
  gone.clear();
  for (const [key, text] of kept) {
    try { stored.setItem(PREFIX + key, text); } catch { /* full: this one is not kept */ }
  }
});

/** The draft kept for `key`, or ''. */
export function draft(key) {
  return kept.get(key) || '';
}

/** Keeps `text` as the draft for `key` (none if it is only spaces). */
export function setDraft(key, text) {
  if (text.trim()) {
    kept.set(key, text);
    gone.delete(key);
  } else dropDraft(key);
}

/** Drops the draft for `key`: it was sent, or the person started over. */
export function dropDraft(key) {
  if (kept.delete(key)) gone.add(key);
}

/** Forgets every draft, here and in the session's storage: whoever signs in next in this
 * window finds none of them. */
export function forgetDrafts() {
  forgotten = true;
  kept.clear();
  gone.clear();
  try {
    const stored = storage();
    const names = [];
    for (let i = 0; stored && i < stored.length; i += 1) names.push(stored.key(i));
    for (const name of names) if (name?.startsWith(PREFIX)) stored.removeItem(name);
  } catch { /* unreadable: nothing to forget there */ }
}

/** Fills `box` with the draft for `key`, if there is one, and keeps what is typed in it from
 * now on; whether there was one. */
export function keepDraft(box, key) {
  const text = draft(key);
  if (text) box.value = text;
  box.addEventListener('input', () => setDraft(key, box.value));
  return Boolean(text);
}
