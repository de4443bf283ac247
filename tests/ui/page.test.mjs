// The UI alone in real Chromium: ui/ served on 127.0.0.1 under the app's CSP, with a fake
// backend behind window.__TAURI__ that records every command. Fast checks of keyboard flows,
// errors, layout and theming; the WebDriver tests prove the real app. The app serves ui/ as it
// is (native modules); PLANDESK_UI serves another folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile, readdir, mkdir } from 'node:fs/promises';
import { join, resolve, extname } from 'node:path';
import { launchChromium, axeFindings } from './chromium.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const UI = process.env.PLANDESK_UI || join(ROOT, 'ui');
const ARTIFACTS = join(ROOT, 'target/e2e-artifacts');
const conf = JSON.parse(await readFile(join(ROOT, 'tauri.conf.json'), 'utf8'));
const CSP = Object.entries(conf.app.security.csp).map(([k, v]) => `${k} ${v}`).join('; ');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.png': 'image/png' };

let server;
let browser;
let base;

before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  server = createServer(async (req, res) => {
    const path = join(UI, new URL(req.url, 'http://x').pathname.replace(/^\/$/, '/index.html'));
    if (!path.startsWith(UI)) { res.writeHead(403).end(); return; }
    try {
      const body = await readFile(path);
      res.writeHead(200, { 'content-type': TYPES[extname(path)] || 'application/octet-stream', 'content-security-policy': CSP });
      res.end(body);
    } catch { res.writeHead(404).end(); }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

const now = Date.now();
const plan = (n, title, sha) => ({
  runId: `run${n}`, toolCallId: `call${n}`, kind: 'plan', toolName: 'submit_plan', args: { path: `.plandesk/plans/p${n}.md` },
  since: now - n * 60000, prompt: `Prompt ${n}`, workspace: '/ws', title, path: `.plandesk/plans/p${n}.md`,
  revisionId: n, revisionNo: 1, sha256: sha, notesReachAgent: true,
});

/** The fake backend: `world` is plain data; every call is recorded in window.__calls. */
function installFake(world) {
  // What the backend has: a test changes it as a run would (a plan submitted while it streams).
  window.__world = world;
  window.__calls = [];
  window.__violations = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));
  const handlers = {
    app_info: () => world.info,
    default_model: () => {
      if (world.modelFails) throw { code: 'store', message: 'the store is busy' };
      // Held until the test lets it answer: the form and Settings while the backend looks.
      if (world.holdDefaultModel) return new Promise((resolve) => { window.__answerDefaultModel = () => resolve(world.model); });
      return world.model;
    },
    inbox: () => {
      // Held (once) until the test lets it answer, with the inbox as it was when asked.
      if (world.holdInbox) {
        world.holdInbox = false;
        const asked = [...world.inbox];
        return new Promise((resolve) => { window.__answerInbox = () => resolve(asked); });
      }
      return world.inbox;
    },
    webhooks: () => world.webhooks || [],
    phone_serving: () => world.phoneServing || { on: false, port: 8765, url: null, error: null },
    runs: () => world.runs,
    set_viewing: () => null,
    run_detail: (args) => {
      // Held until the test lets it answer: what the window does while a run is being read.
      if (world.holdRunDetail) {
        return new Promise((resolve) => {
          window.__answerRunDetail = () => { world.holdRunDetail = false; resolve(handlers.run_detail(args)); };
        });
      }
      const { runId } = args;
      const pending = world.inbox.filter((i) => i.runId === runId);
      const run = world.runs.find((r) => r.id === runId);
      return { run, transcript: [{ kind: 'user', text: run.prompt }, { kind: 'assistant', text: 'Here is my plan.' }], pending, error: null, waiting: null,
        interrupted: false, ...(world.details?.[runId] || {}) };
    },
    revision: ({ id }) => {
      // A revision of the history's that waits for nothing: as the first plan's.
      const item = world.inbox.find((i) => i.revisionId === id) || world.inbox[0];
      return { id, runId: item.runId, toolCallId: item.toolCallId, path: item.path, title: item.title, revisionNo: 1,
        sha256: item.sha256, submittedAt: item.since, status: 'pending', feedback: null, decidedAt: null, prompt: item.prompt,
        pages: [`<h2>Steps</h2><ol><li>Do ${item.title}</li></ol><p><a href="https://example.com/doc" rel="noopener noreferrer">docs</a></p>`],
        revisionsInThread: 1, fallback: null, hidden: [], hiddenOmitted: 0, ...(world.revisions?.[id] || {}) };
    },
    tool_call: ({ runId, toolCallId }) => {
      const full = world.toolCalls?.[`${runId}/${toolCallId}`];
      if (!full) throw { code: 'unknown-tool-call', message: `run ${runId} has no tool call "${toolCallId}"` };
      if (world.toolCallFailsOnce) { world.toolCallFailsOnce = false; throw { code: 'store-file', message: 'the store could not be read' }; }
      return full;
    },
    revision_pages: ({ id, from }) => (world.pageSets?.[id] || []).slice(from),
    revision_source: ({ id }) => {
      const item = world.inbox.find((i) => i.revisionId === id);
      return { markdown: `# ${item.title}\n\n## Steps\n\n1. Do ${item.title}\n`,
        sourceHtml: `<pre class="plan-source"><code># ${item.title}\n\n## Steps\n\n1. Do ${item.title}</code></pre>`,
        ...(world.sources?.[id] || {}) };
    },
    decide: (args) => {
      if (world.stale) throw { code: 'stale-revision', message: 'the plan changed since you saw it: revision 2 is pending now' };
      // Held until the test lets it answer: what the window shows while the backend records it.
      if (world.holdDecision) return new Promise((resolve) => { window.__answerDecision = () => resolve(null); });
      return null;
    },
    retry_run: ({ runId }) => { world.retried = runId; return null; },
    // The run starts streaming before the command answers, as the backend's does.
    start_run: ({ onEvent }) => {
      const run = world.starts;
      world.runs.push(run);
      onEvent.onmessage({ event: 'chunk', data: { type: 'start', runId: run.id, from: 'AGENT', payload: {} } });
      return run.id;
    },
    send_message: () => {
      if (world.messageRefused) throw { code: 'busy', message: 'another process is running this run' };
      return new Promise((resolve) => { window.__answerMessage = () => resolve(null); });
    },
    // A page, as the backend reads it: of the status, older than \`before\`, at most \`limit\`.
    history: ({ filter, before, limit }) => {
      world.historyReads = (world.historyReads || 0) + 1;
      if (world.historyFails?.(before)) throw { code: 'store', message: 'the store is busy' };
      const all = (world.history || []).filter((r) => (filter.status === 'all' || r.status === filter.status)
        && (before == null || r.id < before));
      return { revisions: all.slice(0, limit), more: all.length > limit };
    },
    comments: () => world.comments || [],
    // The first plan's thread: revision 1 rejected, revision 2 (the inbox's) waiting.
    plan_thread: () => {
      const item = world.inbox[0];
      const base = { runId: item.runId, toolCallId: item.toolCallId, path: item.path, title: item.title };
      return [{ ...base, id: 90, revisionNo: 1, sha256: 'old111', status: 'rejected' },
        { ...base, id: item.revisionId, revisionNo: 2, sha256: item.sha256, status: world.threadStatus || 'pending' }];
    },
    compare: () => ({ left: { revisionNo: 1 }, right: { revisionNo: 2, title: world.inbox[0].title, path: world.inbox[0].path },
      between: [{ revisionNo: 1, action: 'rejected', feedback: 'Use Redis' }], comments: [],
      diff: { changed: 1, added: 0, removed: 0, rows: [{ kind: 'changed',
        left: { number: 1, segments: [{ text: 'Cache in ', changed: false }, { text: 'memory', changed: true }] },
        right: { number: 1, segments: [{ text: 'Cache in ', changed: false }, { text: 'Redis', changed: true }] } }] } }),
    audit: () => world.audit,
    export_audit: () => null,
    open_link: () => null,
    // The editor's preview: the engine renders the text; here, the test's pages, with the
    // text's length so that what was typed shows.
    preview: ({ markdown }) => {
      // Each line added to the text moves the line numbers of what follows, as the engine's would.
      const shift = markdown.split('\n').length;
      const pages = (world.previewPages || [`<p>${markdown.length}</p>`])
        .map((html) => html.replace(/data-sourcepos="(\d+):1-(\d+):/g, (_, a, b) => `data-sourcepos="${+a + shift}:1-${+b + shift}:`));
      pages[pages.length - 1] += `<p id="typed-length">${markdown.length} characters</p>`;
      return { pages };
    },
  };
  window.__TAURI__ = {
    core: {
      // Kept so a test can stream chunks into a run, as the backend does.
      Channel: class { constructor() { this.onmessage = () => {}; (window.__channels ||= []).push(this); } },
      invoke: async (cmd, args) => {
        window.__calls.push({ cmd, args: JSON.parse(JSON.stringify(args || {}, (k, v) => (v && v.onmessage ? '[channel]' : v))) });
        const handler = handlers[cmd];
        if (!handler) throw { code: 'unknown', message: `no fake for ${cmd}` };
        // A copy, as the backend's answer is: nothing the window marks on it reaches the world.
        return structuredClone(await handler(args || {}));
      },
    },
    // Kept so a test can send an event, as the backend's watcher does.
    event: { listen: async (name, handler) => { (window.__listeners ||= {})[name] = handler; return () => {}; } },
  };
}

function world(extra = {}) {
  const inbox = [plan(1, 'Add caching', 'aaa111'), plan(2, 'Fix the login bug', 'bbb222'), plan(3, 'Write docs', 'ccc333')];
  return {
    info: { dataDir: '/data', settings: { notifications: true, notificationTitles: true }, workspace: '/ws', version: '0.1.0' },
    model: { spec: 'demo', reason: 'no provider is configured: the built-in offline planner' },
    inbox,
    runs: inbox.map((i) => ({ id: i.runId, prompt: i.prompt, model: 'demo', mode: 'plan', status: 'suspended', workspace: '/ws', createdAt: i.since, updatedAt: i.since, ownerPid: null })),
    ...extra,
  };
}

async function open(w, { colorScheme = 'light', width = 1200, height = 800 } = {}) {
  const page = await browser.newPage({ viewport: { width, height }, colorScheme });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript(installFake, w);
  await page.goto(`${base}/index.html`);
  await page.waitForSelector('body[data-ready="true"]');
  page.errors = errors;
  return page;
}

/** Waits until the plan titled `title` is the one on screen. */
const planOnScreen = (page, title) => page.waitForFunction((t) => document.getElementById('plan-title')?.textContent === t, title);

const calls = (page, cmd) => page.evaluate((c) => window.__calls.filter((x) => x.cmd === c), cmd);

test('an inbox read overtaken by the watcher\'s event is not drawn over it', async () => {
  const item = plan(4, 'Back it up first', 'ddd444');
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript(installFake, { ...world(), inbox: [], runs: [], holdInbox: true });
  await page.goto(`${base}/index.html`);
  // The window asked for the inbox (empty then); before it answers, a plan arrives and the
  // watcher's event brings the inbox with it.
  await page.waitForFunction(() => window.__answerInbox);
  await page.evaluate((i) => {
    window.__world.inbox.push(i);
    window.__listeners['inbox-changed']({ payload: [i] });
  }, item);
  await page.evaluate(() => window.__answerInbox());
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.textContent('#inbox-count'), '1');
  assert.equal(await page.textContent('#inbox li .title'), 'Back it up first');
  assert.deepEqual(errors, []);
  await page.close();
});

test('j/k move through the inbox and open each plan; a approves the plan on screen, naming its revision', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  assert.equal(await page.textContent('#plan-title'), 'Add caching', 'the newest item opens first');
  const current = () => page.$$eval('#runs li.current', (lis) => lis.map((li) => li.dataset.runId));
  assert.deepEqual(await current(), ['run1'], 'the runs list marks the run on screen');
  await page.keyboard.press('j');
  await page.waitForFunction(() => document.querySelector('#plan-title')?.textContent === 'Fix the login bug');
  assert.equal(await page.getAttribute('#inbox-1', 'aria-selected'), 'true');
  assert.deepEqual(await current(), ['run2']);
  await page.keyboard.press('k');
  await page.waitForFunction(() => document.querySelector('#plan-title')?.textContent === 'Add caching');
  await page.keyboard.press('a');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  const [decide] = await calls(page, 'decide');
  assert.deepEqual(decide.args.request, { runId: 'run1', toolCallId: 'call1', approve: true, feedback: null, note: null, revision: 'aaa111', acceptEdits: false });
  // The run's view switches to its stream (its first answer is late here): the same run, so
  // the backend is not told again which run is looked at.
  await page.waitForSelector('.run-status .spinner');
  assert.deepEqual((await calls(page, 'set_viewing')).map((c) => c.args.runId), ['run1', 'run2', 'run1']);
  assert.deepEqual(await current(), ['run1']);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the inbox highlights only what is on screen: after a decision none, then j opens the next', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  assert.equal(await page.getAttribute('#inbox-0', 'aria-selected'), 'true');
  await page.keyboard.press('a');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  // The backend's inbox, without the approved plan.
  await page.evaluate(() => {
    const rest = window.__world.inbox.filter((i) => i.runId !== 'run1');
    window.__world.inbox = rest;
    window.__listeners['inbox-changed']({ payload: rest });
  });
  await page.waitForFunction(() => !document.querySelector('#inbox li[aria-selected="true"]'));
  await page.keyboard.press('j');
  await page.waitForFunction(() => document.querySelector('#plan-title')?.textContent === 'Fix the login bug');
  assert.equal(await page.getAttribute('#inbox-0', 'aria-selected'), 'true', 'the first left, not the one after it');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a then j: the next plan opens and stays, while the approved run goes on out of sight', async () => {
  const page = await open(world({ holdDecision: true }));
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('a');
  await page.keyboard.press('j');
  await page.waitForFunction(() => document.querySelector('#plan-title')?.textContent === 'Fix the login bug');
  // Past the moment the approved run's view would have switched to its stream (100 ms).
  await page.waitForTimeout(300);
  assert.equal(await page.textContent('#plan-title'), 'Fix the login bug', 'the plan the person went to');
  assert.equal((await calls(page, 'decide')).length, 1);
  await page.evaluate(() => window.__answerDecision());
  await page.waitForTimeout(50);
  assert.equal(await page.textContent('#plan-title'), 'Fix the login bug');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a then j while the next run is slow to read: the next plan opens, not the approved run\'s stream', async () => {
  const page = await open(world({ holdDecision: true }));
  await page.waitForSelector('#plan-title');
  await page.evaluate(() => { window.__world.holdRunDetail = true; });
  await page.keyboard.press('a');
  await page.keyboard.press('j');
  // Past the moment the approved run's view would switch to its stream (100 ms), while the next
  // run is still being read: the switch is not made over the person's choice.
  await page.waitForTimeout(300);
  await page.evaluate(() => window.__answerRunDetail());
  await page.waitForFunction(() => document.querySelector('#plan-title')?.textContent === 'Fix the login bug');
  await page.evaluate(() => window.__answerDecision());
  await page.waitForTimeout(100);
  assert.equal(await page.textContent('#plan-title'), 'Fix the login bug');
  assert.equal(await page.evaluate(() => window.__plandesk.view.runId), 'run2');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('r focuses the feedback box and Ctrl+Enter rejects with the feedback', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('r');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'feedback');
  await page.keyboard.type('Use Redis instead');
  await page.keyboard.press('Control+Enter');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  const [decide] = await calls(page, 'decide');
  assert.equal(decide.args.request.approve, false);
  assert.equal(decide.args.request.feedback, 'Use Redis instead');
  await page.close();
});

test('Reject with nothing said asks once: a second Reject rejects, feedback rejects at once', async () => {
  for (const size of [{}, { width: 390, height: 844 }]) {
    const page = await open(world(), size);
    await page.waitForSelector('#plan-title');
    await page.click('#reject');
    await page.waitForTimeout(100);
    assert.equal((await calls(page, 'decide')).length, 0, 'a stray click decides nothing');
    assert.match(await page.textContent('#decide-hint'), /Reject again to reject anyway/);
    assert.equal(await page.isVisible('#decide-hint'), true, 'said on a phone too');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'feedback');
    // Leaving the box does not move the buttons: a tap on one lands where it was aimed.
    const before = await page.locator('#reject').boundingBox();
    await page.evaluate(() => document.activeElement.blur());
    assert.deepEqual(await page.locator('#reject').boundingBox(), before);
    await page.click('#reject');
    await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
    const [decide] = await calls(page, 'decide');
    assert.equal(decide.args.request.approve, false);
    assert.equal(decide.args.request.feedback, null);
    assert.deepEqual(page.errors, []);
    await page.close();
  }
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.fill('#feedback', 'Use Redis');
  await page.click('#reject');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  assert.equal((await calls(page, 'decide'))[0].args.request.feedback, 'Use Redis');
  await page.close();
  // r, then Ctrl+Enter in the empty box: the keys are no stray click, it rejects at once.
  const keyed = await open(world());
  await keyed.waitForSelector('#plan-title');
  await keyed.keyboard.press('r');
  await keyed.keyboard.press('Control+Enter');
  await keyed.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  assert.equal((await calls(keyed, 'decide'))[0].args.request.feedback, null);
  await keyed.close();
});

test('feedback typed and not sent stays with its plan: another run, Back, a reload, a refusal; a decision drops it', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.fill('#feedback', 'Use Redis, not memcached');
  await page.click('#inbox-1');
  await planOnScreen(page, 'Fix the login bug');
  assert.equal(await page.inputValue('#feedback'), '', 'another plan, its own box');
  await page.fill('#feedback', 'Test the lockout too');
  await page.click('#inbox-0');
  await planOnScreen(page, 'Add caching');
  assert.equal(await page.inputValue('#feedback'), 'Use Redis, not memcached');
  assert.match(await page.getAttribute('#feedback', 'class'), /opened/, 'open, as it was left');
  await page.goBack();
  await planOnScreen(page, 'Fix the login bug');
  assert.equal(await page.inputValue('#feedback'), 'Test the lockout too');
  // A reload (the page's, or the window's) brings both back.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.click('#inbox-0');
  await planOnScreen(page, 'Add caching');
  assert.equal(await page.inputValue('#feedback'), 'Use Redis, not memcached');
  // Refused (the plan changed meanwhile): the run is drawn again as it stands, the words kept.
  await page.evaluate(() => { window.__world.stale = true; });
  await page.click('#reject');
  await page.waitForSelector('#banner:not([hidden])');
  await page.waitForSelector('#feedback');
  assert.equal(await page.inputValue('#feedback'), 'Use Redis, not memcached');
  await page.evaluate(() => { window.__world.stale = false; });
  await page.click('#reject');
  await page.waitForFunction(() => window.__calls.filter((c) => c.cmd === 'decide').length === 2);
  assert.equal((await calls(page, 'decide'))[1].args.request.feedback, 'Use Redis, not memcached');
  // Sent: the plan's box is empty when it is opened again; the other plan's keeps its own.
  await page.click('#inbox-0');
  await page.waitForSelector('#feedback');
  assert.equal(await page.inputValue('#feedback'), '');
  await page.click('#inbox-1');
  await planOnScreen(page, 'Fix the login bug');
  assert.equal(await page.inputValue('#feedback'), 'Test the lockout too');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('your version of a plan, closed unsaved, is back the next time you edit it, until you start over', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('e');
  await page.waitForSelector('#plan-editor');
  const submitted = await page.inputValue('#plan-editor');
  assert.equal(await page.$('#edit-resumed'), null, 'nothing to bring back the first time');
  await page.fill('#plan-editor', `${submitted}2. Keep the old cache warm\n`);
  await page.press('#plan-editor', 'Escape');
  await page.waitForSelector('#plan-title');
  await page.click('#inbox-1');
  await planOnScreen(page, 'Fix the login bug');
  await page.click('#inbox-0');
  await planOnScreen(page, 'Add caching');
  await page.click('#edit');
  await page.waitForSelector('#plan-editor');
  assert.equal(await page.inputValue('#plan-editor'), `${submitted}2. Keep the old cache warm\n`);
  assert.match(await page.textContent('#edit-resumed'), /Your unsaved version is back/);
  await page.waitForFunction((n) => document.getElementById('typed-length')?.textContent === `${n} characters`, submitted.length + 27);
  await page.screenshot({ path: join(ARTIFACTS, 'editor-resumed-chromium.png') });
  await page.click('#edit-start-over');
  assert.equal(await page.inputValue('#plan-editor'), submitted, 'the plan as it was submitted');
  assert.equal(await page.$('#edit-resumed'), null);
  await page.click('#edit-cancel');
  await page.click('#edit');
  await page.waitForSelector('#plan-editor');
  assert.equal(await page.inputValue('#plan-editor'), submitted);
  assert.equal(await page.$('#edit-resumed'), null, 'started over: nothing is kept');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Back to the history brings back its filter, its search and where it was scrolled to', async () => {
  const w = world();
  w.history = Array.from({ length: 300 }, (_, i) => ({ id: 300 - i, runId: 'run1', toolCallId: `c${i}`,
    path: '.plandesk/plans/p.md', title: `Plan ${300 - i}`, revisionNo: 1, sha256: `${i}`.padStart(64, '0'),
    submittedAt: 1_700_000_000_000 - i * 1000, status: i % 2 ? 'approved' : 'rejected',
    feedback: i % 2 ? null : `Lines 3-4: “Cache in memory”\n${'Use Redis, and say how long entries live. '.repeat(20)}`,
    decidedAt: 1_700_000_000_000, decidedBy: null, prompt: 'Migrate the store' }));
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('h');
  await page.waitForSelector('#history-rows .row-item');
  // A long rejection shows its start: every row about as tall as one without.
  const heights = await page.$$eval('#history-rows .row-item', (rows) => rows.slice(0, 10).map((r) => r.getBoundingClientRect().height));
  assert.ok(Math.max(...heights) < 2 * Math.min(...heights), JSON.stringify(heights));
  await page.selectOption('#history-status', 'approved');
  await page.fill('#history-query', 'Plan');
  await page.waitForFunction(() => window.__calls.filter((c) => c.cmd === 'history').at(-1).args.filter.query === 'Plan');
  await page.waitForFunction(() => document.querySelector('#history-rows .row-item strong')?.textContent === 'Plan 299');
  await page.evaluate(() => { document.getElementById('view').scrollTop = 1500; });
  await page.waitForTimeout(50);
  const row = await page.evaluate(() => {
    const view = document.getElementById('view').getBoundingClientRect();
    return [...document.querySelectorAll('#history-rows .row-item')].find((r) => r.getBoundingClientRect().top > view.top + 40).querySelector('strong').textContent;
  });
  await page.getByRole('button', { name: new RegExp(`^${row} `) }).click();
  await page.waitForFunction(() => document.querySelector('.page-head h1')?.textContent !== 'History');
  await page.goBack();
  await page.waitForFunction(() => document.querySelector('#history-rows .row-item strong')?.textContent === 'Plan 299');
  assert.equal(await page.inputValue('#history-status'), 'approved');
  assert.equal(await page.inputValue('#history-query'), 'Plan');
  assert.equal(await page.evaluate(() => document.getElementById('view').scrollTop), 1500, 'where it was');
  const read = (await calls(page, 'history')).at(-1);
  assert.deepEqual(read.args.filter, { status: 'approved', query: 'Plan' }, 'read with its filter');
  // Opened anew (not by Back), the history starts from all revisions.
  await page.keyboard.press('Escape');
  await page.evaluate(() => document.getElementById('view').focus());
  await page.keyboard.press('h');
  await page.waitForFunction(() => document.querySelector('#history-rows .row-item strong')?.textContent === 'Plan 300');
  assert.equal(await page.inputValue('#history-status'), 'all');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("Claude Code's plan can be approved to edit without asking: the choice is sent with the approval and kept for its next plan", async () => {
  const w = world();
  for (const item of w.inbox.slice(0, 2)) item.source = { kind: 'claude-code' };
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  assert.equal(await page.isChecked('#accept-edits'), false, 'asked for, never assumed');
  assert.match(await page.textContent('label.accept-edits'), /Let Claude Code edit files without asking/);
  assert.equal(await page.evaluate(() => document.querySelector('#approve').firstChild.textContent), 'Approve');
  await page.check('#accept-edits');
  // What a click grants is on the button clicked.
  assert.equal(await page.evaluate(() => document.querySelector('#approve').firstChild.textContent), 'Approve, auto-accept edits');
  await page.screenshot({ path: join(ARTIFACTS, 'accept-edits-chromium.png') });
  await page.click('#approve');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  assert.equal((await calls(page, 'decide'))[0].args.request.acceptEdits, true);
  // The next Claude Code plan offers the same choice, as last made; a rejection never carries it.
  await page.click('#inbox-1');
  await planOnScreen(page, 'Fix the login bug');
  assert.equal(await page.isChecked('#accept-edits'), true);
  await page.fill('#feedback', 'Not yet');
  await page.click('#reject');
  await page.waitForFunction(() => window.__calls.filter((c) => c.cmd === 'decide').length === 2);
  assert.equal((await calls(page, 'decide'))[1].args.request.acceptEdits, false);
  // Compared with its revision 1, it is offered there too, and sent with the approval.
  await page.evaluate(() => { window.__world.revisions = { 2: { revisionNo: 2, revisionsInThread: 2 } }; });
  await page.click('#inbox-1');
  await planOnScreen(page, 'Fix the login bug');
  await page.click('#compare');
  await page.waitForSelector('table.diff');
  assert.equal(await page.isChecked('#accept-edits'), true);
  assert.equal(await page.evaluate(() => document.querySelector('#approve').firstChild.textContent), 'Approve revision 2, auto-accept edits');
  await page.keyboard.press('a');
  await page.waitForFunction(() => window.__calls.filter((c) => c.cmd === 'decide').length === 3);
  assert.equal((await calls(page, 'decide'))[2].args.request.acceptEdits, true);
  // Another agent's plan has no such choice.
  await page.click('#inbox-2');
  await planOnScreen(page, 'Write docs');
  assert.equal(await page.$('#accept-edits'), null);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('an approval note for an agent that never passes it on is labelled so', async () => {
  const w = world();
  Object.assign(w.inbox[0], { source: { kind: 'copilot' }, notesReachAgent: false });
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  await page.fill('#feedback', 'Watch the cache size');
  assert.equal(await page.evaluate(() => document.querySelector('#approve').firstChild.textContent), 'Approve (note not sent)');
  await page.fill('#feedback', '');
  assert.equal(await page.evaluate(() => document.querySelector('#approve').firstChild.textContent), 'Approve');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Compare: a revision that waits is approved from the comparison, by its hash; r goes to its review', async () => {
  const w = world({ revisions: { 1: { revisionNo: 2, revisionsInThread: 2 } } });
  const page = await open(w);
  await page.waitForSelector('#compare');
  // A note typed in the review goes with an approval from the comparison, as it says.
  const approveWords = () => page.evaluate(() => document.querySelector('#approve').firstChild.textContent);
  assert.equal(await approveWords(), 'Approve');
  await page.fill('#feedback', 'Keep the old API');
  // What a click sends is on the button: the text goes with an approval as a note.
  assert.equal(await approveWords(), 'Approve with note');
  await page.click('#compare');
  await page.waitForSelector('table.diff');
  assert.equal(await approveWords(), 'Approve revision 2 with note');
  assert.match(await page.textContent('#compare-note'), /Your note from the review goes with the approval: “Keep the old API”/);
  await page.screenshot({ path: join(ARTIFACTS, 'compare-decide-chromium.png') });
  // r: to the review, its box ready for what should change.
  await page.keyboard.press('r');
  await page.waitForSelector('#plan-title');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'feedback');
  await page.goBack();
  await page.waitForSelector('table.diff');
  await page.keyboard.press('a');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  const [decide] = await calls(page, 'decide');
  assert.deepEqual(decide.args.request, { runId: 'run1', toolCallId: 'call1', approve: true, feedback: null, note: 'Keep the old API', revision: 'aaa111', acceptEdits: false });
  assert.deepEqual(page.errors, []);
  await page.close();
  // A comparison of revisions decided already offers no decision.
  const decided = await open({ ...w, threadStatus: 'approved' });
  await decided.waitForSelector('#compare');
  await decided.click('#compare');
  await decided.waitForSelector('table.diff');
  assert.equal(await decided.$('#approve'), null);
  await decided.keyboard.press('a');
  await decided.waitForTimeout(100);
  assert.equal((await calls(decided, 'decide')).length, 0);
  await decided.close();
});

test('a revised plan of the run on screen is highlighted when it arrives', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.fill('#feedback', 'Use Redis');
  await page.click('#reject');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'decide'));
  // The backend's inbox: the rejected plan gone, its revision (a new item of run1) last.
  await page.evaluate(() => {
    const [first, ...rest] = window.__world.inbox;
    const revised = { ...first, toolCallId: 'call1b', revisionNo: 2, sha256: 'bbb222' };
    window.__world.inbox = [...rest, revised];
    // As in the app: the run's stream ended with its revision on screen before the inbox came.
    window.__plandesk.view.pendingKey = 'call1b:bbb222';
    window.__listeners['inbox-changed']({ payload: window.__world.inbox });
  });
  // At once, from the inbox alone (no redraw of the run comes to set it).
  assert.equal(await page.evaluate(() => window.__plandesk.selected), 2);
  await page.waitForFunction(() => document.querySelectorAll('#inbox li').length === 3
    && document.querySelector('#inbox li:last-child')?.getAttribute('aria-selected') === 'true');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('an inbox item\'s line of details ends in an ellipsis inside the item, not mid-word at its edge', async () => {
  const w = world();
  w.inbox[0].prompt = 'Add caching to the read path of the product catalogue, with invalidation on writes';
  const page = await open(w);
  await page.waitForSelector('#inbox li');
  const fit = await page.$eval('#inbox li', (li) => {
    const last = li.querySelector('.meta > :last-child');
    return { style: getComputedStyle(last).textOverflow, cut: last.scrollWidth > last.clientWidth,
      inside: last.getBoundingClientRect().right <= li.getBoundingClientRect().right };
  });
  assert.deepEqual(fit, { style: 'ellipsis', cut: true, inside: true });
  await page.close();
});

test('? lists the keys and Esc closes it; focus is visible', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('?');
  assert.equal(await page.evaluate(() => document.querySelector('#help').open), true);
  await page.keyboard.press('Escape');
  assert.equal(await page.evaluate(() => document.querySelector('#help').open), false);
  // From where the dialog was, Tab may first leave the page's end: on to the first control.
  for (let i = 0; i < 3 && (i === 0 || await page.evaluate(() => document.activeElement === document.body)); i++) {
    await page.keyboard.press('Tab');
  }
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, 'none', 'keyboard focus is drawn');
  await page.close();
});

test('a decision on a plan that changed is refused with a clear banner', async () => {
  const page = await open(world({ stale: true }));
  await page.waitForSelector('#approve');
  const reads = (await calls(page, 'run_detail')).length;
  await page.click('#approve');
  await page.waitForSelector('#banner:not([hidden])');
  assert.match(await page.textContent('#banner-text'), /the plan changed since you saw it/);
  assert.equal(await page.isEnabled('#approve'), true, 'the buttons come back');
  assert.equal((await calls(page, 'run_detail')).length, reads + 1, 'the run is read again as it now stands');
  assert.equal(await page.isVisible('#plan'), true, 'its plan is on screen again');
  await page.close();
});

test('Approve switches the run to its stream even while the backend has not answered, without reading the run again', async () => {
  const page = await open(world({ holdDecision: true }));
  await page.waitForSelector('#approve');
  const reads = (await calls(page, 'run_detail')).length;
  await page.click('#approve');
  // The decision is still being recorded and no chunk came: the view soon shows the run going on.
  await page.waitForSelector('.run-status .spinner');
  assert.equal(await page.$('#approve'), null, 'the review is gone from the view');
  assert.match(await page.textContent('.meta-line'), /running/);
  assert.match(await page.textContent('.transcript'), /Here is my plan/, 'the transcript on screen carries on');
  const [decision] = await calls(page, 'decide');
  assert.equal(decision.args.request.approve, true);
  assert.equal((await calls(page, 'run_detail')).length, reads, 'the click did not read the run again');
  await page.screenshot({ path: join(ARTIFACTS, 'approved-streaming-chromium.png') });
  await page.evaluate(() => window.__answerDecision());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Approve: one decision however often it is clicked; the stream shows its first chunk, a long result as a preview read whole when opened', async () => {
  const w = world({ holdDecision: true });
  const plan = 'Move a table, then check the counts.\n'.repeat(6000);
  const result = { toolId: 'submit_plan', content: 'Plan approved. Proceed with implementation following the approved plan.', isError: false,
    submittedPlan: { title: 'Add caching', path: '.plandesk/plans/p1.md', plan } };
  w.toolCalls = { 'run1/call1': { args: { path: '.plandesk/plans/p1.md' }, result } };
  const page = await open(w);
  await page.waitForSelector('#approve');
  await page.evaluate(() => { window.__channels = []; });
  // Three times in one go (the view switches as soon as the run answers, at most 100 ms on).
  await page.evaluate(() => {
    document.getElementById('approve').click();
    document.getElementById('approve').click();
    document.body.dispatchEvent(new KeyboardEvent('keydown', { key: 'a', bubbles: true }));
  });
  assert.equal((await calls(page, 'decide')).length, 1, 'one decision');
  // The first chunk, as the backend sends it to the window: the plan in the result cut short.
  await page.evaluate(([r]) => window.__channels[0].onmessage({ event: 'chunk', data: { type: 'tool-result', runId: 'run1', from: 'AGENT',
    payload: { toolCallId: 'call1', toolName: 'submit_plan', args: { path: '.plandesk/plans/p1.md' },
      result: { ...r, submittedPlan: { ...r.submittedPlan, plan: r.submittedPlan.plan.slice(0, 600) } } },
    resultFullBytes: JSON.stringify(r).length } }), [result]);
  assert.equal(await page.$('#approve'), null, 'the review is gone from the view');
  const line = page.locator('.transcript details.tool.result').last();
  assert.match(await line.locator('.arg').textContent(), /^Plan approved\./);
  assert.match(await line.locator('.preview-note').textContent(), /^The start of 22\d KB: all of it shows when this is opened\.$/);
  await page.screenshot({ path: join(ARTIFACTS, 'approved-first-chunk-chromium.png') });
  await line.locator('summary').click();
  await page.waitForFunction(() => !document.querySelector('.transcript details.tool.result:last-of-type .preview-note'));
  assert.equal(JSON.parse(await line.locator('pre').textContent()).submittedPlan.plan, plan);
  assert.deepEqual((await calls(page, 'tool_call')).map((c) => c.args), [{ runId: 'run1', toolCallId: 'call1' }]);
  await page.evaluate(() => window.__answerDecision());
  // The stream ends and the stored transcript takes its place: the line opened stays open, whole.
  await page.evaluate(([r, full]) => {
    const short = { ...r, submittedPlan: { ...r.submittedPlan, plan: r.submittedPlan.plan.slice(0, 600) } };
    window.__world.inbox = [];
    window.__world.details = { run1: { pending: [], transcript: [
      { kind: 'user', text: 'Add caching' },
      { kind: 'tool-call', toolCallId: 'call1', toolName: 'submit_plan', args: { path: '.plandesk/plans/p1.md' } },
      { kind: 'tool-result', toolCallId: 'call1', toolName: 'submit_plan', result: short, fullBytes: full },
      { kind: 'assistant', text: 'Approved; starting.' }] } };
    window.__channels[0].onmessage({ event: 'ended', data: { runId: 'run1', status: 'finished' } });
  }, [result, JSON.stringify(result).length]);
  await page.waitForFunction(() => /Approved; starting/.test(document.querySelector('.transcript')?.textContent));
  const stored = page.locator('.transcript details.tool.result').last();
  assert.equal(await stored.evaluate((d) => d.open), true, 'still open');
  await page.waitForFunction(() => !document.querySelector('.transcript details.tool.result:last-of-type .preview-note'));
  assert.equal(JSON.parse(await stored.locator('pre').textContent()).submittedPlan.plan, plan);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a message is sent once however often Send is pressed; it shows at once, and the stream follows it', async () => {
  const w = world();
  w.runs.push({ id: 'run9', prompt: 'Add caching', model: 'demo', mode: 'build', status: 'finished', workspace: '/ws', createdAt: now, updatedAt: now, ownerPid: null });
  w.details = { run9: { waiting: 'finished' } };
  const page = await open(w);
  await page.click('#runs li[data-run-id="run9"]');
  await page.waitForSelector('#message');
  await page.fill('#message', 'Now add a test');
  await page.evaluate(() => {
    window.__channels = [];
    document.getElementById('send').click();
    document.getElementById('send').click();
    document.getElementById('message').dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', ctrlKey: true, bubbles: true }));
  });
  assert.equal((await calls(page, 'send_message')).length, 1, 'one message');
  assert.match(await page.textContent('.transcript'), /Now add a test/, 'what was said shows at once');
  await page.evaluate(() => window.__channels[0].onmessage({ event: 'chunk', data: { type: 'step-start', runId: 'run9', from: 'AGENT', payload: { messageId: 'm2' } } }));
  await page.waitForSelector('.run-status .spinner');
  assert.equal(await page.$('#message'), null, 'the view follows the stream');
  await page.evaluate(() => window.__answerMessage());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("a message typed and not sent waits in its run's box; refused, it is back in the box", async () => {
  const w = world({ messageRefused: true });
  w.runs.push({ id: 'run9', prompt: 'Add caching', model: 'demo', mode: 'build', status: 'finished', workspace: '/ws', createdAt: now, updatedAt: now, ownerPid: null });
  w.details = { run9: { waiting: 'finished' } };
  const page = await open(w);
  await page.click('#runs li[data-run-id="run9"]');
  await page.fill('#message', 'Now add a test');
  await page.click('#inbox-1');
  await planOnScreen(page, 'Fix the login bug');
  await page.goBack();
  await page.waitForSelector('#message');
  assert.equal(await page.inputValue('#message'), 'Now add a test');
  await page.click('#send');
  await page.waitForSelector('#banner:not([hidden])');
  assert.match(await page.textContent('#banner-text'), /another process is running this run/);
  await page.waitForSelector('#message');
  assert.equal(await page.inputValue('#message'), 'Now add a test', 'refused: nothing typed is lost');
  assert.deepEqual(page.errors, []);
  await page.close();
});

/** A finished run (run9) opened and sent `message`, in `w` (a world): the page, and `send(data)`,
 * which streams a chunk of the run's answer into it. */
async function messageRun9(w, message) {
  w.runs.push({ id: 'run9', prompt: 'Add caching', model: 'demo', mode: 'build', status: 'finished', workspace: '/ws', createdAt: now, updatedAt: now, ownerPid: null });
  w.details = { run9: { waiting: 'finished' } };
  const page = await open(w);
  await page.click('#runs li[data-run-id="run9"]');
  await page.fill('#message', message);
  await page.evaluate(() => { window.__channels = []; document.getElementById('send').click(); });
  const send = (data) => page.evaluate((d) => window.__channels[0].onmessage({ event: 'chunk', data: { runId: 'run9', from: 'AGENT', ...d } }), data);
  return { page, send };
}

test('a long tool call streaming in shows its start; opened before its turn is stored, all of it shows once it is', async () => {
  const w = world();
  const content = 'Move a table, then check the counts.\n'.repeat(6000);
  w.toolCalls = { 'run9/w9': { args: { path: 'src/cache.rs', content }, result: null } };
  const { page, send } = await messageRun9(w, 'Now write it');
  await send({ type: 'step-start', payload: { messageId: 'm2' } });
  await send({ type: 'tool-call', payload: { toolCallId: 'w9', toolName: 'write_file', args: { path: 'src/cache.rs', content: content.slice(0, 600) } },
    argsFullBytes: JSON.stringify({ path: 'src/cache.rs', content }).length });
  const line = page.locator('details.tool[data-call-id="w9"]');
  assert.equal(await line.locator('.arg').textContent(), 'src/cache.rs');
  assert.match(await line.locator('.preview-note').textContent(), /^The start of 22\d KB/);
  await line.locator('summary').click();
  // The model is still answering: the backend has not stored the call yet, so it is not asked.
  await page.waitForTimeout(150);
  assert.equal((await calls(page, 'tool_call')).length, 0, 'not read before it is stored');
  assert.match(await line.locator('.preview-note').textContent(), /^Loading all 22\d KB/);
  await send({ type: 'tool-call-approval', payload: { toolCallId: 'w9', toolName: 'write_file', args: { path: 'src/cache.rs' }, resumeSchema: '{}' } });
  await page.waitForFunction(() => !document.querySelector('details.tool[data-call-id="w9"] .preview-note'));
  assert.equal(JSON.parse(await line.locator('pre').textContent()).content, content);
  assert.equal((await calls(page, 'tool_call')).length, 1);
  await page.evaluate(() => window.__answerMessage());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a run that stops for a decision changes nothing on screen until its stream ends, unless the end is late', async () => {
  const { page, send } = await messageRun9(world(), 'Now write it');
  await send({ type: 'step-start', payload: { messageId: 'm2' } });
  await send({ type: 'tool-call', payload: { toolCallId: 'w9', toolName: 'write_file', args: { path: 'src/cache.rs', content: 'x' } } });
  const shown = () => page.evaluate(() => ({
    call: document.querySelector('details.tool[data-call-id="w9"] .state').textContent,
    status: document.querySelector('.run-status').textContent,
  }));
  assert.deepEqual(await shown(), { call: '', status: 'Working…' });
  // Its review takes the view's place when the stream ends (within milliseconds): drawn before
  // that, the suspension would cost a frame on the way to the review.
  await send({ type: 'tool-call-approval', payload: { toolCallId: 'w9', toolName: 'write_file', args: { path: 'src/cache.rs' }, resumeSchema: '{}' } });
  assert.deepEqual(await shown(), { call: '', status: 'Working…' }, 'nothing drawn yet');
  // The end is late: the stream shows where it stands.
  await page.waitForFunction(() => document.querySelector('.run-status').textContent === 'Waiting for you');
  assert.deepEqual(await shown(), { call: 'waiting for you', status: 'Waiting for you' });
  await page.evaluate(() => window.__answerMessage());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a run that stops on a plan draws its review, from the top, from what its end hands over; a hand-off of another revision is not used', async () => {
  for (const handedId of [9, 8]) {
    const item = plan(9, 'Cache the sessions', 'fff999');
    const w = world({ revisions: { 9: { pages: [`<p id="asked">Asked for</p>${'<p>A step of the plan.</p>'.repeat(400)}`] } } });
    const { page, send } = await messageRun9(w, 'Plan the caching');
    await send({ type: 'step-start', payload: { messageId: 'm2' } });
    // A long answer, which the person scrolled down to follow.
    await send({ type: 'text-start', payload: { id: 't1' } });
    await send({ type: 'text-delta', payload: { id: 't1', text: 'Thinking it over.\n'.repeat(400) } });
    await send({ type: 'text-end', payload: { id: 't1' } });
    await page.evaluate(() => { const v = document.getElementById('view'); v.scrollTop = v.scrollHeight; });
    assert.ok(await page.evaluate(() => document.getElementById('view').scrollTop) > 1000);
    await send({ type: 'tool-call', payload: { toolCallId: 'call9', toolName: 'submit_plan', args: { path: item.path } } });
    await send({ type: 'tool-call-suspended', payload: { toolCallId: 'call9', toolName: 'submit_plan', suspendPayload: { toolId: 'submit_plan', path: item.path, title: item.title, plan: '...' } } });
    // The run submitted its plan: the backend has it open.
    await page.evaluate((i) => window.__world.inbox.push(i), item);
    const asked = async () => (await page.evaluate(() => window.__calls))
      .filter((c) => c.cmd === 'run_detail' || c.cmd === 'revision');
    const before = await asked();
    const detail = {
      run: { id: 'run9', prompt: 'Add caching', model: 'demo', mode: 'plan', status: 'suspended', workspace: '/ws', createdAt: now, updatedAt: now, ownerPid: null },
      transcript: [{ kind: 'user', text: 'Add caching' }, { kind: 'user', text: 'Plan the caching' }], pending: [item], error: null, waiting: null, interrupted: false,
    };
    const revision = { id: handedId, runId: 'run9', toolCallId: 'call9', path: item.path, title: item.title, revisionNo: 1, sha256: item.sha256, submittedAt: now,
      status: 'pending', feedback: null, decidedAt: null, prompt: 'Add caching', pages: [`<p id="handed">Handed over</p>${'<p>A step of the plan.</p>'.repeat(400)}`], revisionsInThread: 1, fallback: null, hidden: [], hiddenOmitted: 0 };
    await page.evaluate((data) => window.__channels[0].onmessage({ event: 'ended', data }), { runId: 'run9', status: 'suspended', review: { detail, revision } });
    await page.waitForSelector('#plan-title');
    assert.equal(await page.textContent('#plan-title'), 'Cache the sessions');
    assert.equal(await page.evaluate(() => document.getElementById('view').scrollTop), 0, 'the review shows from the top');
    if (handedId === 9) {
      await page.waitForSelector('#plan #handed');
      assert.deepEqual(await asked(), before, 'the run and its revision came with the end: nothing asked');
    } else {
      // Not the revision its item waits on (a newer one came meanwhile): the window asks for it.
      await page.waitForSelector('#plan #asked');
      assert.equal(await page.$('#plan #handed'), null);
      assert.deepEqual(await asked(), [...before, { cmd: 'revision', args: { id: 9 } }]);
    }
    await page.evaluate(() => window.__answerMessage());
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test('a run read while its stream ends draws once, from the hand-off; a view opened while a run is read stays', async () => {
  const item = plan(9, 'Cache the sessions', 'fff999');
  const run = { id: 'run9', prompt: 'Plan the caching', model: 'demo', mode: 'plan', status: 'running', workspace: '/ws', createdAt: now, updatedAt: now, ownerPid: null, driven: true };
  const page = await open(world({ starts: run }));
  await page.keyboard.press('n');
  await page.fill('#prompt', 'Plan the caching');
  // The run's view reads the run once the start answers; the read is slow.
  await page.evaluate(() => { window.__world.holdRunDetail = true; window.__channels = []; });
  await page.click('#start');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'run_detail' && c.args.runId === 'run9'));
  // Meanwhile the run submits its plan and ends, handing its review over: drawn from it.
  await page.evaluate((i) => window.__world.inbox.push(i), item);
  const detail = { run: { ...run, status: 'suspended' }, transcript: [{ kind: 'user', text: 'Plan the caching' }], pending: [item], error: null, waiting: null, interrupted: false };
  const revision = { id: 9, runId: 'run9', toolCallId: 'call9', path: item.path, title: item.title, revisionNo: 1, sha256: item.sha256, submittedAt: now,
    status: 'pending', feedback: null, decidedAt: null, prompt: 'Plan the caching', pages: ['<p id="handed">Handed over</p>'], revisionsInThread: 1, fallback: null, hidden: [], hiddenOmitted: 0 };
  await page.evaluate((data) => window.__channels[0].onmessage({ event: 'ended', data }), { runId: 'run9', status: 'suspended', review: { detail, revision } });
  await page.waitForSelector('#plan #handed');
  await page.evaluate(() => { document.querySelector('section.review').dataset.first = 'yes'; });
  // The slow read answers: the review on screen is the one drawn, not drawn again (before, it was
  // redrawn with an empty slot until its revision was read, and a reader saw half a review).
  await page.evaluate(() => window.__answerRunDetail());
  await page.waitForFunction(() => !window.__world.holdRunDetail);
  await page.evaluate(() => new Promise((r) => setTimeout(r, 100)));
  assert.equal(await page.getAttribute('section.review', 'data-first'), 'yes', 'the review was not drawn again');
  assert.equal(await page.textContent('#plan-revision'), 'Revision 1');
  // A run opened, then History before the run is read: History stays.
  await page.evaluate(() => { window.__world.holdRunDetail = true; });
  await page.click('#runs li[data-run-id="run2"]');
  await page.waitForFunction(() => window.__calls.filter((c) => c.cmd === 'run_detail' && c.args.runId === 'run2').length);
  await page.keyboard.press('h');
  await page.waitForSelector('#history-rows');
  await page.evaluate(() => window.__answerRunDetail());
  await page.evaluate(() => new Promise((r) => setTimeout(r, 100)));
  assert.ok(await page.$('#history-rows'), 'History is still on screen');
  assert.equal(await page.$('#plan-title'), null);
  assert.equal(await page.evaluate(() => window.__plandesk.view.name), 'history');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('index.html preloads exactly the modules app.js imports, directly or not, and ui/ has no other', async () => {
  const html = await readFile(join(UI, 'index.html'), 'utf8');
  const preloaded = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]).sort();
  // The import closure of app.js, read from the modules' static imports.
  const imported = new Set();
  const walk = async (name) => {
    const text = await readFile(join(UI, name), 'utf8');
    for (const [, dep] of text.matchAll(/^import\s[^;]*?['"]\.\/([^'"]+)['"]/gm)) {
      if (!imported.has(dep)) {
        imported.add(dep);
        await walk(dep);
      }
    }
  };
  await walk('app.js');
  assert.deepEqual(preloaded, [...imported].sort(), 'each module fetched at once, none twice, none unused');
  const files = (await readdir(UI)).filter((f) => f.endsWith('.js') && f !== 'app.js').sort();
  assert.deepEqual(files, [...imported].sort(), 'every module in ui/ is part of the page');
});

test('links in a plan go to the system browser through open_link', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan a');
  await page.click('#plan a');
  const [link] = await calls(page, 'open_link');
  assert.deepEqual(link.args, { url: 'https://example.com/doc' });
  assert.equal(new URL(page.url()).pathname, '/index.html', 'the page did not navigate');
  await page.close();
});

test('with nothing yet, the new-run form; no CSP violation, no overflow at the smallest window', async () => {
  const page = await open({ ...world(), inbox: [], runs: [] }, { width: 860, height: 560 });
  await page.waitForSelector('#prompt');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'prompt', 'ready to type');
  assert.equal(await page.textContent('#inbox-empty'), 'Nothing is waiting for you.');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
  assert.equal(overflow, false);
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  await page.close();
});

test('Settings lists each webhook with how its last delivery went: a failure says why', async () => {
  const webhooks = [
    { url: 'https://ntfy.sh/team', format: 'ntfy', withPlan: false, last: { at: now, ok: true, error: null } },
    { url: 'https://hooks.example.com/x', format: 'json', withPlan: false, last: { at: now, ok: false, error: 'answered 500 Internal Server Error (tried 5 times)' } },
  ];
  const page = await open({ ...world(), webhooks });
  await page.click('#settings-btn');
  await page.waitForFunction(() => document.querySelectorAll('#settings-webhooks li').length === 2);
  const rows = await page.$$eval('#settings-webhooks li', (lis) => lis.map((li) => li.innerText.replace(/\s+/g, ' ').trim()));
  assert.deepEqual(rows, [
    'https://ntfy.sh/team ntfy Delivered Remove',
    'https://hooks.example.com/x json Failed: answered 500 Internal Server Error (tried 5 times) Remove',
  ]);
  assert.equal(await page.$eval('#settings-webhooks li:nth-child(2) .problem', (el) => el.textContent.startsWith('Failed')), true);
  // The form to add one: the URL field takes the row, its format only what it needs.
  const [url, format] = await page.$$eval(['#webhook-url', '#webhook-format'].join(','), (els) => els.map((el) => el.getBoundingClientRect().width));
  assert.ok(url > 2 * format && url > 200, `the URL field is ${url}px wide, the format ${format}px`);
});

test('the new-run form and Settings show the default model once the backend has found it, and say so if it cannot', async () => {
  const ollama = { spec: 'ollama:qwen3@http://10.0.0.2:11434/v1', reason: 'a local Ollama answers at http://10.0.0.2:11434/v1' };
  const page = await open({ ...world(), inbox: [], runs: [], model: ollama, holdDefaultModel: true });
  await page.waitForSelector('#prompt');
  // The form is up and ready to type while the backend looks.
  assert.equal(await page.textContent('#model-hint'), 'Empty: the default model. Also openai:MODEL, anthropic:MODEL, ollama:MODEL.');
  assert.equal(await page.getAttribute('#model', 'placeholder'), null);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'prompt');
  await page.evaluate(() => window.__answerDefaultModel());
  await page.waitForFunction(() => document.querySelector('#model-hint').textContent.includes('qwen3'));
  assert.equal(await page.textContent('#model-hint'),
    `Empty: ${ollama.spec} — ${ollama.reason}. Also openai:MODEL, anthropic:MODEL, ollama:MODEL.`);
  assert.equal(await page.getAttribute('#model', 'placeholder'), ollama.spec);
  // A screen reader reads the hint with the field it describes (not while the person types
  // elsewhere).
  assert.equal(await page.evaluate(() => {
    const field = document.querySelector('#model');
    return document.getElementById(field.getAttribute('aria-describedby'))?.textContent;
  }), `Empty: ${ollama.spec} — ${ollama.reason}. Also openai:MODEL, anthropic:MODEL, ollama:MODEL.`);
  await page.screenshot({ path: join(ARTIFACTS, 'new-run-default-model-chromium.png') });
  assert.deepEqual(await page.$$eval('#model-options option', (os) => os.map((o) => o.value)),
    [ollama.spec, 'demo', 'openai:gpt-4.1', 'anthropic:claude-sonnet-4-5', 'ollama:llama3.2'], 'first, and once');
  // Settings asks again each time it opens.
  await page.click('#settings-btn');
  assert.equal(await page.textContent('#settings-model'), 'New runs use the default model.');
  await page.evaluate(() => window.__answerDefaultModel());
  await page.waitForFunction(() => document.querySelector('#settings-model').textContent.includes('qwen3'));
  assert.equal(await page.textContent('#settings-model'), `New runs use ${ollama.spec} (${ollama.reason}).`);
  await page.keyboard.press('Escape');
  // A backend that cannot say: the form still works, and says why.
  await page.evaluate(() => { window.__world.holdDefaultModel = false; window.__world.modelFails = true; });
  await page.click('#history-btn');
  await page.click('#new-run');
  await page.waitForFunction(() => document.querySelector('#model-hint')?.textContent.includes('could not'));
  assert.equal(await page.textContent('#model-hint'),
    'Empty: the default model, which could not be found: the store is busy. Also openai:MODEL, anthropic:MODEL, ollama:MODEL.');
  assert.deepEqual(await page.$$eval('#model-options option', (os) => os.map((o) => o.value)),
    ['demo', 'openai:gpt-4.1', 'anthropic:claude-sonnet-4-5', 'ollama:llama3.2']);
  // A default that is among the suggestions comes first too, once.
  await page.evaluate(() => {
    window.__world.modelFails = false;
    window.__world.model = { spec: 'anthropic:claude-sonnet-4-5', reason: 'ANTHROPIC_API_KEY is set' };
  });
  await page.click('#history-btn');
  await page.click('#new-run');
  await page.waitForFunction(() => document.querySelector('#model-hint')?.textContent.includes('ANTHROPIC'));
  assert.deepEqual(await page.$$eval('#model-options option', (os) => os.map((o) => o.value)),
    ['anthropic:claude-sonnet-4-5', 'demo', 'openai:gpt-4.1', 'ollama:llama3.2']);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('at idle after launch, a review view is laid out out of sight and taken down at once, asking the backend nothing', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.addInitScript(installFake, { ...world(), inbox: [], runs: [] });
  // What the warm-up puts in the document, whether it is still there a task later, and what is
  // asked of the backend while it is there.
  await page.addInitScript(() => {
    window.__warmUps = [];
    window.__askedDuringWarmUp = [];
    const invoke = window.__TAURI__.core.invoke;
    window.__TAURI__.core.invoke = (cmd, args) => {
      if (document.querySelector('.warm-up')) window.__askedDuringWarmUp.push(cmd);
      return invoke(cmd, args);
    };
    new MutationObserver((records) => {
      for (const r of records) {
        for (const node of r.addedNodes) {
          if (!node.classList?.contains('warm-up')) continue;
          const seen = { parts: ['.page-head', '.review', '#plan table', '.transcript-fold', '.run-status .spinner'].filter((s) => node.querySelector(s)) };
          window.__warmUps.push(seen);
          setTimeout(() => { seen.stayed = node.isConnected; });
        }
      }
    }).observe(document, { childList: true, subtree: true });
  });
  await page.goto(`${base}/index.html`);
  await page.waitForFunction(() => window.__warmUps.length && 'stayed' in window.__warmUps[0]);
  const [warmUp, ...more] = await page.evaluate(() => window.__warmUps);
  assert.deepEqual(more, [], 'once');
  assert.deepEqual(warmUp.parts, ['.page-head', '.review', '#plan table', '.transcript-fold', '.run-status .spinner'], 'the view of a run waiting on a plan, whole');
  assert.equal(warmUp.stayed, false, 'taken down in the task that built it');
  assert.deepEqual(await page.evaluate(() => window.__askedDuringWarmUp), [], 'nothing asked of the backend');
  assert.equal(await page.locator('.warm-up, .review').count(), 0);
  await page.close();
});

test('accessible: a button is named by its word, its key beside it; axe finds nothing serious in any view, light or dark', async () => {
  for (const colorScheme of ['light', 'dark']) {
    const page = await open(world(), { colorScheme });
    await page.waitForSelector('#plan-title');
    // "Approve", not "Approve a": the key is shown, hidden from the name, and named apart.
    for (const [name, id, keys] of [['Approve', 'approve', 'A'], ['Reject', 'reject', 'R'], ['Edit', 'edit', 'E'], ['Source', 'show-source', 'S']]) {
      assert.equal(await page.getByRole('button', { name, exact: true }).getAttribute('id'), id, name);
      assert.equal(await page.getAttribute(`#${id}`, 'aria-keyshortcuts'), keys, name);
      assert.equal(await page.textContent(`#${id} kbd[aria-hidden="true"]`), keys.toLowerCase(), `${name} shows its key`);
    }
    const views = {
      review: async () => {},
      'keyboard help': async () => { await page.keyboard.press('?'); await page.waitForSelector('#help[open]'); },
      history: async () => { await page.keyboard.press('Escape'); await page.keyboard.press('h'); await page.waitForSelector('#open-audit'); },
      'audit trail': async () => { await page.click('#open-audit'); await page.waitForSelector('.audit, #audit, [data-view="audit"]', { timeout: 5000 }).catch(() => {}); },
      'new run': async () => { await page.keyboard.press('n'); await page.waitForSelector('#start'); },
      settings: async () => { await page.click('#settings-btn'); await page.waitForSelector('#settings[open]'); },
    };
    for (const [view, show] of Object.entries(views)) {
      await show();
      assert.deepEqual(await axeFindings(page), [], `${colorScheme}: ${view}`);
    }
    assert.equal(await page.getByRole('button', { name: 'Start run', exact: true }).getAttribute('aria-keyshortcuts'), 'Control+Enter');
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test('a phone (390 × 844): one column, nothing sideways, the decision big and in reach; axe finds nothing serious, light or dark', async () => {
  for (const colorScheme of ['light', 'dark']) {
    const page = await open(world(), { colorScheme, width: 390, height: 844 });
    await page.waitForSelector('#plan-title');
    assert.deepEqual(await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]), [390, 390], 'no sideways scroll');
    const box = async (selector) => page.locator(selector).boundingBox();
    const [inbox, view] = [await box('#inbox-heading'), await box('#view')];
    assert.ok(inbox.y + inbox.height <= view.y, 'the inbox above the plan, one column');
    assert.ok(view.width >= 380, `the plan uses the width: ${view.width}`);
    // Folded into its heading while a plan is open: the plan has the screen.
    assert.equal(await page.isVisible('#inbox'), false, 'the inbox list is folded');
    const step = await box('#plan li');
    assert.ok(step.y < 844 / 2, `the plan's first step is in the upper half: at ${step.y}px`);
    for (const id of ['#approve', '#reject']) {
      const b = await box(id);
      assert.ok(b.height >= 44 && b.width >= 120, `${id} is a big target: ${JSON.stringify(b)}`);
      assert.ok(b.y + b.height <= 844, `${id} is on screen without scrolling`);
    }
    const fontSize = await page.evaluate(() => parseFloat(getComputedStyle(document.querySelector('#plan li')).fontSize));
    assert.ok(fontSize >= 15, `the plan is readable without zooming: ${fontSize}px`);
    assert.deepEqual(await axeFindings(page), [], `${colorScheme}: phone review`);
    await page.screenshot({ path: join(ARTIFACTS, `phone-review-${colorScheme}.png`) });
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test('dark mode follows the system', async () => {
  const page = await open(world(), { colorScheme: 'dark' });
  await page.waitForSelector('#plan-title');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(20, 22, 28)');
  await page.screenshot({ path: join(ARTIFACTS, 'dark-mode-chromium.png') });
  await page.close();
});

/** What the engine sends for a plan with a hidden comment and a zero-width space; the excerpt and
 * detail of the first finding try to inject HTML, which must show as text. */
const HIDDEN = {
  pages: ['<ol><li>Step<span class="invisible" title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span> one</li></ol>'
    + '<p><a href="https://example.com/d.png" rel="noopener noreferrer nofollow">Image: diagram (https://example.com/d.png)</a></p>'],
  hidden: [
    { kind: 'link-reference-definition', line: 3, excerpt: '[//]: # "<img src=x onerror=window.__pwned=1>secret instruction"',
      detail: '<b id="injected">a link reference definition</b>: not shown' },
    { kind: 'invisible-character', line: 5, excerpt: '1. Step⟨U+200B⟩ one', detail: 'U+200B ZERO WIDTH SPACE' },
    { kind: 'image', line: 7, excerpt: '![diagram](https://example.com/d.png)',
      detail: 'an image (alt text `diagram`, URL `https://example.com/d.png`): shown as a link, never loaded' },
  ],
  hiddenOmitted: 2,
};
/** Its source, as `revision_source` sends it. */
const HIDDEN_SOURCE = {
  sourceHtml: `<pre class="plan-source"><code>${['# Add caching\n', '\n', '[//]: # &quot;secret instruction&quot;\n', '\n',
    '1. Step<span class="invisible" title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span> one\n', '\n',
    '![diagram](https://example.com/d.png)\n', 'a very long line that must wrap '.repeat(12)]
    .map((line) => `<span class="line">${line}</span>`).join('')}</code></pre>`,
};

test('a plan that hides content: the warning lists it as text, s and the buttons switch to the exact source', async () => {
  const page = await open(world({ revisions: { 1: HIDDEN }, sources: { 1: HIDDEN_SOURCE } }));
  await page.waitForSelector('#hidden-warning');
  assert.match(await page.textContent('#hidden-warning'), /This plan holds 5 things the rendered view does not show\./,
    'listed and omitted findings are both counted');
  const items = await page.$$eval('#hidden-warning li', (lis) => lis.map((li) => li.textContent));
  assert.equal(items.length, 3);
  assert.ok(items[0].startsWith('Line 3'), items[0]);
  assert.ok(items[0].includes('<b id="injected">a link reference definition</b>: not shown'), 'the detail is shown as text');
  assert.ok(items[0].includes('[//]: # "<img src=x onerror=window.__pwned=1>secret instruction"'), 'the excerpt is shown as text');
  assert.equal(await page.evaluate(() => document.querySelectorAll('#hidden-warning img, #injected').length), 0, 'no HTML from a finding');
  assert.equal(await page.evaluate(() => window.__pwned ?? null), null);
  assert.match(await page.textContent('#hidden-warning'), /and 2 more not listed/);

  // Rendered first; s shows the source, s again the rendering.
  assert.equal(await page.isVisible('#plan'), true);
  assert.equal(await page.isVisible('#plan-source'), false);
  await page.keyboard.press('s');
  assert.equal(await page.isVisible('#plan'), false);
  assert.equal(await page.isVisible('#plan-source'), true);
  assert.equal(await page.getAttribute('#show-source', 'aria-pressed'), 'true');
  assert.match(await page.textContent('#plan-source'), /\[\/\/\]: # "secret instruction"/, 'the source shows what the rendering drops');
  await page.keyboard.press('s');
  assert.equal(await page.isVisible('#plan'), true);
  assert.equal(await page.getAttribute('#show-rendered', 'aria-pressed'), 'true');

  // The strip's button goes to the source too; marked characters are visible boxes there.
  await page.click('#hidden-show-source');
  assert.equal(await page.isVisible('#plan-source'), true);
  assert.equal(await page.isVisible('#hidden-show-source'), false, 'no button for the view already shown');
  const marker = await page.evaluate(() => {
    const el = document.querySelector('#plan-source span.invisible');
    const style = getComputedStyle(el);
    return { width: el.getBoundingClientRect().width, border: style.borderTopStyle, text: el.textContent };
  });
  assert.ok(marker.width > 20 && marker.border === 'solid', `the marker is a visible box: ${JSON.stringify(marker)}`);
  assert.equal(marker.text, '⟨U+200B⟩');
  const wraps = await page.evaluate(() => {
    const pre = document.querySelector('#plan-source pre.plan-source');
    return pre.scrollWidth <= pre.clientWidth && getComputedStyle(pre).fontFamily.includes('Mono');
  });
  assert.equal(wraps, true, 'long source lines wrap, in a monospace font');
  await page.screenshot({ path: join(ARTIFACTS, 'source-view-chromium.png') });

  // An image is a link that goes through open_link like any other.
  await page.click('#show-rendered');
  await page.click('#plan a');
  const [link] = await calls(page, 'open_link');
  assert.deepEqual(link.args, { url: 'https://example.com/d.png' });

  // A plan that hides nothing has no warning, but still its source.
  await page.keyboard.press('j');
  await page.waitForFunction(() => document.querySelector('#plan-title')?.textContent === 'Fix the login bug');
  assert.equal(await page.$('#hidden-warning'), null);
  assert.equal(await page.isVisible('#show-source'), true);
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the hidden-content warning and the source view in dark mode, at the smallest window', async () => {
  const page = await open(world({ revisions: { 1: HIDDEN }, sources: { 1: HIDDEN_SOURCE } }), { colorScheme: 'dark', width: 860, height: 560 });
  await page.waitForSelector('#hidden-warning');
  const overflows = () => page.evaluate(() => [...document.querySelectorAll('#view, .review, #hidden-warning, .review-head')]
    .filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.id || el.className));
  assert.deepEqual(await overflows(), [], 'nothing is wider than its box');
  await page.screenshot({ path: join(ARTIFACTS, 'hidden-warning-dark-chromium.png') });
  await page.click('#hidden-show-source');
  assert.deepEqual(await overflows(), []);
  await page.screenshot({ path: join(ARTIFACTS, 'source-view-dark-chromium.png') });
  await page.close();
});

test('? lists s for the source view', async () => {
  const page = await open(world());
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('?');
  assert.match(await page.textContent('#help'), /s\s*Switch the plan between rendered and its exact source/);
  await page.close();
});

test('an interrupted run says so and offers Continue, which continues it', async () => {
  const w = world();
  w.runs.push({ id: 'run9', prompt: 'Crashed mid-way', model: 'demo', mode: 'build', status: 'suspended', workspace: '/ws',
    createdAt: now, updatedAt: now, ownerPid: null, interrupted: true });
  w.details = { run9: { interrupted: true } };
  const page = await open(w, { colorScheme: 'dark' });
  // The list says what its view says (the backend's `interrupted`).
  assert.equal(await page.textContent('#runs li[data-run-id="run9"] .badge'), 'interrupted');
  assert.equal(await page.textContent('#runs li[data-run-id="run1"] .badge'), 'to review', 'a run whose plan waits');
  await page.click('#runs li[data-run-id="run9"]');
  await page.waitForSelector('#retry');
  assert.equal(await page.textContent('#retry'), 'Continue');
  assert.match(await page.textContent('#interrupted'), /This run was interrupted\. Your decision was saved/);
  assert.equal(await page.textContent('.page-head .badge'), 'interrupted');
  await page.screenshot({ path: join(ARTIFACTS, 'interrupted-dark-chromium.png') });
  await page.click('#retry');
  await page.waitForFunction(() => window.__calls.some((c) => c.cmd === 'retry_run'));
  const [retry] = await calls(page, 'retry_run');
  assert.equal(retry.args.runId, 'run9');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a long tool argument in a transcript shows its start, and all of it once opened', async () => {
  const w = world();
  const content = '# Plan\n\n' + 'Move a table, then check the counts.\n'.repeat(6000);
  w.details = { run1: { transcript: [
    { kind: 'user', text: 'Prompt 1' },
    { kind: 'tool-call', toolCallId: 'w1', toolName: 'write_file', args: { content: content.slice(0, 600), path: '.plandesk/plans/p1.md' }, fullBytes: 222345 },
    { kind: 'tool-result', toolCallId: 'w1', toolName: 'write_file', result: { written: true }, fullBytes: null },
    { kind: 'tool-call', toolCallId: 's1', toolName: 'submit_plan', args: { path: '.plandesk/plans/p1.md' }, fullBytes: null },
  ] } };
  w.toolCalls = { 'run1/w1': { args: { content, path: '.plandesk/plans/p1.md' }, result: { written: true } } };
  w.toolCallFailsOnce = true;
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  await page.click('.transcript-fold > summary');
  const write = page.locator('details.tool[data-call-id="w1"]');
  assert.equal(await write.locator('.arg').textContent(), '.plandesk/plans/p1.md', 'the summary names the file');
  assert.equal(await write.locator('.preview-note').textContent(), 'The start of 222 KB: all of it shows when this is opened.');
  assert.equal(await page.locator('details.tool[data-call-id="s1"] .preview-note').count(), 0, 'a short one is whole');
  await write.locator('summary').click();
  await page.waitForFunction(() => /could not be read/.test(document.querySelector('details.tool[data-call-id="w1"] .preview-note')?.textContent));
  assert.match(await write.locator('.preview-note').textContent(), /Only the start is shown: the rest could not be read \(the store could not be read\)/);
  assert.ok((await write.locator('pre').textContent()).length < 2000, 'the preview stays');
  // Closed and opened again: asked again, and now all of it shows.
  await write.locator('summary').click();
  await write.locator('summary').click();
  await page.waitForFunction(() => !document.querySelector('details.tool[data-call-id="w1"] .preview-note'));
  const shown = await write.locator('pre').textContent();
  assert.equal(JSON.parse(shown).content, content);
  await write.locator('summary').click();
  await write.locator('summary').click();
  assert.equal((await calls(page, 'tool_call')).length, 2, 'fetched once it came, not at every opening');
  assert.deepEqual((await calls(page, 'tool_call'))[1].args, { runId: 'run1', toolCallId: 'w1' });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a revision opened from History has the same toggle and warning', async () => {
  const w = world({ revisions: { 1: HIDDEN }, sources: { 1: HIDDEN_SOURCE } });
  const first = w.inbox[0];
  w.history = [{ id: 1, runId: first.runId, toolCallId: first.toolCallId, path: first.path, title: first.title, revisionNo: 1,
    sha256: first.sha256, submittedAt: first.since, status: 'pending', feedback: null, decidedAt: null, prompt: first.prompt }];
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  await page.keyboard.press('h');
  await page.click('#history-rows .row-item');
  await page.waitForSelector('.review .hidden-warning');
  assert.equal(await page.$('#approve'), null, 'the revision view, not the review card');
  assert.match(await page.textContent('.hidden-warning'), /This plan holds 5 things/);
  await page.keyboard.press('s');
  assert.match(await page.textContent('.plan-source-view:not([hidden])'), /secret instruction/);
  await page.screenshot({ path: join(ARTIFACTS, 'revision-source-chromium.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a plan the engine could not render shows the reason above its source', async () => {
  const fallback = {
    pages: ['<p class="render-fallback">This plan is too deeply nested to render; here is its source.</p>\n'
      + '<pre class="plan-source"><code># Add caching\n\n' + '&gt; '.repeat(60) + 'deep</code></pre>'],
    fallback: { reason: 'too-deep', depth: 150, limit: 100 },
  };
  const page = await open(world({ revisions: { 1: fallback } }));
  await page.waitForSelector('#plan p.render-fallback');
  assert.match(await page.textContent('#plan'), /too deeply nested to render[\s\S]*# Add caching/, 'the reason, then the whole source');
  const overflow = await page.evaluate(() => {
    const pre = document.querySelector('#plan pre.plan-source');
    return pre.scrollWidth > pre.clientWidth;
  });
  assert.equal(overflow, false, 'the source wraps');
  await page.screenshot({ path: join(ARTIFACTS, 'render-fallback-chromium.png') });
  await page.close();
});

test('a history of 10,000 revisions opens a page at a time and scrolls through to the end', async () => {
  const w = world();
  w.history = Array.from({ length: 10000 }, (_, i) => ({ id: 10000 - i, runId: `run${i % 1000}`, toolCallId: `c${i}`,
    path: '.plandesk/plans/p.md', title: `Plan ${10000 - i}`, revisionNo: 1 + (i % 10), sha256: `${i}`.padStart(64, '0'),
    submittedAt: 1_700_000_000_000 - i * 1000, status: i % 3 ? 'approved' : 'rejected', feedback: i % 3 ? null : 'Shorter',
    decidedAt: 1_700_000_000_000, decidedBy: 'Ben', prompt: 'Migrate the store' }));
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  const started = Date.now();
  await page.keyboard.press('h');
  await page.waitForSelector('#history-rows .row-item');
  const opened = Date.now() - started;
  assert.equal(await page.locator('#history-rows .row-item').count(), 100, 'one page at first');
  assert.equal(await page.evaluate(() => window.__world.historyReads), 1, 'one page read');
  assert.match(await page.textContent('#history-rows .list-more'), /More/);
  assert.match(await page.textContent('#history-rows .row-item'), /decided by Ben/);
  await page.screenshot({ path: join(ARTIFACTS, 'history-10000-chromium.png') });
  // Scrolling to the end of the list reads the next page (after the last one's end), until all
  // are there.
  for (let pages = 2; pages <= 4; pages += 1) {
    await page.locator('#history-rows .list-more').scrollIntoViewIfNeeded();
    await page.waitForFunction((n) => document.querySelectorAll('#history-rows .row-item').length === n, pages * 100);
  }
  const reads = await calls(page, 'history');
  assert.deepEqual(reads.map((c) => c.args.before), [null, 9901, 9801, 9701]);
  const titles = await page.locator('#history-rows .row-item strong').allTextContents();
  assert.deepEqual(titles, Array.from({ length: 400 }, (_, i) => `Plan ${10000 - i}`), 'each once, newest first');
  console.log(`history of 10,000: first page on screen ${opened} ms after the key`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a page of the history that cannot be read can be tried again; a filter reads its own pages', async () => {
  const w = world();
  w.history = Array.from({ length: 250 }, (_, i) => ({ id: 250 - i, runId: 'run1', toolCallId: `c${i}`,
    path: '.plandesk/plans/p.md', title: `Plan ${250 - i}`, revisionNo: 1, sha256: `${i}`.padStart(64, '0'),
    submittedAt: 1_700_000_000_000 - i * 1000, status: i % 2 ? 'approved' : 'expired', feedback: null,
    decidedAt: 1_700_000_000_000, decidedBy: 'Ben', prompt: 'Migrate the store' }));
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  await page.evaluate(() => { window.__world.historyFails = (before) => before === 151; });
  await page.keyboard.press('h');
  await page.waitForSelector('#history-rows .row-item');
  await page.locator('#history-rows .list-more').scrollIntoViewIfNeeded();
  await page.waitForSelector('#history-rows .list-more button');
  assert.match(await page.textContent('#history-rows .list-more'), /Could not read more/);
  assert.match(await page.textContent('#banner'), /the store is busy/);
  assert.equal(await page.locator('#history-rows .row-item').count(), 100, 'what was read stays');
  await page.screenshot({ path: join(ARTIFACTS, 'history-page-failed-chromium.png') });
  await page.evaluate(() => { window.__world.historyFails = null; });
  await page.click('#history-rows .list-more button');
  await page.waitForFunction(() => document.querySelectorAll('#history-rows .row-item').length === 200);
  // Another status: the list is read again from its start, and only that status is asked for.
  await page.selectOption('#history-status', 'expired');
  await page.waitForFunction(() => [...document.querySelectorAll('#history-rows .badge')].every((b) => /expired/.test(b.textContent)));
  await page.locator('#history-rows .list-more').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelectorAll('#history-rows .row-item').length === 125);
  assert.equal(await page.textContent('#history-rows .list-more'), '', 'the end: nothing more');
  const expired = (await calls(page, 'history')).filter((c) => c.args.filter.status === 'expired');
  assert.deepEqual(expired.map((c) => c.args), [
    { filter: { status: 'expired', query: '' }, before: null, limit: 100 },
    { filter: { status: 'expired', query: '' }, before: 52, limit: 100 },
  ]);
  // Another filter whose first page cannot be read: the last filter's list goes, the reason
  // and a retry take its place.
  await page.evaluate(() => { window.__world.historyFails = (before) => before == null; });
  await page.selectOption('#history-status', 'approved');
  await page.waitForSelector('#history-retry');
  assert.equal(await page.locator('#history-rows .row-item').count(), 0, 'no expired rows under "Approved"');
  assert.match(await page.textContent('#history-rows'), /Could not read the history[\s\S]*the store is busy/);
  await page.evaluate(() => { window.__world.historyFails = null; });
  await page.click('#history-retry');
  await page.waitForFunction(() => document.querySelectorAll('#history-rows .row-item').length === 100
    && [...document.querySelectorAll('#history-rows .badge')].every((b) => /approved/.test(b.textContent)));
  assert.deepEqual(page.errors.filter((e) => !/store is busy/.test(e)), []);
  await page.close();
});

/** A plan of `n` pages of 30 blocks each, as the engine sends a long one: block k is on line 2k + 1. */
function longPlan(n) {
  const pages = [];
  for (let p = 0; p < n; p += 1) {
    let html = '';
    for (let b = 0; b < 30; b += 1) {
      const k = p * 30 + b;
      const line = 2 * k + 1;
      html += b % 10 === 0
        ? `<h2 data-sourcepos="${line}:1-${line}:12">Step ${k}</h2>\n`
        : `<p data-sourcepos="${line}:1-${line}:40">Block ${k}: move table t${k} to the new layout and check its rows.</p>\n`;
    }
    pages.push(html);
  }
  return pages;
}

test('a long plan keeps only the pages near the screen; what scrolls in is marked, and nothing on screen jumps', async () => {
  const pages = longPlan(120);
  const lastLine = 2 * (120 * 30 - 1) + 1;
  // As the engine sends it: the first pages with the revision, the rest when asked for.
  const w = world({ revisions: { 1: { pages: pages.slice(0, 2), pageBytes: pages.map((p) => p.length) } }, pageSets: { 1: pages } });
  // A comment on a block far down: marked when its page comes into the document.
  w.comments = [{ id: 1, revisionId: 1, revisionNo: 1, lines: { start: lastLine, end: lastLine }, now: { start: lastLine, end: lastLine },
    quote: 'Block', text: 'Check this one', author: 'Ana', createdAt: now, state: 'open' }];
  const page = await open(w);
  await page.waitForSelector('#plan [data-sourcepos]');
  const shown = () => page.evaluate(() => ({
    filled: [...document.querySelectorAll('#plan .plan-page')].filter((p) => p.firstChild).length,
    pages: document.querySelectorAll('#plan .plan-page').length,
    blocks: document.querySelectorAll('#plan [data-sourcepos]').length,
  }));
  // Laid out first with the first pages and one box for the rest; each page has its own box
  // right after.
  assert.ok(await page.evaluate(() => window.__plandesk.metrics.planBoxesAtRender) <= 3, 'the first layout places a few boxes, not 120');
  await page.waitForFunction(() => document.querySelectorAll('#plan .plan-page').length === 120);
  assert.equal(await page.locator('#plan .plan-later').count(), 0);
  const start = await shown();
  assert.equal(start.pages, 120, 'every page has its box');
  assert.ok(start.filled >= 1 && start.filled <= 8, `only the first pages are in the document: ${JSON.stringify(start)}`);
  assert.equal(await page.locator(`#plan [data-sourcepos^="${lastLine}:"]`).count(), 0, 'the last block is not built yet');
  assert.deepEqual((await calls(page, 'revision_pages')).map((c) => c.args), [{ id: 1, from: 2 }], 'the rest is fetched once');

  // To the end: the last pages come, the first go; the comment's block is marked as it comes.
  await page.evaluate(() => { const v = document.getElementById('view'); v.scrollTop = v.scrollHeight; });
  const last = page.locator(`#plan [data-sourcepos^="${lastLine}:"]`);
  await last.waitFor();
  await page.waitForFunction(() => !document.querySelector('#plan .plan-page').firstChild);
  assert.equal(await last.getAttribute('data-comments'), '1', 'the comment on the last block is marked');
  const atEnd = await shown();
  assert.ok(atEnd.filled <= 8, `far pages are emptied: ${JSON.stringify(atEnd)}`);

  // Pages above the screen fill in as the plan scrolls up: what is on screen stays where it is.
  for (let i = 0; i < 12; i += 1) {
    const moved = await page.evaluate(async () => {
      const view = document.getElementById('view');
      view.scrollTop -= 700;
      const box = view.getBoundingClientRect();
      const block = [...document.querySelectorAll('#plan [data-sourcepos]')].find((el) => el.getBoundingClientRect().top >= box.top);
      if (!block) return { blank: true };
      const before = block.getBoundingClientRect().top;
      const frame = () => new Promise((r) => requestAnimationFrame(r));
      await frame(); await frame(); await frame();
      return { block: block.dataset.sourcepos, before, after: block.getBoundingClientRect().top };
    });
    assert.ok(Math.abs(moved.after - moved.before) <= 1, `(scrollTop is whole pixels) a block on screen moved as pages above it filled: ${JSON.stringify(moved)}`);
  }
  assert.ok((await shown()).filled <= 8, 'pages far below are emptied again');

  // Select a block, scroll it far away and back: still selected; then comment on it.
  const line = await page.evaluate(() => {
    const top = document.getElementById('view').getBoundingClientRect().top + 100;
    const block = [...document.querySelectorAll('#plan p[data-sourcepos]')].find((el) => el.getBoundingClientRect().top >= top);
    return Number(block.dataset.sourcepos.split(':')[0]);
  });
  const target = `#plan [data-sourcepos^="${line}:"]`;
  await page.click(target);
  assert.match(await page.textContent('#selected-lines'), new RegExp(`Line ${line} selected`));
  const scrolled = await page.evaluate(() => document.getElementById('view').scrollTop);
  await page.evaluate(() => { document.getElementById('view').scrollTop = 0; });
  await page.waitForFunction((sel) => !document.querySelector(sel), target);
  await page.evaluate((y) => { document.getElementById('view').scrollTop = y; }, scrolled);
  await page.waitForSelector(target);
  await page.waitForFunction((sel) => document.querySelector(sel)?.classList.contains('line-selected'), target);
  await page.screenshot({ path: join(ARTIFACTS, 'long-plan-chromium.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("the editor's preview of a long plan builds only the pages near its scroll position, and stays there as the text changes", async () => {
  const w = world();
  w.previewPages = longPlan(120);
  const page = await open(w);
  await page.click('#edit');
  await page.waitForSelector('#plan-preview .plan-page [data-sourcepos]');
  const shown = () => page.evaluate(() => ({
    pages: document.querySelectorAll('#plan-preview .plan-page').length,
    filled: [...document.querySelectorAll('#plan-preview .plan-page')].filter((p) => p.firstChild).length,
  }));
  await page.waitForFunction(() => document.querySelectorAll('#plan-preview .plan-page').length === 120);
  const start = await shown();
  assert.equal(start.pages, 120, 'every page has its box');
  assert.ok(start.filled >= 1 && start.filled <= 8, `only the first pages are built: ${JSON.stringify(start)}`);

  // Halfway down, then the text changes: the preview is built again around the same place.
  const frames = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r)))));
  await page.evaluate(() => { const p = document.getElementById('plan-preview'); p.scrollTop = p.scrollHeight / 2; });
  await frames();
  const onScreen = () => page.evaluate(() => {
    const box = document.getElementById('plan-preview').getBoundingClientRect();
    const block = [...document.querySelectorAll('#plan-preview [data-sourcepos]')].find((el) => el.getBoundingClientRect().top >= box.top);
    return block && { block: block.textContent, top: block.getBoundingClientRect().top - box.top };
  });
  const before = await onScreen();
  assert.ok(before && Number(before.block.match(/\d+/)[0]) > 500, `halfway down: ${JSON.stringify(before)}`);
  const length = await page.evaluate(() => document.getElementById('plan-editor').value.length);
  // A line added at the top of the text: every line number below it moves.
  await page.focus('#plan-editor');
  await page.evaluate(() => { const t = document.getElementById('plan-editor'); t.setSelectionRange(0, 0); });
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => window.__calls.filter((c) => c.cmd === 'preview').length === 2
    && window.__calls.filter((c) => c.cmd === 'preview')[1].args.markdown.length === n, length + 1);
  await frames();
  const after = await onScreen();
  assert.equal(after.block, before.block, 'the same block');
  assert.ok(Math.abs(after.top - before.top) <= 1, `at the same place (within a pixel): ${before.top} -> ${after.top}`);
  const built = await shown();
  assert.ok(built.pages === 120 && built.filled <= 8, `still only the pages near it: ${JSON.stringify(built)}`);
  // At the end, what was typed shows.
  await page.evaluate(() => { const p = document.getElementById('plan-preview'); p.scrollTop = p.scrollHeight; });
  await page.waitForFunction((n) => document.getElementById('typed-length')?.textContent === `${n} characters`, length + 1);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the audit view says what became of tokens, links and sessions in words, and fits a phone', async () => {
  const entry = (id, kind, process, data) => ({ id, at: now, actor: 'ana', process, runId: '', kind, revisionSha: null, data, prevHash: 'p', hash: 'h' });
  const entries = [
    entry(1, 'token-created', 'cli', { token: 'laptop' }),
    entry(2, 'token-created', 'cli', { token: 'phone', kind: 'pairing' }),
    entry(3, 'token-revoked', 'web', { token: 'phone', kind: 'pairing' }),
    entry(4, 'token-created', 'web', { token: 'phone', kind: 'session' }),
    entry(5, 'token-created', 'app', { token: 'tablet', kind: 'pairing' }),
    entry(6, 'token-revoked', 'cli', { token: 'tablet', kind: 'pairing' }),
    entry(7, 'token-revoked', 'cli', { token: 'phone', kind: 'session' }),
    entry(8, 'token-revoked', 'cli', { token: 'laptop' }),
  ];
  const summary = 'The audit trail holds: 8 entries, chain intact.';
  const w = world({ audit: { entries, check: { entries: 8, broken: null, head: { state: 'reached', recorded: 8 }, holds: true, summary } } });
  const page = await open(w, { width: 390, height: 844 });
  await page.waitForSelector('#plan-title');
  await page.click('#inbox-toggle');
  await page.click('#history-btn');
  await page.click('#open-audit');
  await page.waitForSelector('#audit-table');
  const details = await page.$$eval('#audit-table td.detail', (tds) => tds.map((td) => td.textContent).reverse());
  const kinds = await page.$$eval('#audit-table tr[data-kind] td:nth-child(4)', (tds) => tds.map((td) => td.textContent).reverse());
  assert.deepEqual(kinds.slice(0, 2), ['Gave access', 'Gave access'], 'in words, not the export\'s kinds');
  assert.equal(kinds.at(-1), 'Took access back');
  assert.deepEqual(details, [
    'agent token “laptop” created',
    'sign-in link made for “phone”',
    'sign-in link for “phone” used',
    '“phone” signed in from a browser',
    'sign-in link made for “tablet”',
    'sign-in link for “tablet” withdrawn',
    '“phone” signed out',
    'agent token “laptop” revoked',
  ]);
  assert.deepEqual(await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]), [390, 390], 'no sideways scroll');
  const detail = await page.locator('#audit-table td.detail').first().boundingBox();
  assert.ok(detail.x + detail.width <= 390 && detail.width > 300, `the detail has the width: ${JSON.stringify(detail)}`);
  const table = await page.locator('#audit-table').boundingBox();
  assert.ok(table.width <= 390, `the table fits: ${table.width}px`);
  assert.deepEqual(await axeFindings(page), [], 'the audit trail on a phone');
  await page.screenshot({ path: join(ARTIFACTS, 'phone-audit.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the audit view shows what its check found: a cut trail as broken, an end it could not check as a warning', async () => {
  const entry = { id: 3, at: now, actor: 'Ada', process: 'app', runId: 'run1', kind: 'decided', revisionSha: 'aaa111',
    data: { action: 'approved' }, prevHash: 'p', hash: 'h' };
  const cut = 'The audit trail was cut: its 2 newest entries were removed (it ends at entry #3; the record kept outside the database names entry #5).';
  const w = world({ audit: { entries: [entry], check: { entries: 3, broken: null, head: { state: 'cut', recorded: 5, removed: 2 }, holds: false, summary: cut } } });
  const page = await open(w);
  await page.waitForSelector('#plan-title');
  await page.click('#history-btn');
  await page.click('#open-audit');
  await page.waitForSelector('#audit-table');
  assert.equal(await page.textContent('#audit-chain'), cut, 'the check\'s own words');
  assert.equal(await page.getAttribute('#audit-chain', 'class'), 'audit-chain broken');
  await page.click('#export-audit');
  assert.deepEqual((await calls(page, 'export_audit')).map((c) => c.args), [{}], 'the whole trail is exported');

  const unchecked = 'The audit trail holds: 3 entries, chain intact: none was changed. But whether its newest entries were removed cannot be told: no record of its end had been kept outside the database yet.';
  await page.evaluate((summary) => {
    window.__world.audit.check = { entries: 3, broken: null, head: { state: 'notRecorded' }, holds: true, summary };
  }, unchecked);
  await page.click('#history-btn');
  await page.click('#open-audit');
  await page.waitForFunction((s) => document.querySelector('#audit-chain')?.textContent === s, unchecked);
  assert.equal(await page.getAttribute('#audit-chain', 'class'), 'audit-chain unchecked', 'not shown as a pass');
  assert.deepEqual(page.errors, []);
  await page.close();
});
