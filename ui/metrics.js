// Timings the app benchmark reads (tests/e2e/bench.mjs, as window.__plandesk.metrics). Views only
// mark moments; what is measured, and how, lives here.
export const metrics = {};

/** The page's script runs: its HTML is parsed and its script fetched. */
export function markBooting() {
  metrics.bootAt = performance.now();
}

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
  metrics.planBoxesAtRender = plan.childElementCount; // the boxes that layout placed (pages and runs of pages)
  if (metrics.suspendedAt) {
    metrics.suspendToRendered = metrics.planRenderedAt - metrics.suspendedAt;
    metrics.suspendedAt = null;
  }
}

/** Approve or Reject was clicked on `runId`: the answer, the run's first event and its first
 * chunk on screen are timed from here. */
export function markDecisionClicked(runId) {
  metrics.awaitRun = runId;
  metrics.clickedAt = performance.now();
  metrics.awaitAnswer = true;
  metrics.awaitFirstEvent = true;
  metrics.awaitFirstChunk = true;
}

/** The backend answered the decision (it is durable): how long after it was sent. */
export function markDecisionAnswered() {
  if (metrics.awaitAnswer) {
    metrics.decisionAnswered = performance.now() - metrics.clickedAt;
    metrics.awaitAnswer = false;
  }
}

/** An event of `runId`'s stream reached the page: the first after a decision is timed (what the
 * backend and the way over took; the rest of the way to the first chunk is the page's). */
export function markRunEvent(runId) {
  if (metrics.awaitFirstEvent && runId === metrics.awaitRun) {
    metrics.firstResumedEvent = performance.now() - metrics.clickedAt;
    metrics.awaitFirstEvent = false;
  }
}

/** A chunk of `runId` arrived: in the view on screen when `el` (the stream's transcript, laid
 * out to time it) is given; else off screen (the person moved on), which is not timed. */
export function markChunk(runId, el) {
  if (metrics.awaitFirstChunk && runId === metrics.awaitRun) {
    if (el) {
      el.getBoundingClientRect();
      metrics.firstResumedChunk = performance.now() - metrics.clickedAt;
    }
    metrics.awaitFirstChunk = false;
  }
}

/** The backend refused the decision: nothing more to time for it. */
export function markRefused() {
  metrics.awaitAnswer = false;
  metrics.awaitFirstEvent = false;
  metrics.awaitFirstChunk = false;
}
