// App benchmarks (not tests): `./x bench app`. The real app under Xvfb, driven by WebDriver.
//  - cold start to interactive: from asking WebDriver to launch the app to the first view
//    answering input, as the page tells it (performance.timeOrigin, the wall clock when its
//    load began, plus the moment it marks) against Date.now() here, the same wall clock.
//    `sessionReadyMs`, when WebDriver's polling (every 100 ms) first saw it ready, is kept to
//    compare with figures of before 2026-12-04, which were that one. Split in two: the launch
//    to the page's load beginning (`pageStartMs`: the process, Tauri, WebKit's processes, all
//    before any of the page), and the page's own part (`interactiveMs`); the floor of the first
//    is an empty Tauri window's, launched the same way (`emptyWindowPageStartMs`). The page's
//    part split again: its load beginning to its script running (`scriptStartMs`: the HTML, the
//    script fetched from the app), and from there to interactive (`bootMs`: the backend's first
//    answers, the first view)
//  - suspension -> plan rendered in the webview, for a ~200 KB plan
//  - click Approve (half a second after the plan is on screen) -> first chunk of the resumed
//    run, laid out in the view on screen; and -> the run's first event reaching the page (the
//    backend's part and the way over: the rest is the page's)
//  - idle memory of the app and its WebKit processes (PSS, after a few idle seconds), and of an
//    empty Tauri window on the same machine (the floor: `src-tauri/examples/empty_window.rs`),
//    each measured while the other is not running
// Medians and p95 over ROUNDS (default 20), printed and written to target/bench/app.json.
// Two builds compared in one run (the machine is shared: an hour can be twice as slow as the
// next): PLANDESK_APPS=before=/a/plandesk-app,after=/b/plandesk-app takes turns round by round,
// ROUNDS each, and reports each figure per build (each binary named plandesk-app).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { APP, fixture, openApp, startDriver } from './harness.mjs';
import { Session } from './webdriver.mjs';

const PORT = 4460;
const ROUNDS = Number(process.env.ROUNDS || 20);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.round((xs.length - 1) * q)];
const median = (xs) => quantile(xs, 0.5);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** How long the app, and the empty window, sit idle before their memory is read. */
const IDLE_MS = 4000;
/** How long the plan is on screen before Approve is clicked. */
const READ_MS = 500;

function bigPlan() {
  let plan = '# Migrate the store to a new schema\n\n';
  for (let i = 0; plan.length < 200 * 1024; i += 1) {
    plan += `## Step ${i}\n\nMove table \`t${i}\` to the new layout; keep **reads** working while \`backfill_${i}\` runs.\n\n`;
    plan += `- check ${i}: row counts match\n- check ${i}: p99 latency under 20 ms\n\n| table | rows |\n|---|---|\n| t${i} | ${i * 1000} |\n\n`;
    plan += '```rust\nfn migrate(conn: &Connection) -> Result<()> { Ok(()) }\n```\n\n';
  }
  return plan;
}

function pss(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').split('\n').find((l) => l.startsWith('Pss:'));
    return Number(line.split(/\s+/)[1]);
  } catch { return 0; }
}

/** The processes `pgrep` finds with `args` (none: an empty list). */
function pgrep(...args) {
  try { return execFileSync('pgrep', args, { encoding: 'utf8' }).trim().split('\n').map(Number); } catch { return []; }
}

/** `pids` and their child processes (WebKit's web and network processes). */
function withChildren(pids) {
  return [...pids, ...pids.flatMap((pid) => pgrep('-P', String(pid)))];
}

function appPids(fx) {
  const pids = pgrep('-f', `plandesk-app --data-dir ${fx.data}`);
  if (!pids.length) throw new Error(`no plandesk-app runs on ${fx.data}`);
  return withChildren(pids);
}

/** Whether process `pid` still runs (a zombie has exited: only its parent's wait is left). */
function running(pid) {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch { return false; }
}

/** Waits until the processes `pids` have exited (10 s at most). */
async function exited(pids) {
  for (let waited = 0; waited < 10000; waited += 50) {
    if (!pids.some(running)) return;
    await sleep(50);
  }
  throw new Error(`processes ${pids.join(', ')} still run 10 s after the app was closed`);
}

/** Idle PSS of an empty Tauri window (the floor), measured like the app's. */
async function emptyWindowPssMiB() {
  const empty = spawn(process.env.PLANDESK_EMPTY_WINDOW, [], { stdio: 'ignore' });
  try {
    await sleep(IDLE_MS);
    if (empty.exitCode !== null) throw new Error(`the empty window exited with ${empty.exitCode}`);
    return withChildren([empty.pid]).reduce((sum, pid) => sum + pss(pid), 0) / 1024;
  } finally {
    empty.kill('SIGTERM');
    await sleep(300);
  }
}

/**
 * An empty Tauri window (the floor) launched through WebDriver as the app is: from asking for
 * it to its page's load beginning.
 */
async function emptyWindowPageStartMs() {
  const launched = Date.now();
  const empty = await Session.start(PORT, process.env.PLANDESK_EMPTY_WINDOW, []);
  try {
    await empty.waitFor("document.readyState === 'complete'", { what: 'the empty page' });
    return (await empty.exec('return performance.timeOrigin')) - launched;
  } finally {
    const pids = withChildren(pgrep('-f', process.env.PLANDESK_EMPTY_WINDOW));
    await empty.close();
    await exited(pids);
  }
}

/** The builds measured: the one under test, or those PLANDESK_APPS names. */
const builds = process.env.PLANDESK_APPS
  ? process.env.PLANDESK_APPS.split(',').map((named) => {
    const [name, path] = named.split('=');
    return { name, path };
  })
  : [{ name: '', path: APP }];
const figureNames = ['coldStartMs', 'pageStartMs', 'sessionReadyMs', 'interactiveMs', 'scriptStartMs', 'bootMs', 'suspendToRenderedMs', 'startToPlanMs', 'clickToDecisionAnsweredMs', 'clickToFirstEventMs', 'clickToFirstChunkMs', 'idlePssMiB'];
for (const build of builds) build.results = Object.fromEntries(figureNames.map((name) => [name, []]));
const floor = [];
const floorStart = [];

const driver = await startDriver(PORT);
try {
  // The floor, measured like the app: on its own (PSS splits a library's pages between the
  // processes that map them, so an app running beside it would make the floor look smaller).
  for (let round = 0; process.env.PLANDESK_EMPTY_WINDOW && round < 5; round += 1) {
    floor.push(await emptyWindowPssMiB());
  }
  for (let round = 0; process.env.PLANDESK_EMPTY_WINDOW && round < 5; round += 1) {
    floorStart.push(await emptyWindowPageStartMs());
  }
  for (let round = 0; round < ROUNDS * builds.length; round += 1) {
    const build = builds[round % builds.length];
    const results = build.results;
    const fx = fixture();
    const plan = bigPlan();
    const script = join(fx.root, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [
      { toolCalls: [
        { toolName: 'write_file', args: { path: '.plandesk/plans/big.md', content: plan } },
        { toolName: 'submit_plan', args: { path: '.plandesk/plans/big.md' } },
      ] },
      { text: 'Approved; starting on step 0.' },
    ] }));
    const launched = Date.now();
    const app = await openApp(PORT, fx, build.path);
    results.sessionReadyMs.push(Date.now() - launched);
    const [origin, interactiveAt, bootAt] = await app.exec('const m = window.__plandesk.metrics; return [performance.timeOrigin, m.interactiveAt, m.bootAt]');
    results.coldStartMs.push(origin + interactiveAt - launched);
    results.pageStartMs.push(origin - launched);
    results.interactiveMs.push(interactiveAt);
    // Builds before 2026-12-05 do not mark it.
    if (bootAt) {
      results.scriptStartMs.push(bootAt);
      results.bootMs.push(interactiveAt - bootAt);
    }
    await sleep(IDLE_MS);
    results.idlePssMiB.push(appPids(fx).reduce((sum, pid) => sum + pss(pid), 0) / 1024);

    await app.click('#new-run');
    await app.type('#prompt', 'Migrate the store');
    await app.type('#model', `scripted:${script}`);
    const clicked = performance.now();
    await app.click('#start');
    try {
      await app.find('#plan-title', 60000);
    } catch (e) {
      await app.screenshot('/tmp/bench-fail.png');
      console.log(await app.exec("return document.querySelector('#view').innerText.slice(0, 2000)"));
      throw e;
    }
    results.startToPlanMs.push(performance.now() - clicked);
    await app.waitFor('window.__plandesk.metrics.suspendToRendered');
    results.suspendToRenderedMs.push(await app.exec('return window.__plandesk.metrics.suspendToRendered'));
    const size = await app.exec("return document.querySelector('#plan').innerHTML.length");
    // A person reads the plan before approving it: the click lands on a review done loading
    // (its comments, the rest of its pages, the inbox), not in the middle of it.
    await sleep(READ_MS);
    await app.click('#approve');
    await app.waitFor('window.__plandesk.metrics.firstResumedChunk');
    const [event, chunk] = await app.exec('const m = window.__plandesk.metrics; return [m.firstResumedEvent, m.firstResumedChunk]');
    results.clickToFirstEventMs.push(event);
    results.clickToFirstChunkMs.push(chunk);
    await app.waitFor('window.__plandesk.metrics.decisionAnswered');
    results.clickToDecisionAnsweredMs.push(await app.exec('return window.__plandesk.metrics.decisionAnswered'));
    // The next round starts on a quiet machine: this app and its WebKit processes are gone.
    const pids = appPids(fx);
    await app.close();
    await exited(pids);
    if (round === 0) console.log(`plan: ${Math.round(plan.length / 1024)} KiB of markdown, ${Math.round(size / 1024)} KiB of HTML`);
  }
} finally {
  driver.stop();
}
const figures = [];
const report = (name, xs) => {
  console.log(`${name}: median ${median(xs).toFixed(1)}, p95 ${quantile(xs, 0.95).toFixed(1)} (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)}, n=${xs.length})`);
  figures.push({ name, median: median(xs), p95: quantile(xs, 0.95), unit: name.endsWith('MiB') ? 'MiB' : 'ms', rounds: xs.length });
};
if (floor.length) report('emptyWindowPssMiB', floor);
if (floorStart.length) report('emptyWindowPageStartMs', floorStart);
// One build: its figures by name. Several: each name after its build's (`after.coldStartMs`),
// a figure of every build together.
for (const name of figureNames) {
  for (const build of builds) {
    if (build.results[name].length) report(build.name ? `${build.name}.${name}` : name, build.results[name]);
  }
}
for (const build of builds) {
  if (!floor.length) break;
  const name = build.name ? `${build.name}.idlePssOverEmptyWindow` : 'idlePssOverEmptyWindow';
  const ratio = median(build.results.idlePssMiB) / median(floor);
  console.log(`${name}: ${ratio.toFixed(2)}x (idle memory / empty Tauri window, medians)`);
  figures.push({ name, median: ratio, p95: ratio, unit: 'ratio', rounds: floor.length });
}
// So two commits can be compared: target/bench/app.json.
const out = join(import.meta.dirname, '../../target/bench');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'app.json'), JSON.stringify(figures, null, 2));
console.log(`written to ${join(out, 'app.json')}`);
