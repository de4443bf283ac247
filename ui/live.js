// Live streams: a run's channel, and what its chunks and its end do to the screen. Chunks that
// arrive before the run's view is built are kept, in order, in the stream's transcript.
import { call, runChannel, wholeToolCall } from './api.js';
import { h, clear } from './dom.js';
import { Transcript } from './transcript.js';
import { state } from './state.js';
import { markChunk, markRefused, markRunEvent, markSuspended } from './metrics.js';
import { showError, hideBanner } from './banner.js';
import { redraw } from './nav.js';
import { readInbox, setInbox } from './sidebar.js';

/** How long a continuation waits for its run's first answer before its view switches anyway. */
const SWITCH_MS = 100;
/** How long a suspension waits for its stream's end before it is shown in the stream (the end
 * comes within milliseconds, with the review that replaces the stream's view). */
const SUSPENSION_MS = 250;

/** A live stream's state: its transcript, whether it still runs, and how it stands. */
export function newLive() {
  const live = { transcript: new Transcript(), running: true, status: 'running', runId: null };
  live.channel = runChannel((event) => onRunEvent(live, event));
  return live;
}

function onRunEvent(live, event) {
  markRunEvent(live.runId);
  // A continuation's view is drawn when its run first answers (see follow).
  if (live.draw) live.draw();
  if (event.event === 'chunk') {
    const chunk = event.data;
    live.runId = chunk.runId;
    if (chunk.type === 'tool-call-suspended' || chunk.type === 'tool-call-approval') {
      // The stream ends right after this, and the review takes its view's place: drawn now,
      // the change would cost a frame (painted on the CPU, as long as the review's own) between
      // the run stopping and its review. Shown in the stream only if its end is late.
      markSuspended();
      markChunk(chunk.runId, null);
      live.status = 'suspended';
      live.transcript.stored();
      setTimeout(() => {
        if (!live.running) return;
        live.transcript.chunk(chunk, wholeToolCall(chunk.runId));
        updateStatus(live);
      }, SUSPENSION_MS);
      return;
    }
    live.transcript.chunk(chunk, wholeToolCall(chunk.runId));
    if (chunk.type === 'start') {
      live.started = true;
      // The run's view switches to this stream, unless it shows it already.
      if (state.view && state.view.runId === chunk.runId && state.view.stream !== live) redraw('run', chunk.runId, { live });
    }
    if (chunk.type === 'error') {
      live.error = chunk.payload.error;
    }
    markChunk(chunk.runId, state.view && state.view.stream === live ? live.transcript.el : null);
    updateStatus(live);
    return;
  }
  live.running = false;
  if (event.event === 'ended') {
    live.status = event.data.status;
    if (event.data.error) live.error = event.data.error;
  } else if (event.event === 'refused') {
    // E.g. another process is driving this run right now: say so; the run itself is unchanged.
    live.status = 'failed';
    live.error = event.data;
    showError(event.data);
  } else if (event.event === 'cancelled') {
    live.status = 'cancelled';
  }
  updateStatus(live);
  const runId = live.runId || (event.data && event.data.runId);
  // A run that stopped for a decision shows its review from the top; any other stays where it was.
  const keepScroll = live.status !== 'suspended';
  const onScreen = Boolean(state.view && state.view.runId === runId);
  // A run that stopped on a plan hands its review over with its end: drawn from it at once.
  const handed = event.event === 'ended' && event.data.review;
  const shown = onScreen
    ? redraw('run', runId, { live, keepScroll, detail: handed?.detail, revision: handed?.revision })
    : Promise.resolve();
  // The inbox watcher notices too, within a poll; this keeps the sidebar in step at once.
  shown.then(readInbox).then((items) => items && setInbox(items)).catch(showError);
}

/** The line under a streaming run: working, or waiting for you. */
export function updateStatus(live) {
  const el = document.querySelector('.run-status');
  if (!el || !state.view || state.view.runId !== live.runId) return;
  clear(el);
  if (live.running) el.append(h('span', { class: 'spinner' }), live.status === 'suspended' ? 'Waiting for you' : 'Working…');
}

/**
 * Carries a run on (a decision, a message, a retry): `invoke(channel)` asks the backend to start
 * the continuation, and the view switches to its stream, the stored transcript first and its
 * chunks below it in order, once the run first answers (or after SWITCH_MS). If the backend
 * refuses (decided elsewhere meanwhile, a newer revision), the view goes back to the run as it
 * stands, and says why. Returns the error that stopped it, or null.
 */
export async function follow(runId, invoke, { said } = {}) {
  hideBanner();
  const live = newLive();
  live.runId = runId;
  // The run on screen (not streaming) already shows its stored transcript: the stream carries
  // that one on. Reading the whole run again first (a big plan's run is slow to fetch and lay
  // out) would stand between the click and its answer.
  const shown = state.view && state.view.name === 'run' && state.view.runId === runId && !state.view.stream
    && state.view.detail ? state.view : null;
  let detail = shown && shown.detail;
  if (shown) {
    live.transcript = shown.transcript;
  } else {
    try {
      detail = await call('run_detail', { runId });
    } catch (e) {
      showError(e);
      return e;
    }
    live.transcript.load(detail.transcript, wholeToolCall(runId));
  }
  if (said) live.transcript.user(said);
  state.live.set(runId, live);
  // Asked first, drawn when the run answers: the backend records the decision and starts the
  // run while nothing else competes with it for the machine (a frame drawn meanwhile, on a
  // machine that paints on its CPU, costs as much as the whole answer), and the view switches
  // to the stream with its first chunk in it. If the run has not answered within SWITCH_MS,
  // the view switches anyway, to say it is working.
  // A person who has moved on meanwhile (the next plan, another view) stays where they went: the
  // stream goes on, and the run shows it when opened.
  const answer = invoke(live.channel);
  const from = state.view;
  let drawn = null;
  const switched = new Promise((resolve) => {
    live.draw = () => {
      live.draw = null;
      if (state.view === from) drawn = redraw('run', runId, { live, detail: { ...detail, pending: [], error: null, interrupted: false } });
      resolve();
    };
  });
  const late = setTimeout(() => live.draw && live.draw(), SWITCH_MS);
  try {
    await answer;
  } catch (e) {
    clearTimeout(late);
    markRefused();
    live.draw = null;
    live.running = false;
    state.live.delete(runId);
    await drawn;
    await redraw('run', runId);
    showError(e);
    return e;
  }
  await switched;
  clearTimeout(late);
  await drawn;
  return null;
}
