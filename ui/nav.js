// Navigation. Each view module registers how to open it under a name; anything opens a view with
// go(name, ...args), so view modules never import one another. setView records the view on
// screen (state.view), tells the backend which run is being looked at, and tells watchers.
import { call } from './api.js';
import { $ } from './dom.js';
import { state } from './state.js';

const views = new Map(); // name -> open(...args)
const watchers = [];
let opened = 0; // how many times a view was opened: a later one supersedes one still being read
let opening = null; // { name, key, done }: the view last opened, until opening it is done

export function register(name, open) {
  views.set(name, open);
}

/** Opens the view registered as `name`; returns what opening it returns (often a promise). */
export function go(name, ...args) {
  const open = views.get(name);
  if (!open) throw new Error(`no view named ${name}`);
  if (!restoring) {
    keepInEntry({ scroll: scrolled });
    remember(name, args);
  }
  opened += 1;
  const mine = { name, key: args[0], done: null };
  opening = mine;
  const result = open(...args);
  const settle = () => { if (opening === mine) opening = null; };
  mine.done = Promise.resolve(result).then(settle, settle);
  return result;
}

// Back and Forward (a phone's Back above all, or a mouse's back button) move between the views
// opened: each view of another name or key is an entry of the page's history, and going back
// opens the one before again. The address stays as it is.
let restoring = false;
// Where the view on screen is scrolled to, as its scroll events tell: kept with its entry as it
// is left, without laying out the view on the way from a click to the next one.
let scrolled = 0;
$('view').addEventListener('scroll', (event) => { scrolled = event.target.scrollTop; }, { passive: true });

/** Records `name` with the plain leading `args` (ids; an option object is what one opening
 * needs, not where it is): a new entry, unless it is the view of the entry on screen. */
function remember(name, args) {
  const end = args.findIndex((a) => a !== null && typeof a !== 'string' && typeof a !== 'number');
  const entry = { view: name, args: end < 0 ? args : args.slice(0, end) };
  const now = history.state;
  if (now && now.view === name && now.args[0] === entry.args[0]) history.replaceState(entry, '');
  else if (now && now.view) history.pushState(entry, '');
  else history.replaceState(entry, '');
}

/** Keeps `extra` (plain data: a filter, where the view was scrolled to) with the entry of the
 * view on screen, for Back or Forward to bring back (see `restored`). */
export function keepInEntry(extra) {
  const now = history.state;
  if (now && now.view) history.replaceState({ ...now, extra: { ...now.extra, ...extra } }, '');
}

/** For a view being opened by Back or Forward (asked as it starts): what its entry kept
 * (`keepInEntry`; the scroll position is kept for every view as it is left). Else null. */
export function restored() {
  return restoring ? history.state?.extra || null : null;
}

window.addEventListener('popstate', (event) => {
  const entry = event.state;
  if (!entry || !views.has(entry.view)) return;
  restoring = true;
  try {
    go(entry.view, ...entry.args);
  } finally {
    restoring = false;
  }
});

/** If the view `name` for `key` is being opened: a promise that settles once it is open (or
 * failed to open). Else null. */
export function beingOpened(name, key) {
  return opening && opening.name === name && opening.key === key ? opening.done : null;
}

/**
 * Opens the view `name` for `key` again, for what changed in it (a run's stream started or
 * ended, its pending plans changed), unless the person is opening another view meanwhile:
 * that one is theirs, and reads what is new itself.
 */
export function redraw(name, key, ...rest) {
  if (opening && (opening.name !== name || opening.key !== key)) return Promise.resolve();
  return go(name, key, ...rest);
}

/** A view drawn without go() (a run shown from its stream before it is stored): whatever was
 * being opened is superseded. */
export function drawnDirectly() {
  opened += 1;
  opening = null;
}

/**
 * For a view being opened (called as it starts): a check that no view was opened since. A view
 * that reads before it draws asks it after each read, so that a slow read never draws over
 * what was opened meanwhile (the next plan, another page, the same run's review handed over
 * with its end).
 */
export function latest() {
  const ticket = opened;
  return () => ticket === opened;
}

export function setView(next) {
  const before = state.view;
  state.view = next;
  // Told only when the run looked at changes (a run's review and then its stream are one run):
  // a call costs the page a little, here on the way from a click to the run's answer.
  const runId = next.runId || null;
  if (!before || (before.runId || null) !== runId) call('set_viewing', { runId }).catch(() => {});
  for (const watch of watchers) watch(next);
}

/** Calls `watch(view)` whenever the view on screen changes. */
export function onViewChange(watch) {
  watchers.push(watch);
}

/** The element views draw into. */
export const viewEl = () => $('view');
