// The real Qwen Code CLI (pinned in package.json), interactive in tmux, in plan mode, against a
// fake OpenAI Chat Completions API: its plan (exit_plan_mode's `plan`) reaches `plandesk pending`
// through the PermissionRequest hook `plandesk install qwen-code` put in place; a rejection's
// feedback reaches the model, whose revised plan is revision 2; an approval of that exact
// revision leads to Qwen Code's own "Would you like to proceed?" (an allow is never final for
// exit_plan_mode there), and what the model then does is recorded against the plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toolNames, toolResults } from './fake-openai.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, agentEnv, assertScenarioWork, install, nextWork,
  parentOf, pendingFrom, plandesk, plandeskJson, processes, secondPlan, sleep, statuses,
  typeFirstPlan, waitFor, withTmuxAgent,
} from './harness.mjs';

const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping as told.';
const HOOK = /plandesk hook qwen-code/;

/**
 * The fake model. A conversation's first request in plan mode: exit_plan_mode with PLAN_1 (the
 * plan is the tool's argument). exit_plan_mode denied with "User feedback:": exit_plan_mode
 * again with PLAN_2; denied otherwise: stop with a text. Approved ("User approved."): the
 * world's `work` steps one by one (matched by call id), then FINAL. Qwen Code's side
 * conversations (they offer tools, but not exit_plan_mode) get a text. Past 20 turns it stops.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ text: 'Cache plan' }]; // a side request (title, summary)
  if (fake.main().length > 20) return [{ text: 'fake model: too many turns, stopping' }];
  // Tool results count only when they are the last thing said (a typed message starts anew).
  const [result] = body.messages?.at(-1)?.role === 'tool' ? toolResults(body) : [];
  if (!result) {
    if (!toolNames(body).includes('exit_plan_mode')) return [{ text: 'fake model: a side conversation' }];
    return [{ tool: 'exit_plan_mode', args: { plan: PLAN_1 } }];
  }
  if (result.name === 'exit_plan_mode') {
    if (result.text.startsWith('User approved.')) return fake.work.length ? [fake.work[0]] : [{ text: FINAL }];
    if (result.text.includes('User feedback:')) return [{ tool: 'exit_plan_mode', args: { plan: PLAN_2 } }];
    return [{ text: STOPPED }];
  }
  return nextWork(fake, result, FINAL);
}

/**
 * Qwen Code's settings as a person would have them (OpenAI-compatible auth, no folder trust
 * prompt, no updates, telemetry or tips), then the hooks from `plandesk install qwen-code`.
 * `hookTimeout` replaces the plan hook's `timeout` (seconds), as a person editing them would.
 */
function configure(w, { hookTimeout } = {}) {
  mkdirSync(join(w.home, '.qwen'));
  const settingsFile = join(w.home, '.qwen/settings.json');
  writeFileSync(settingsFile, JSON.stringify({
    security: { auth: { selectedType: 'openai' }, folderTrust: { enabled: false } },
    general: { enableAutoUpdate: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    ui: { hideTips: true, enableUserFeedback: false, enableWelcomeBack: false, enableFollowupSuggestions: false },
  }, null, 2));
  const installed = install(w, 'qwen-code');
  assert.equal(installed.status, 0, installed.stderr);
  assert.match(installed.stderr, /Would you like to proceed\?/, 'install tells the person about Qwen Code\'s own question');
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
  assert.equal(settings.security.auth.selectedType, 'openai', 'install keeps the other settings');
  assert.equal(settings.ui.hideTips, true, 'install keeps the other settings');
  const [group] = settings.hooks.PermissionRequest;
  assert.equal(group.matcher, 'exit_plan_mode');
  const [hook] = group.hooks;
  assert.equal(hook.type, 'command');
  assert.ok(hook.command.startsWith(CLI), `the hook runs this build: ${hook.command}`);
  assert.match(hook.command, /plandesk hook qwen-code$/);
  assert.equal(hook.timeout, 90, 'seconds (below 1000); Qwen Code waits at most 60 s anyway');
  const recorded = settings.hooks.PostToolUse[0];
  for (const tool of ['exit_plan_mode', 'write_file', 'edit', 'run_shell_command']) {
    assert.match(tool, new RegExp(recorded.matcher), `PostToolUse records ${tool}`);
  }
  assert.doesNotMatch('read_file', new RegExp(recorded.matcher));
  assert.match('run_shell_command', new RegExp(settings.hooks.PostToolUseFailure[0].matcher));
  for (const event of ['PostToolUse', 'PostToolUseFailure', 'Stop']) {
    assert.match(settings.hooks[event][0].hooks[0].command, /plandesk record qwen-code$/, event);
  }
  if (hookTimeout !== undefined) {
    hook.timeout = hookTimeout;
    writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
  }
}

/** The last lines of the screen: Qwen Code's status line ("plan mode (shift + tab to cycle)"). */
const status = (tmux) => tmux.screen().trimEnd().split('\n').slice(-2).join('\n');
const dialogShown = (tmux) => tmux.screen().includes('Would you like to proceed?');

/** Qwen Code's tools for the scenario's work. */
const TOOLS = {
  write: (file_path, content) => ['write_file', { file_path, content }],
  read: (file_path) => ['read_file', { file_path }],
  edit: (file_path, old_string, new_string) => ['edit', { file_path, old_string, new_string }],
  shell: (command, description) => ['run_shell_command', { command, description }],
};

/**
 * Runs `fn(ctx)` with Qwen Code started in plan mode in tmux in a world of its own (`options`:
 * `work`, what the model does after an approval; `hookTimeout`, see `configure`); afterwards
 * (also on failure) stops tmux, every process of that world, and the fake.
 */
async function withQwen(name, fn, options = {}) {
  const start = async ({ w, fake, tmux, diagnose }) => {
    configure(w, options);
    // Its own TMPDIR inside the world: Qwen Code leaves `qwen-socks-*` folders there.
    const tmp = join(w.root, 'tmp');
    mkdirSync(tmp);
    tmux.start([join(BIN, 'qwen'), '--approval-mode', 'plan'], {
      cwd: w.ws,
      env: agentEnv(w, { TMPDIR: tmp, OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', OPENAI_MODEL: fake.model }),
    });
    await waitFor('Qwen Code to start in plan mode', () => /Type your message/.test(tmux.screen()) && /plan mode/.test(status(tmux)),
      { seconds: 40, diagnose });
  };
  return withTmuxAgent(name, { brain, tools: TOOLS, work: options.work, start }, fn);
}

/** Types the request and waits for its plan in the inbox. */
const firstPlan = (ctx) => typeFirstPlan(ctx, 'qwen-code', PROMPT);

/** The first request whose last message is exit_plan_mode's result, matching `pattern`. */
function exitPlanResult(fake, pattern) {
  return fake.main().find((r) => {
    if (r.body.messages?.at(-1)?.role !== 'tool') return false;
    const [res] = toolResults(r.body);
    return res?.name === 'exit_plan_mode' && pattern.test(res.text);
  });
}

test('Qwen Code: plan → pending → reject with feedback → revision 2 → approve → its own "proceed?" → it works, recorded', { timeout: 120_000 }, (t) => withQwen('qwen-review', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  // 1. The plan lands in Plandesk's inbox, from Qwen Code, as the model passed it.
  const first = await firstPlan(ctx);
  const run = first.runId;
  assert.equal(first.kind, 'plan');
  assert.equal(first.toolName, 'exit_plan_mode');
  assert.equal(first.workspace, w.ws);
  assert.ok(first.source.session, 'the Qwen Code session is named');
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.match(first.revision.body, /in-memory cache/);
  assert.equal(dialogShown(tmux), false, 'Qwen Code\'s own dialog is not shown while the hook waits');
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed (from Qwen Code\'s transcript)');

  // 2. Reject with feedback: the deny's message is exit_plan_mode's result, verbatim; Qwen Code
  // stays in plan mode and the model revises in the same turn.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => exitPlanResult(fake, /User feedback:/), { seconds: 30, diagnose });
  const feedbackText = toolResults(denied.body)[0].text;
  assert.match(feedbackText, /^Plan was not approved\. The user wants revisions\./);
  assert.ok(feedbackText.includes(`User feedback: ${FEEDBACK}`), feedbackText);

  // 3. The revised plan is revision 2 of the same thread, compared with the feedback between.
  const second = await secondPlan({ w, diagnose }, 'qwen-code');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  assert.equal(second.source.session, first.source.session);
  assert.match(status(tmux), /plan mode/, 'still in plan mode after the rejection');
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);
  assert.equal(history[0].decision.feedback, FEEDBACK);
  const diff = plandesk(w, ['diff', String(history[0].id), String(history[1].id)]);
  assert.ok(diff.includes(FEEDBACK), diff);
  assert.match(diff, /\{\+ ?\(bounded\)\+\}/, diff);

  // 4. Approve exactly the revision seen. Qwen Code still asks in its own dialog: the hook's
  // allow alone approves nothing there.
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12)]);
  await waitFor('Qwen Code\'s own "Would you like to proceed?"', () => dialogShown(tmux), { seconds: 30, diagnose });
  await sleep(800);
  assert.equal(exitPlanResult(fake, /^User approved/), undefined, 'the hook\'s allow alone does not approve');
  assert.deepEqual(statuses(w, run), ['rejected', 'approved']);
  tmux.key('2'); // "Yes, and auto-accept edits" (1 / Enter: back to the mode before, which asks for each edit)
  const approved = await waitFor('the approval in the model\'s next request', () => exitPlanResult(fake, /^User approved/), { seconds: 30, diagnose });
  assert.match(toolResults(approved.body)[0].text, /^User approved\. You can now start coding\./);

  // 5. The model works (a file outside the plan, a planned edit, two commands) and finishes.
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 40, diagnose });
  assert.doesNotMatch(status(tmux), /plan mode/, `out of plan mode: ${status(tmux)}`);
  // The failed command is Qwen Code's PostToolUseFailure, its exit code read from the error.
  await assertScenarioWork(w, run, {
    finishedBy: 'Stop', diagnose, commands: [['echo cached', 0], ['ls src/eviction.test.js', 2]],
  });
  assert.deepEqual(statuses(w, run), ['rejected', 'approved'], 'its PostToolUse and Stop change no decision');
  assert.deepEqual(pendingFrom(w, 'qwen-code'), []);
}, { work: true }));

test('Qwen Code: reject without feedback → the model is told to stop and wait, still in plan mode', { timeout: 60_000 }, () => withQwen('qwen-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  plandesk(w, ['reject', item.runId]);
  // Qwen Code ignores `interrupt`: the model reads the deny's message at once, and stops.
  const denied = await waitFor('the rejection in the model\'s next request', () => exitPlanResult(fake, /not approved/), { seconds: 30, diagnose });
  assert.match(toolResults(denied.body)[0].text, /^Plan was not approved\..*Stop now and wait for the user/s);
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.match(status(tmux), /plan mode/, 'still in plan mode');
  assert.equal(dialogShown(tmux), false, 'Qwen Code\'s own dialog never opened');
  assert.equal(exitPlanResult(fake, /^User approved/), undefined, 'never approved');
  assert.deepEqual(statuses(w, item.runId), ['rejected']);
  assert.deepEqual(pendingFrom(w, 'qwen-code'), []);
}));

// Qwen Code opens its own dialog when a PermissionRequest hook runs past its `timeout` (and past
// 60 s whatever that says): the hook reads the timeout from the settings and denies before it.
// Qwen Code reads a numeric string ("5") as that number too.
const shortTimeouts = {
  'its hook timeout is short': [5],
  'its hook timeout is short, written as a string ("5")': ['5'],
};
for (const [how, [hookTimeout, todo]] of Object.entries(shortTimeouts)) {
  test(`Qwen Code: ${how} and nobody decides → denied before Qwen Code gives up, expired, never approved`, { timeout: 60_000, todo }, () => withQwen('qwen-timeout', async (ctx) => {
    const { w, fake, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const hook = processes(w.root, HOOK)[0];
    await waitFor('the hook\'s answer or Qwen Code\'s own dialog', () => exitPlanResult(fake, /not approved/) || dialogShown(tmux),
      { seconds: 15, diagnose });
    assert.equal(dialogShown(tmux), false, `Qwen Code's own dialog took the decision over (the plan is ${statuses(w, item.runId)})`);
    const denied = exitPlanResult(fake, /not approved/);
    assert.match(toolResults(denied.body)[0].text, /^No decision was made on this plan in time/);
    const hookCall = fake.main().find((r) => r.answer?.some((p) => p.tool === 'exit_plan_mode'));
    const waited = (denied.at - hookCall.at) / 1000;
    assert.ok(waited < 5, `denied within the 5 s Qwen Code gives the hook (took ${waited.toFixed(1)} s)`);
    await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 20, diagnose });
    // Past the hook's 5 s: Qwen Code's own dialog never took the decision over.
    await sleep(Math.max(0, 6000 - (Date.now() - hookCall.at)));
    assert.equal(dialogShown(tmux), false, 'Qwen Code\'s own dialog never opened');
    assert.equal(exitPlanResult(fake, /^User approved/), undefined, 'never approved');
    assert.match(status(tmux), /plan mode/, 'still in plan mode');
    assert.deepEqual(statuses(w, item.runId), ['expired']);
    assert.ok(hook === undefined || parentOf(hook) === undefined, 'the hook exited');
    assert.deepEqual(processes(w.root, HOOK), []);
  }, { hookTimeout }));
}

// An agent that gives up on its plan must not leave it waiting in the inbox. While its hook
// runs, Qwen Code SIGKILLs the hook's process group when it exits, so the hook can say nothing:
// its waiter is then gone, and the inbox (`plandesk pending`, the `cli` process here) closes the
// plan as abandoned at once. Esc in its terminal sends the hook SIGTERM (SIGKILL 2 s later),
// and a killed session process leaves the hook running with a new parent: the hook closes the
// plan itself then.
const quits = {
  'its terminal is closed (SIGHUP)': ['cli', ({ tmux }) => tmux.kill()],
  'it is killed (SIGKILL to the process in its terminal)': ['cli', ({ tmux }) => process.kill(tmux.pid(), 'SIGKILL')],
  'its session process (the hook\'s parent) is killed (SIGKILL)': ['hook:qwen-code', (_, hook) => process.kill(parentOf(hook), 'SIGKILL')],
  'the person cancels with Esc in its terminal': ['hook:qwen-code', ({ tmux }) => tmux.key('Escape'), /Request cancelled/],
};
for (const [how, [closer, quit, shown]] of Object.entries(quits)) {
  test(`Qwen Code: ${how} while its plan waits → the plan is marked abandoned`, { timeout: 60_000 }, (t) => withQwen('qwen-quit', async (ctx) => {
    const { w, fake, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const [hook] = processes(w.root, HOOK);
    assert.ok(hook, 'the hook waits');
    const quitAt = Date.now();
    quit(ctx, hook);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'qwen-code').length === 0, { seconds: 15, diagnose });
    t.diagnostic(`abandoned ${((Date.now() - quitAt) / 1000).toFixed(1)} s after the quit`);
    assert.deepEqual(statuses(w, item.runId), ['abandoned']);
    const audit = plandesk(w, ['--json', 'audit', item.runId]).trim().split('\n').map((l) => JSON.parse(l));
    const decided = audit.find((e) => e.kind === 'decided');
    assert.equal(decided.process, closer, `closed by ${closer}: ${JSON.stringify(decided)}`);
    await waitFor('the hook to exit', () => processes(w.root, HOOK).length === 0, { seconds: 5, diagnose });
    assert.equal(exitPlanResult(fake, /^User approved/), undefined, 'never approved');
    if (shown) {
      await waitFor(`${shown} on the screen`, () => shown.test(tmux.screen()), { seconds: 5, diagnose });
      assert.equal(dialogShown(tmux), false, 'Qwen Code\'s own dialog did not open');
      assert.match(status(tmux), /plan mode/, 'still in plan mode');
    }
  }));
}
