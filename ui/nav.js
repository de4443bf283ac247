// Navigation. Each view module registers how to open it under a name; anything opens a view with
// go(name, ...args), so view modules never import one another. setView records the view on
// screen (state.view), tells the backend which run is being looked at, and tells watchers.
import { call } from './api.js';
import { $ } from './dom.js';
import { state } from './state.js';

const views = new Map(); // name -> open(...args)
const watchers = [];
let opened = 0; // how many times a view was opened: a later one supersedes one still being read

export function register(name, open) {
  views.set(name, open);
}

/** Opens the view registered as `name`; returns what opening it returns (often a promise). */
export function go(name, ...args) {
  const open = views.get(name);
  if (!open) throw new Error(`no view named ${name}`);
  opened += 1;
  return open(...args);
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
  state.view = next;
  call('set_viewing', { runId: next.runId || null }).catch(() => {});
  for (const watch of watchers) watch(next);
}

/** Calls `watch(view)` whenever the view on screen changes. */
export function onViewChange(watch) {
  watchers.push(watch);
}

/** The element views draw into. */
export const viewEl = () => $('view');
