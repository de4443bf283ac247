// The web review in real Chromium with a phone's viewport against a real `plandesk serve`: a
// browser signed in by a one-time link of `plandesk pair` reviews plans that Claude Code's http
// hooks wait on, and the agent gets the answer; without a session nothing is shown and the API
// refuses; a page of another site cannot decide.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { launchChromium, axeFindings } from './chromium.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'target/debug/plandesk');
const ARTIFACTS = join(ROOT, 'target/e2e-artifacts');
const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };

let data;
let serve;
let base;
let token;
let browser;

const plandesk = (...args) => execFileSync(BIN, ['--data-dir', data, ...args], { encoding: 'utf8' });

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  data = mkdtempSync(join(tmpdir(), 'plandesk-web-'));
  token = plandesk('token', 'create', 'laptop').trim();
  serve = spawn(BIN, ['--data-dir', data, 'serve', '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  base = await new Promise((resolve, reject) => {
    let said = '';
    serve.stderr.on('data', (chunk) => {
      // Passed on to the test's own stderr: a failure here is read with what serve said.
      process.stderr.write(chunk);
      said += chunk;
      const found = said.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/);
      if (found) resolve(found[1]);
    });
    serve.on('exit', (code) => reject(new Error(`serve exited ${code}: ${said}`)));
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  serve?.kill();
  if (data) rmSync(data, { recursive: true, force: true });
});

/** A sign-in link, as `plandesk pair --json` prints it. */
function pair(name) {
  return JSON.parse(plandesk('--json', 'pair', '--name', name, '--url', base)).url;
}

/** Claude Code's http hook asking about a plan: resolves with the hook's answer once a person decides. */
function hookWaits(session, plan) {
  return fetch(`${base}/hooks/claude`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      session_id: session, transcript_path: '/home/u/.claude/projects/p/s.jsonl', cwd: '/home/u/proj',
      permission_mode: 'plan', hook_event_name: 'PermissionRequest', tool_name: 'ExitPlanMode', tool_input: { plan },
    }),
  }).then((r) => r.json());
}

/** On a phone the inbox is folded into its heading while a view is open: unfolds it (if it is
 * folded) and opens its first item. */
async function openFromInbox(page) {
  await page.waitForSelector('#inbox li', { state: 'attached' });
  if (await page.getAttribute('#inbox-toggle', 'aria-expanded') === 'false') await page.tap('#inbox-toggle');
  await page.tap('#inbox li');
}

async function pending() {
  return JSON.parse(plandesk('--json', 'pending'));
}

async function waitFor(check, what) {
  const until = Date.now() + 15000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A phone signed in with a fresh link. */
async function signedInPhone(name, colorScheme = 'light') {
  const context = await browser.newContext({ ...PHONE, colorScheme });
  const page = await context.newPage();
  page.on('pageerror', (e) => { throw e; });
  await page.goto(pair(name));
  await page.getByRole('button', { name: `Sign in as ${name}` }).click();
  await page.waitForSelector('body[data-ready="true"]');
  return { context, page };
}

test('without a session nothing is shown and the API refuses', async () => {
  const answer = hookWaits('s-secret', '# Rotate the secret keys\n\nEvery key, tonight.');
  await waitFor(async () => (await pending()).length === 1, 'the plan');
  const context = await browser.newContext(PHONE);
  const page = await context.newPage();
  await page.goto(base);
  // One same-site reload (a link from another site comes without the cookie), then sign in.
  await page.waitForURL(/\?signin=1$/);
  assert.equal(await page.textContent('h1'), 'Sign in to review plans');
  assert.equal((await fetch(`${base}/?signin=1`)).status, 401);
  const text = await page.textContent('body');
  assert.doesNotMatch(text, /Rotate|secret keys|1/, 'no title, no count');
  for (const command of ['inbox', 'runs', 'history']) {
    const refused = await page.evaluate(async (command) => {
      const r = await fetch(`/api/${command}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return [r.status, await r.text()];
    }, command);
    assert.equal(refused[0], 401, command);
    assert.doesNotMatch(refused[1], /Rotate/, command);
  }
  const events = await fetch(`${base}/api/events`);
  assert.equal(events.status, 401);
  // A cookie that is not a session is none.
  await context.addCookies([{ name: 'plandesk_session', value: `pds_${'0'.repeat(64)}`, url: base }]);
  await page.goto(`${base}/?signin=1`);
  assert.equal(await page.textContent('h1'), 'Sign in to review plans');
  await context.close();
  plandesk('reject', (await pending())[0].runId, '--feedback', 'not now');
  assert.equal((await answer).hookSpecificOutput.decision.behavior, 'deny');
});

test('a phone signed in by pairing approves a plan and the waiting agent is answered; a rejection carries its feedback', async () => {
  const { context, page } = await signedInPhone('phone');
  // Live: a plan submitted while the page is open appears without reloading.
  const approved = hookWaits('s-cache', '# Add a cache\n\n1. Put an LRU cache in front of the store.\n2. Measure it.');
  await openFromInbox(page);
  await page.waitForSelector('#plan-title');
  assert.equal(await page.textContent('#plan-title'), 'Add a cache');
  assert.deepEqual(await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]), [390, 390], 'no sideways scroll');
  // The plan has the screen: the inbox is folded into its heading, the plan's first lines are
  // in the upper half, and the decision below takes one line until it is written in.
  assert.equal(await page.isVisible('#inbox'), false, 'the inbox is folded');
  assert.equal(await page.getAttribute('#inbox-toggle', 'aria-expanded'), 'false');
  const at = await page.evaluate(() => ({
    plan: document.querySelector('#plan li').getBoundingClientRect().top,
    foot: document.querySelector('.review-foot').getBoundingClientRect().height,
    // Claude Code's plan: the choice to let it edit unasked, one short line more.
    choice: document.querySelector('label.accept-edits')?.getBoundingClientRect().height ?? 0,
  }));
  assert.ok(at.plan < 844 / 2, `the plan's first step is in the upper half: at ${at.plan}px`);
  assert.ok(at.choice > 0 && at.choice < 30, `the edit choice is there, on one line: ${at.choice}px`);
  assert.ok(at.foot - at.choice < 150, `the decision takes ${at.foot}px (${at.choice}px of it the choice)`);
  await page.tap('#inbox-toggle');
  assert.equal(await page.isVisible('#inbox li'), true, 'unfolded: the inbox');
  assert.equal(await page.isVisible('#history-btn'), true, 'unfolded: History');
  await page.tap('#inbox-toggle');
  assert.equal(await page.isVisible('#inbox li'), false, 'folded again');
  for (const colorScheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme });
    assert.deepEqual(await axeFindings(page), [], `${colorScheme}: the web review on a phone`);
    await page.screenshot({ path: join(ARTIFACTS, `web-phone-review-${colorScheme}.png`) });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.tap('#approve');
  const allow = await approved;
  assert.equal(allow.hookSpecificOutput.decision.behavior, 'allow');
  await waitFor(async () => (await page.$$('#inbox li')).length === 0, 'the inbox to empty');
  // Live from the agent too, though the inbox stays empty: once it says it is done, the
  // session's view and its progress say so without a reload.
  // (Recorded as a local hook records it, for the session as the server keeps it: under the
  // token's name.)
  const session = JSON.parse(plandesk('--json', 'runs'))[0].source.session;
  assert.match(session, /s-cache$/);
  execFileSync(BIN, ['--data-dir', data, 'record', 'claude-code'], { input: JSON.stringify({
    session_id: session, transcript_path: '/home/u/.claude/projects/p/s.jsonl', cwd: '/home/u/proj',
    hook_event_name: 'Stop', stop_hook_active: false,
  }) });
  await page.waitForFunction(() => document.querySelector('#run-badge')?.textContent === 'finished'
    && document.querySelector('#progress .badge')?.textContent === 'agent finished');

  const rejected = hookWaits('s-drop', '# Drop the old table\n\nDROP TABLE users;');
  await openFromInbox(page);
  await page.waitForSelector('#plan-title');
  assert.equal(await page.textContent('#plan-title'), 'Drop the old table');
  await page.fill('#feedback', 'Back it up first');
  await page.tap('#reject');
  const deny = await rejected;
  assert.equal(deny.hookSpecificOutput.decision.behavior, 'deny');
  assert.match(deny.hookSpecificOutput.decision.message, /User feedback: Back it up first/);

  // The audit trail names the reviewer, from the web.
  const audit = plandesk('--json', 'audit').trim().split('\n').map((line) => JSON.parse(line));
  const decisions = audit.filter((e) => e.kind === 'decided');
  assert.ok(decisions.length >= 2, JSON.stringify(audit));
  assert.deepEqual(decisions.slice(-2).map((e) => [e.actor, e.process]), [['phone', 'web'], ['phone', 'web']]);

  // The agent revises: the phone compares the two revisions, then finds both in the history.
  const revised = hookWaits('s-drop', '# Drop the old table\n\n1. Back it up.\n2. DROP TABLE users;');
  await openFromInbox(page);
  await page.waitForSelector('#compare');
  await page.tap('#compare');
  await page.waitForSelector('#left-rev');
  // One column on a phone: each line once, as wide as the screen allows, what changed marked.
  const shown = await page.$$eval('.diff tr:not(.fold) td:not(.no)', (tds) => tds.filter((td) => td.offsetParent)
    .map((td) => [getComputedStyle(td, '::before').content, td.innerText.trim(), Math.round(td.getBoundingClientRect().width)]));
  assert.deepEqual(shown.map(([mark, text]) => [mark, text]), [['none', '# Drop the old table'], ['none', ''],
    ['"+ "', '1. Back it up.'], ['"− "', 'DROP TABLE users;'], ['"+ "', '2. DROP TABLE users;']]);
  assert.ok(shown.every(([, , width]) => width > 300), JSON.stringify(shown));
  assert.deepEqual(await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]), [390, 390], 'no sideways scroll');
  assert.match(await page.textContent('#view'), /Revision 1 was rejected/);
  assert.match(await page.textContent('#view'), /Back it up/);
  assert.match(await page.textContent('#approve'), /^Approve revision 2/, 'decided from the comparison too');
  await page.tap('#inbox-toggle');
  await page.tap('#history-btn');
  await page.waitForFunction(() => (document.querySelector('#history-rows')?.innerText.match(/Drop the old table/g) || []).length === 2);
  // The phone's Back goes back through the views opened: the comparison, then the plan.
  await page.goBack();
  await page.waitForSelector('#left-rev');
  await page.goBack();
  await page.waitForSelector('#plan-title');
  assert.equal(await page.textContent('#plan-title'), 'Drop the old table');
  await page.goForward();
  await page.waitForSelector('#left-rev');
  plandesk('approve', (await pending())[0].runId);
  assert.equal((await revised).hookSpecificOutput.decision.behavior, 'allow');
  await context.close();
});

test('a sign-in link works once', async () => {
  const link = pair('tablet');
  const first = await browser.newContext(PHONE);
  const page = await first.newPage();
  await page.goto(link);
  assert.deepEqual(await axeFindings(page), [], 'the sign-in page');
  await page.screenshot({ path: join(ARTIFACTS, 'web-phone-sign-in.png') });
  await page.getByRole('button', { name: 'Sign in as tablet' }).click();
  await page.waitForSelector('body[data-ready="true"]');
  // Back, past the review's first view, is the used link's page: it leads back to the review.
  await page.goBack();
  assert.equal(await page.textContent('h1'), 'This sign-in link cannot be used');
  await page.getByRole('link', { name: 'Open the review' }).click();
  await page.waitForSelector('body[data-ready="true"]');
  await first.close();
  const second = await browser.newContext(PHONE);
  const again = await second.newPage();
  const response = await again.goto(link);
  assert.equal(response.status(), 410);
  assert.equal(await again.textContent('h1'), 'This sign-in link cannot be used');
  assert.equal(await again.$('form'), null, 'nothing to sign in with');
  // Posting it all the same (from its own page) is refused too.
  const posted = await again.evaluate(async (path) => (await fetch(path, { method: 'POST' })).status, new URL(link).pathname);
  assert.equal(posted, 410);
  await second.close();
  const sessions = JSON.parse(plandesk('--json', 'session', 'list'));
  assert.deepEqual(sessions.filter((s) => s.name === 'tablet').map((s) => [s.kind, s.revokedAt === null]),
    [['pairing', false], ['session', true]]);
});

test('a page of another site cannot decide, and a signed-out session shows nothing', async () => {
  const answer = hookWaits('s-csrf', '# Give everyone admin\n\nGrant admin to all.');
  const [item] = await waitFor(async () => { const p = await pending(); return p.length === 1 && p; }, 'the plan');
  const { context, page } = await signedInPhone('victim');
  // Another origin on the same site (so the SameSite cookie goes with its requests: only the
  // server's own checks stand in the way), open in the same browser as the signed-in review.
  const evil = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<form id="f" method="post" action="${base}/api/decide" enctype="text/plain">
      <input name='{"request":{"runId":"${item.runId}","toolCallId":"${item.toolCallId}","approve":true,"x":"' value='"}}'></form>`);
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const other = await context.newPage();
  await other.goto(`http://127.0.0.1:${evil.address().port}/`);
  const tried = await other.evaluate(async ({ base, item }) => {
    const body = JSON.stringify({ request: { runId: item.runId, toolCallId: item.toolCallId, approve: true } });
    const outcomes = [];
    for (const init of [
      { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body },
      { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body },
    ]) {
      try { outcomes.push((await fetch(`${base}/api/decide`, init)).status); } catch { outcomes.push('failed'); }
    }
    return outcomes;
  }, { base, item });
  // JSON needs a preflight, which is not answered; a no-cors POST is sent, and refused (not
  // JSON, another Origin), its answer unreadable (CORP).
  assert.deepEqual(tried, ['failed', 'failed']);
  await Promise.all([other.waitForNavigation(), other.evaluate(() => document.getElementById('f').submit())]);
  const refusal = JSON.parse(await other.textContent('body'));
  assert.equal(refusal.code, 'forbidden', 'the session cookie came, and the Origin check refused');
  assert.equal((await pending()).length, 1, 'still waiting: nothing was decided');
  evil.close();

  // Signed out from another place: the open page goes back to signing in, by itself, and
  // leaves nothing typed in it for whoever signs in next in that tab.
  await openFromInbox(page);
  await page.fill('#feedback', 'Only the on-call team');
  plandesk('session', 'revoke', 'victim');
  await page.waitForURL(/\?signin=1$/);
  assert.equal(await page.textContent('h1'), 'Sign in to review plans');
  assert.deepEqual(await page.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith('plandesk-draft:'))), []);
  await page.goto(pair('next'));
  await page.getByRole('button', { name: 'Sign in as next' }).click();
  await page.waitForSelector('body[data-ready="true"]');
  await openFromInbox(page);
  await page.waitForSelector('#feedback');
  assert.equal(await page.inputValue('#feedback'), '', 'the last person\'s words are gone');
  await context.close();
  plandesk('reject', item.runId, '--feedback', 'no');
  assert.equal((await answer).hookSpecificOutput.decision.behavior, 'deny');
});

test('a webhook is told of a pending plan, without its text, and its link opens the plan on the phone', async () => {
  const received = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => { received.push({ path: req.url, type: req.headers['content-type'], body: JSON.parse(body) }); res.end('ok'); });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  plandesk('webhook', 'add', `http://127.0.0.1:${receiver.address().port}/hook`);
  const { context, page } = await signedInPhone('walker');
  const answer = hookWaits('s-hook', '# Ship the release\n\nTag v2 and publish the private notes.');
  const [post] = await waitFor(async () => received.length && received, 'the webhook');
  assert.equal(post.path, '/hook');
  assert.equal(post.type, 'application/json');
  assert.equal(post.body.event, 'plan-pending');
  assert.equal(post.body.title, 'Ship the release');
  assert.equal(post.body.agent, 'Claude Code');
  assert.ok(post.body.ageSeconds >= 0 && post.body.ageSeconds < 60, JSON.stringify(post.body));
  assert.doesNotMatch(JSON.stringify(post.body), /private notes/, 'no plan text unless asked for');
  assert.match(post.body.url, new RegExp(`^${base}/\\?run=`));
  // The link, followed from another site (a chat, a notification app): the plan on screen.
  const elsewhere = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<a id="go" href="${post.body.url}">Review</a>`);
  });
  await new Promise((r) => elsewhere.listen(0, '127.0.0.2', r));
  await page.goto(`http://127.0.0.2:${elsewhere.address().port}/`);
  await page.click('#go');
  await page.waitForSelector('#plan-title');
  assert.equal(await page.textContent('#plan-title'), 'Ship the release');
  await page.tap('#approve');
  assert.equal((await answer).hookSpecificOutput.decision.behavior, 'allow');
  const [listed] = JSON.parse(plandesk('--json', 'webhook', 'list'));
  assert.equal(listed.last.ok, true, JSON.stringify(listed));
  plandesk('webhook', 'remove', listed.url);
  elsewhere.close();
  receiver.close();
  await context.close();
});
