// Timings the app benchmark reads (tests/e2e/bench.mjs, as window.__plandesk.metrics). Views only
// mark moments; what is measured, and how, lives here.
export const metrics = {};

/** The first view is on screen and answers input. */
export function markInteractive() {
  metrics.interactiveAt = performance.now();
}

/** A run suspended on a plan or approval (its stream ends right after). */
export function markSuspended() {
  metrics.suspendedAt = performance.now();
}

/** The plan to review is in the document and laid out (`plan` is its element): how long since
 * the run suspended. */
export function markPlanRendered(plan) {
  plan.getBoundingClientRect(); // lays it out now: what is timed is a plan on screen
  metrics.planRenderedAt = performance.now();
  if (metrics.suspendedAt) {
    metrics.suspendToRendered = metrics.planRenderedAt - metrics.suspendedAt;
    metrics.suspendedAt = null;
  }
}

/** Approve or Reject was clicked on `runId`: the answer and its next chunk are timed from here. */
export function markDecisionClicked(runId) {
  metrics.awaitRun = runId;
  metrics.awaitFirstChunk = performance.now();
  metrics.decisionSentAt = metrics.awaitFirstChunk;
}

/** The backend answered the decision (it is durable): how long after it was sent. */
export function markDecisionAnswered() {
  if (metrics.decisionSentAt) {
    metrics.decisionAnswered = performance.now() - metrics.decisionSentAt;
    metrics.decisionSentAt = null;
  }
}

/** A chunk of `runId` arrived: in the view on screen when `el` (the stream's transcript, laid
 * out to time it) is given; else off screen (the person moved on), which is not timed. */
export function markChunk(runId, el) {
  if (metrics.awaitFirstChunk && runId === metrics.awaitRun) {
    if (el) {
      el.getBoundingClientRect();
      metrics.firstResumedChunk = performance.now() - metrics.awaitFirstChunk;
    }
    metrics.awaitFirstChunk = null;
  }
}

/** The backend refused the decision: nothing more to time for it. */
export function markRefused() {
  metrics.awaitFirstChunk = null;
  metrics.decisionSentAt = null;
}
