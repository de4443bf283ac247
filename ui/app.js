// Plandesk's window: it only displays and asks; the backend decides. This module boots it: the
// view modules register themselves with nav.js on import, then the sidebar, dialogs, keyboard
// and first view are set up. Plan HTML arrives sanitised by the engine and is the only HTML
// inserted (plan.js).
import { call, listen, inBrowser, signedOut } from './api.js';
import { $ } from './dom.js';
import { state } from './state.js';
import { markBooting, markInteractive } from './metrics.js';
import { showError, hideBanner } from './banner.js';
import { go, latest } from './nav.js';
import { renderInbox, refreshRuns, inboxChanged, readInbox, openPending, showInbox, foldInbox } from './sidebar.js';
import { onKey } from './keys.js';
import { onLinkClick } from './plan.js';
import { openSettings, openHelp, initDialogs } from './settings.js';
import { warmUpReview } from './run.js';
import './new-run.js';
import './compare.js';
import './history.js';

window.__plandesk = state; // for the end-to-end tests and benchmarks

async function boot() {
  markBooting();
  $('new-run').addEventListener('click', () => go('new'));
  $('history-btn').addEventListener('click', () => go('history'));
  $('settings-btn').addEventListener('click', openSettings);
  $('help-btn').addEventListener('click', openHelp);
  $('inbox-toggle').addEventListener('click', () => foldInbox($('inbox-toggle').getAttribute('aria-expanded') === 'true'));
  $('banner-close').addEventListener('click', hideBanner);
  if (inBrowser()) setUpBrowser();
  initDialogs();
  document.addEventListener('keydown', onKey);
  document.addEventListener('click', onLinkClick);
  // A view opened while the window loads (a key, a plan a notification names) is kept.
  const untouched = latest();
  try {
    // Asked together: each is a round trip to a backend still busy starting. The inbox is read
    // once its watcher listens, so that no change falls between the two.
    [state.info] = await Promise.all([call('app_info'), listen('inbox-changed', inboxChanged),
      listen('open-plan', openPending), listen('open-inbox', showInbox), listen('open-failed', showError),
      // The web review's stream, when the store changed and the inbox did not: runs moved on.
      listen('store-changed', refreshRuns)]);
    const [inbox] = await Promise.all([readInbox(), refreshRuns()]);
    if (inbox) state.inbox = inbox;
    renderInbox();
  } catch (e) {
    showError(e);
    return;
  }
  if (state.info.web) openFromAddress();
  if (state.info.openError) showError(state.info.openError);
  if (untouched()) await openFirstView();
  markInteractive();
  document.body.dataset.ready = 'true';
  // Idle now: ready the first plan's way to the screen, unless one is on it already.
  if (!document.querySelector('.review')) (window.requestIdleCallback || setTimeout)(warmUpReview);
}

/** In a browser: what only the desktop app does is not offered; signing out is. */
function setUpBrowser() {
  document.body.classList.add('in-browser');
  for (const id of ['new-run', 'settings-btn']) $(id).hidden = true;
  const signOut = $('sign-out');
  signOut.hidden = false;
  signOut.addEventListener('click', async () => {
    try {
      await call('sign_out');
    } catch (e) {
      showError(e);
      return;
    }
    signedOut();
  });
}

/** A link to one plan (`/?run=…`, as a notification's webhook sends) opens that plan first. */
function openFromAddress() {
  const runId = new URLSearchParams(location.search).get('run');
  if (runId) state.info.openRun = runId;
}

/** The first view: the plan the app was started on, else the newest waiting, else home or the
 * new-run form (in a browser, which starts no runs: home). */
async function openFirstView() {
  if (state.info.openRun) {
    // Started on a plan (a notification, a link, `plandesk open`): that plan first.
    await openPending({ runId: state.info.openRun, toolCallId: state.info.openToolCallId });
  } else if (state.inbox.length) {
    state.selected = 0;
    renderInbox();
    await go('run', state.inbox[0].runId);
  } else if (state.runs.length || state.info.web) {
    go('home');
  } else {
    go('new');
  }
}

boot();
