// End-to-end: an outside agent's plan (Claude Code's hook, run for real) in the real app window,
// with its source and a notification naming the agent; and, with no app running, the hook's own
// notification, whose click starts the app on that plan.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import {
  ARTIFACTS, CLI, cli, fixture, openApp, startDriver, startNotificationDaemon, watchNotifications,
} from './harness.mjs';

const PORT = 4454;
let driver;
let daemon;

before(async () => {
  daemon = startNotificationDaemon();
  driver = await startDriver(PORT);
});

after(() => {
  driver?.stop();
  daemon?.stop();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs `plandesk hook claude-code` with a plan, as Claude Code would; resolves to its stdout. */
function claudeHook(fx, plan, session = 'cc-e2e') {
  const child = spawn(CLI, ['--data-dir', fx.data, 'hook', 'claude-code'], {
    cwd: fx.workspace,
    env: { ...process.env, PLANDESK_HOOK_DEADLINE: '120s' },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  child.stdin.end(JSON.stringify({
    session_id: session, transcript_path: '/nonexistent.jsonl', cwd: fx.workspace,
    permission_mode: 'plan', hook_event_name: 'PermissionRequest', tool_name: 'ExitPlanMode',
    tool_input: { plan, planFilePath: join(fx.root, 'brave-otter.md') },
  }));
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const done = new Promise((resolve) => child.on('exit', () => resolve(out)));
  return { child, done };
}

async function until(what, check, ms = 15000) {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

test("a Claude Code plan shows in the app with its source, a notification naming the agent, and the app's approval answers the hook", async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  const monitor = watchNotifications();
  const hook = claudeHook(fx, '# Add rate limiting\n\n1. Token bucket per API key\n2. 429 with Retry-After');
  try {
    await app.waitFor("document.querySelector('#inbox-count').textContent === '1'", { what: 'the agent plan in the inbox' });
    assert.match(await app.text('#inbox li .meta'), /Claude Code/, 'the inbox names the agent');
    await until('the notification', () => monitor.text().includes('from Claude Code requires approval'));
    assert.ok(monitor.text().includes('Add rate limiting'), 'it names the plan too');
    await app.click('#inbox li');
    await app.find('#plan-from');
    assert.equal(await app.text('#plan-from'), 'From Claude Code');
    assert.equal(await app.text('#plan-title'), 'Add rate limiting');
    // The session is the agent's, named as people know it (not the id it is kept under).
    assert.match(await app.text('.page-head .meta-line'), /Claude Code/);
    assert.match(await app.text('#runs li .meta'), /Claude Code/);
    assert.doesNotMatch(await app.text('#runs li .meta'), /claude-code/);
    await app.screenshot(join(ARTIFACTS, 'agent-plan.png'));
    await app.click('#approve');
    const answer = JSON.parse(await hook.done);
    assert.equal(answer.hookSpecificOutput.decision.behavior, 'allow');
    assert.match(answer.hookSpecificOutput.decision.updatedInput.plan, /Token bucket/);
    await app.waitFor("document.querySelector('#inbox-count').textContent === '0'", { what: 'the inbox to empty' });
  } finally {
    hook.child.kill();
    monitor.stop();
    await app.close();
  }
});

test('with no app running, the hook notifies by itself and its click starts the app on the plan', async () => {
  const fx = fixture();
  // Only this test's notification is on screen, so `dunstctl action 0` clicks it.
  execFileSync('dunstctl', ['close-all']);
  const monitor = watchNotifications();
  const hook = claudeHook(fx, '# Rotate the logs\n\nDaily, keep 7', 'cc-alone');
  try {
    await until('the hook\'s own notification', () => monitor.text().includes('Plan \\"Rotate the logs\\" from Claude Code requires approval')
      || monitor.text().includes('Plan "Rotate the logs" from Claude Code requires approval'));
    const [item] = JSON.parse(cli(fx, ['--json', 'pending']));
    execFileSync('dunstctl', ['action', '0']);
    await until('the app started on the plan', () => {
      try {
        return execFileSync('pgrep', ['-f', `plandesk-app --data-dir ${fx.data} --open ${item.runId}`]).length > 0;
      } catch { return false; }
    });
    cli(fx, ['reject', item.runId, '--feedback', 'Keep 30 days']);
    const answer = JSON.parse(await hook.done);
    assert.equal(answer.hookSpecificOutput.decision.behavior, 'deny');
    assert.match(answer.hookSpecificOutput.decision.message, /Keep 30 days/);
  } finally {
    hook.child.kill();
    try { execFileSync('pkill', ['-KILL', '-f', `plandesk-app --data-dir ${fx.data}`]); } catch { /* not running */ }
    monitor.stop();
  }
});
