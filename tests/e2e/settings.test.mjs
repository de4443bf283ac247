// End-to-end: Settings → Agents sets an agent up with one click, exactly as `plandesk install`
// does (the same entry in the agent's own settings file, other entries kept), and takes it out.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeWindow, waitForWindow } from '../package/desktop.mjs';
import { launchChromium } from '../ui/chromium.mjs';
import { ARTIFACTS, CLI, cli, fixture, openApp, startDriver } from './harness.mjs';

const PORT = 4474;
const home = mkdtempSync(join(tmpdir(), 'plandesk-e2e-home-'));
const claudeDir = join(home, '.claude');
let driver;

before(async () => {
  mkdirSync(claudeDir, { recursive: true });
  // A settings file Plandesk cannot safely change: its agent says why, the others still list.
  mkdirSync(join(home, '.gemini'), { recursive: true });
  writeFileSync(join(home, '.gemini', 'settings.json'), '{ "theme": "dark", ');
  // Someone's own settings, which must survive.
  writeFileSync(join(claudeDir, 'settings.json'), JSON.stringify({ theme: 'dark', permissions: { allow: ['Bash(ls)'] } }, null, 2));
  driver = await startDriver(PORT, { HOME: home, CLAUDE_CONFIG_DIR: claudeDir, CODEX_HOME: join(home, '.codex') });
});
after(() => driver?.stop());

const row = (agent) => `#settings-agents li[data-agent="${agent}"]`;

test('Settings → Agents: one click sets Claude Code up with the hook, another takes it out', async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    await app.click('#settings-btn');
    await app.find(row('claude-code'));
    assert.match(await app.text(`${row('claude-code')} .state`), /Not connected/);
    assert.match(await app.text(`${row('gemini')} .state`), /Cannot connect/);
    assert.match(await app.text(`${row('gemini')} .problem`), /not valid JSON/);
    assert.equal(await app.exec(`return document.querySelector('${row('gemini')} button').disabled`), true,
      'nothing to click for a file Plandesk would not change');
    assert.match(await app.text(`${row('codex')} .state`), /Not connected/, 'the other agents are listed all the same');
    await app.exec(`document.querySelector('${row('gemini')} .problem').scrollIntoView(); return true;`);
    await app.screenshot(join(ARTIFACTS, 'settings-agent-problem.png'));
    await app.click(`${row('claude-code')} button`);
    await app.waitFor(`document.querySelector('${row('claude-code')} .state')?.textContent === 'Connected'`, { what: 'the hook to be set up' });
    const settings = JSON.parse(readFileSync(join(claudeDir, 'settings.json'), 'utf8'));
    assert.equal(settings.theme, 'dark', 'other settings are kept');
    assert.deepEqual(settings.permissions, { allow: ['Bash(ls)'] });
    const hooks = JSON.stringify(settings.hooks.PermissionRequest);
    assert.ok(hooks.includes('ExitPlanMode'), hooks);
    assert.ok(hooks.includes(`${CLI} --data-dir`) && hooks.includes('hook claude-code'), `the CLI beside the app, on this store: ${hooks}`);
    await app.screenshot(join(ARTIFACTS, 'settings-agents.png'));
    await app.click(`${row('claude-code')} button`);
    await app.waitFor(`document.querySelector('${row('claude-code')} .state')?.textContent === 'Not connected'`, { what: 'the hook to be removed' });
    const after = JSON.parse(readFileSync(join(claudeDir, 'settings.json'), 'utf8'));
    assert.ok(!JSON.stringify(after).includes('hook claude-code'), 'the hook is gone');
    assert.equal(after.theme, 'dark');
  } finally {
    await app.close();
  }
});

test('Settings → Review from your phone: a sign-in link as a QR code; webhooks added, listed and removed', async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    await app.click('#settings-btn');
    await app.find('#settings-pair');
    assert.match(await app.text('#settings-webhooks'), /No webhooks/);
    const show = (css) => app.exec(`document.querySelector('${css}').scrollIntoView({ block: 'center' }); return true;`);
    await show('#settings-pair');
    await app.click('#settings-pair');
    await app.waitFor("!document.querySelector('#settings-qr').hidden && document.querySelector('#settings-qr').naturalWidth > 0", { what: 'the QR code' });
    const link = await app.text('#settings-pair-link');
    assert.match(link, /^http:\/\/127\.0\.0\.1:8765\/pair\/pdp_[0-9a-f]{64} — signs in as /, link);
    assert.match(await app.text('#settings-pair-here'), /reaches this computer only: a phone cannot open it/,
      'a link to this computer\'s own address says a phone cannot open it');
    const sessions = JSON.parse(cli(fx, ['--json', 'session', 'list']));
    assert.deepEqual(sessions.map((s) => s.kind), ['pairing'], 'the link is a one-time sign-in link in the store');
    await show('#webhook-url');
    await app.type('#webhook-url', 'https://ntfy.sh/plandesk-e2e');
    await app.exec("document.querySelector('#webhook-format').value = 'ntfy'; return true;");
    await app.click('#webhook-add');
    await app.waitFor("document.querySelector('#settings-webhooks').innerText.includes('ntfy.sh/plandesk-e2e')", { what: 'the webhook listed' });
    assert.match(await app.text('#settings-webhooks'), /ntfy[\s\S]*Not sent yet/);
    assert.deepEqual(JSON.parse(cli(fx, ['--json', 'webhook', 'list'])).map((w) => [w.url, w.format, w.withPlan]),
      [['https://ntfy.sh/plandesk-e2e', 'ntfy', false]], 'the CLI lists what Settings added');
    await show('#settings-pair');
    await app.screenshot(join(ARTIFACTS, 'settings-phone.png'));
    await show('#settings-webhooks li button');
    await app.click('#settings-webhooks li button');
    await app.waitFor("document.querySelector('#settings-webhooks').innerText.includes('No webhooks')", { what: 'the webhook removed' });
    assert.deepEqual(JSON.parse(cli(fx, ['--json', 'webhook', 'list'])), []);
  } finally {
    await app.close();
  }
});

/** A port nothing listens on now. */
function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '0.0.0.0', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The status of a GET of `url`, or null when nothing answers there. */
const statusOf = (url) => fetch(url, { signal: AbortSignal.timeout(5000) }).then((r) => r.status, () => null);

/** Waits (up to 15 s) until a GET of `url` is answered with `status` (null: nothing answers). */
async function untilStatus(url, status, what) {
  for (let i = 0; i < 150; i += 1) {
    if (await statusOf(url) === status) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what}: ${url} still answers ${await statusOf(url)}`);
}

test('Settings → Review from your phone: the app serves its network, a phone signs in at its address and reviews; quitting answers a waiting hook no; Stop ends it', async () => {
  const fx = fixture();
  cli(fx, ['run', '--model', 'demo', '--workspace', fx.workspace, 'Add a health check endpoint']);
  const [pending] = JSON.parse(cli(fx, ['--json', 'pending']));
  const port = await freePort();
  // This computer's addresses on its networks (not its own loopback).
  const addresses = Object.values(networkInterfaces()).flat().filter((a) => a.family === 'IPv4' && !a.internal).map((a) => a.address);
  assert.ok(addresses.length, 'this test needs this computer on a network');
  let app = await openApp(PORT, fx);
  let phone;
  try {
    await app.click('#settings-btn');
    await app.find('#settings-phone-serve');
    const show = (css) => app.exec(`document.querySelector('${css}').scrollIntoView({ block: 'center' }); return true;`);
    await show('#settings-phone-serve');
    assert.equal(await app.text('#settings-phone-serve'), 'Let phones on this network reach Plandesk');
    await app.exec(`document.querySelector('#settings-phone-port').value = '${port}'; return true;`);
    await app.click('#settings-phone-serve');
    await app.waitFor("document.querySelector('#settings-phone-serve').dataset.on === 'true' || !document.querySelector('#settings-phone-status').hidden", { what: 'the answer' });
    const status = await app.text('#settings-phone-status');
    const url = status.match(/^Phones (?:on this Wi-Fi or network \([\d./]+\) )?open Plandesk at (http:\/\/[\d.]+:\d+) once signed in/)?.[1];
    assert.ok(url, status);
    const host = new URL(url).hostname;
    assert.ok(addresses.includes(host), `${url}: one of ${addresses}`);
    assert.equal(new URL(url).port, String(port));
    // A private address is a home or office network's; another may be reached from outside it.
    const privateAddress = /^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)/.test(host);
    assert.match(status, privateAddress ? /use this on your home or office network only/ : /may be reachable from outside your network/, status);
    assert.equal(await app.text('#settings-phone-serve'), 'Stop letting phones in');
    assert.equal(await statusOf(`${url}/?signin=1`), 401, 'the sign-in page, at this computer\'s address');

    // The sign-in link names that address: a phone can open it.
    await show('#settings-pair');
    await app.click('#settings-pair');
    await app.waitFor("!document.querySelector('#settings-qr').hidden && document.querySelector('#settings-qr').naturalWidth > 0", { what: 'the QR code' });
    const [link, name] = (await app.text('#settings-pair-link')).split(' — signs in as ');
    assert.ok(link.startsWith(`${url}/pair/pdp_`), link);
    assert.equal(await app.exec("return document.querySelector('#settings-pair-here').hidden"), true, 'no "this computer only" warning');
    await show('#settings-phone-serve');
    await app.screenshot(join(ARTIFACTS, 'settings-phone-serving.png'));

    // A phone (Chromium, as a phone's browser) signs in there and sees the plan waiting.
    phone = await launchChromium();
    const page = await (await phone.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true })).newPage();
    await page.goto(link);
    await page.getByRole('button', { name: `Sign in as ${name}` }).click();
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForFunction((title) => document.body.innerText.includes(title), pending.revision.title);
    await page.screenshot({ path: join(ARTIFACTS, 'phone-from-the-app.png') });
    await phone.close();
    phone = null;

    // A Claude Code http hook waits on it; the person closes the window, which quits the app:
    // the hook is answered "not approved" before the app is gone.
    const token = cli(fx, ['token', 'create', 'laptop']).trim();
    /** A Claude Code http hook's plan titled `title`, waiting on the app's server: `{ answer }`
     * (wrapped: an async function returning the promise would wait for the answer itself). */
    const waitingHook = async (title) => {
      const answer = fetch(`${url}/hooks/claude`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ session_id: title, transcript_path: '/nowhere.jsonl', cwd: fx.workspace, permission_mode: 'plan',
          hook_event_name: 'PermissionRequest', tool_name: 'ExitPlanMode', tool_input: { plan: `# ${title}\n\nA step.` } }),
      }).then((r) => r.json());
      await app.waitFor(`[...document.querySelectorAll('#inbox li')].some((li) => li.innerText.includes('${title}'))`, { what: `${title} in the inbox` });
      return { answer };
    };
    const appPid = () => execFileSync('pgrep', ['-f', `plandesk-app --data-dir ${fx.data}`], { encoding: 'utf8' }).trim().split('\n')[0];
    const { answer: hook } = await waitingHook('Wait for me');
    const pid = appPid();
    const [shown] = await waitForWindow(pid, 'plandesk-app');
    closeWindow(shown);
    const answer = await hook;
    assert.equal(answer.hookSpecificOutput.decision.behavior, 'deny', JSON.stringify(answer));
    await app.close();
    await untilStatus(`${url}/?signin=1`, null, 'the app quit');
    const waited = JSON.parse(cli(fx, ['--json', 'history'])).find((r) => r.title === 'Wait for me');
    assert.equal(waited.status, 'abandoned');

    // Started again: it serves again, at the same address; stopped by SIGTERM (a logout), it
    // answers what waits the same way.
    app = await openApp(PORT, fx);
    await untilStatus(`${url}/?signin=1`, 401, 'served again at the next launch');
    const { answer: termed } = await waitingHook('Logged out');
    process.kill(Number(appPid()), 'SIGTERM');
    assert.equal((await termed).hookSpecificOutput.decision.behavior, 'deny');
    await app.close();
    await untilStatus(`${url}/?signin=1`, null, 'the app stopped');
    app = await openApp(PORT, fx);
    await untilStatus(`${url}/?signin=1`, 401, 'served again');
    await app.click('#settings-btn');
    await app.waitFor("document.querySelector('#settings-phone-serve').dataset.on === 'true'", { what: 'Settings to say it serves' });

    // Stop: nothing answers there, and the phone's session is of no use until it serves again.
    await show('#settings-phone-serve');
    await app.click('#settings-phone-serve');
    await app.waitFor("document.querySelector('#settings-phone-serve').dataset.on === 'false'", { what: 'serving to stop' });
    assert.equal(await app.exec("return document.querySelector('#settings-phone-status').hidden"), true);
    assert.equal(await statusOf(`${url}/?signin=1`), null, 'nothing answers');
    await show('#settings-pair');
    await app.click('#settings-pair');
    await app.waitFor("document.querySelector('#settings-pair-link').textContent.includes('127.0.0.1:8765')", { what: 'a link to serve\'s own address' });
  } finally {
    await phone?.close();
    await app.close();
  }
});

test('the name set in Settings is who the audit trail says decided', async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    await app.click('#settings-btn');
    await app.type('#set-reviewer', 'Ada Lovelace');
    await app.click('#settings-save');
    await app.waitFor("!document.querySelector('#settings').open", { what: 'the dialog to close' });
  } finally {
    await app.close();
  }
  // The app and the CLI share the store's setting: the CLI's decision is recorded under it.
  const script = join(fx.root, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [
    { toolCalls: [
      { toolName: 'write_file', args: { path: '.plandesk/plans/p.md', content: '# P\n\nx\n' } },
      { toolName: 'submit_plan', args: { path: '.plandesk/plans/p.md' } },
    ] },
    { text: 'ok' },
  ] }));
  const run = JSON.parse(cli(fx, ['--json', 'run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'P']).split('\n')[0]).runId;
  cli(fx, ['approve', run]);
  const decided = cli(fx, ['--json', 'audit', run]).trim().split('\n').map((l) => JSON.parse(l)).find((e) => e.kind === 'decided');
  assert.equal(decided.actor, 'Ada Lovelace');
});
