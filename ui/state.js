// What the window knows: app info, the inbox and runs lists, the view on screen, live streams.
// The end-to-end tests and the benchmark read it as window.__plandesk (set at boot).
import { metrics } from './metrics.js';

export const state = {
  info: null,
  inbox: [],
  runs: [],
  selected: -1, // index in the inbox of the highlighted item
  view: null, // { name, runId?, ... }
  live: new Map(), // runId -> { transcript, status, running }
  metrics, // timings the benchmark reads (metrics.js)
};
