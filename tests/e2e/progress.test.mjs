// End-to-end, in the real window: after a Claude Code plan is approved, its run's view shows the
// approved plan's steps with their states, live as the agent's hooks record its work; what it
// changed outside the plan is listed apart; a step is marked by hand; when the agent says it
// finished, a notification says how far it got.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ARTIFACTS, APP, CLI, cli, fixture, startDriver, startNotificationDaemon, watchNotifications } from './harness.mjs';
import { Session } from './webdriver.mjs';

const PORT = 4484;
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
const SESSION = 'cc-progress';
const PLAN = '# Add rate limiting\n\n1. Add a token bucket in `src/limit.rs`.\n2. Return 429 from src/main.rs.\n'
  + '3. Run `cargo test`.\n4. Tell the API users.\n';

/** Claude Code's hook payload for `event` (and `tool`, `input`). */
function payload(fx, event, tool, input) {
  return JSON.stringify({
    session_id: SESSION, transcript_path: '/nonexistent.jsonl', cwd: fx.workspace,
    permission_mode: event === 'PermissionRequest' ? 'plan' : 'default', hook_event_name: event,
    tool_name: tool, tool_input: input, tool_response: {}, stop_hook_active: false,
  });
}

/** `plandesk record claude-code`, as Claude Code runs it after a tool. */
function record(fx, event, tool, input = {}) {
  execFileSync(CLI, ['--data-dir', fx.data, 'record', 'claude-code'], { input: payload(fx, event, tool, input) });
}

/** A file written, as Claude Code reports it (its response carries the new content). */
function write(fx, path) {
  execFileSync(CLI, ['--data-dir', fx.data, 'record', 'claude-code'], { input: JSON.stringify({
    ...JSON.parse(payload(fx, 'PostToolUse', 'Write', { file_path: join(fx.workspace, path), content: 'x' })),
    tool_response: { type: 'create', content: 'x\n' },
  }) });
}

test('after approval the run shows its steps live, the changes outside the plan, a mark by hand and a Done notification', async () => {
  const fx = fixture();
  const hook = spawn(CLI, ['--data-dir', fx.data, 'hook', 'claude-code'], { stdio: ['pipe', 'ignore', 'ignore'] });
  hook.stdin.end(payload(fx, 'PermissionRequest', 'ExitPlanMode', { plan: PLAN }));
  let run;
  for (let i = 0; i < 100 && !run; i += 1) {
    run = JSON.parse(cli(fx, ['--json', 'pending']))[0]?.runId;
    if (!run) await sleep(100);
  }
  assert.ok(run, 'the plan is pending');
  cli(fx, ['approve', run]);
  write(fx, 'src/limit.rs');
  const app = await Session.start(PORT, APP, ['--data-dir', fx.data, '--workspace', fx.workspace, '--open', run]);
  const monitor = watchNotifications();
  try {
    await app.waitFor("document.body.dataset.ready === 'true'", { what: 'the app to be ready' });
    await app.find('#progress');
    const states = () => app.exec("return [...document.querySelectorAll('#progress-steps li')].map((li) => li.dataset.state)");
    assert.deepEqual(await states(), ['done', 'not-done-yet', 'not-done-yet', 'not-done-yet']);
    assert.equal(await app.text('#progress-summary'), '1 of 4 steps done, no file outside the plan');

    // Live: the agent goes on (its hooks record), the view follows without a reload.
    write(fx, 'src/main.rs');
    write(fx, 'src/metrics.rs');
    record(fx, 'PostToolUse', 'Bash', { command: 'cargo test --all' });
    await app.waitFor("document.querySelector('#progress-summary').textContent === '3 of 4 steps done, 1 file outside the plan'",
      { what: 'the recorded work on screen' });
    assert.match(await app.text('#unplanned'), /src\/metrics\.rs/);
    // Its diff, as the agent reported it, opens below it.
    await app.click('#unplanned .file-link');
    await app.waitFor("!document.querySelector('#unplanned .file-diff').hidden", { what: 'the diff' });
    assert.match(await app.text('#unplanned .file-diff'), /\+x/);
    await app.screenshot(join(ARTIFACTS, 'progress-working.png'));

    // The last step has nothing to show for it: marked by hand, in the audit trail.
    await app.exec("[...document.querySelectorAll('#progress-steps li')][3].querySelector('button').click(); return true;");
    await app.waitFor("document.querySelectorAll('#progress-steps li')[3].dataset.state === 'done'", { what: 'the mark' });
    assert.match(await app.text('#progress-steps li:nth-child(4) .step-label'), /marked by hand/);
    assert.ok(cli(fx, ['--json', 'audit', run]).includes('"kind":"step-marked"'));

    // The agent says it is done: the badge turns, and a notification says how far it got.
    record(fx, 'Stop', undefined);
    await app.waitFor("document.querySelector('#progress .badge').textContent === 'agent finished'", { what: 'finished' });
    // The session, in the list and at the head of its view, stands as its agent last said.
    await app.waitFor("document.querySelector('#run-badge').textContent === 'finished' && document.querySelector('#runs .badge').textContent === 'finished'", { what: 'the session finished' });
    await app.screenshot(join(ARTIFACTS, 'progress.png'));
    // The window is focused on this run: no notification for what the person is looking at.
    // Away from it, the next finish that says something new is told.
    await app.exec("document.querySelector('#history-btn').click(); return true;");
    await app.find('#history-rows');
    await sleep(300); // the window tells the app it left the run (fire and forget)
    assert.ok(!monitor.text().includes('Done:'), 'nothing told while the person looked at it');
    write(fx, 'src/extra.rs');
    record(fx, 'Stop', undefined);
    const told = 'Done: 4 of 4 steps, 2 files outside the plan';
    for (let i = 0; i < 100 && !monitor.text().includes(told); i += 1) await sleep(100);
    assert.ok(monitor.text().includes(told), monitor.text().slice(-2000));
    // A turn that ends with nothing new tells nothing more.
    record(fx, 'Stop', undefined);
    await sleep(1000);
    assert.equal(monitor.text().split(told).length - 1, 1, 'told once');

    // The history keeps it with the revision.
    await app.find('#history-rows .row-item');
    await app.click('#history-rows .row-item');
    await app.find('#revision-progress #progress');
    assert.equal(await app.text('#revision-progress #progress-summary'), '4 of 4 steps done, 2 files outside the plan');
    await app.screenshot(join(ARTIFACTS, 'progress-history.png'));
  } finally {
    monitor.stop();
    await app.close();
    hook.kill();
  }
});
