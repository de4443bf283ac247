// The real GitHub Copilot CLI (pinned in package.json), interactive in tmux, in plan mode, against
// a fake OpenAI Chat Completions API: its plan (the session's plan.md) reaches `plandesk pending`
// through the preToolUse hook `plandesk install copilot` put in its hooks folder; a rejection's
// feedback reaches the model, whose revised plan is revision 2; an approval of that exact
// revision leads to Copilot's own "Plan Ready for Review" menu (an allow never skips it), and
// what the model then does is recorded against the plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { allText, contentText, startFakeOpenAI, toolResults } from './fake-openai.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, ROOT, Tmux, agentEnv, assertScenarioWork, endWorld,
  nextWork, parentOf, pendingFrom, plandesk, plandeskJson, processes, screenDiagnosis, secondPlan,
  sleep, statuses, typeFirstPlan, waitFor, world,
} from './harness.mjs';

const SUMMARY_1 = '- Add an in-memory cache in src/fetch.js';
const SUMMARY_2 = '- Add a bounded LRU cache (1000 entries) in src/fetch.js';
const FINAL = 'Implementation done: the bounded cache is in place.';
const STOPPED = 'fake model: stopping as told.';
const HOOK = /plandesk hook copilot/;
const DENIED = 'Denied by preToolUse hook: ';
// Copilot's npm package is a Node loader that runs its native binary; that binary runs the hooks.
const NATIVE = /copilot-linux-x64\/copilot/;
// On its first start Copilot unpacks ~235 MB into $XDG_CACHE_HOME/copilot/pkg: share that
// across worlds and runs (target/ is not in git).
const CACHE = join(ROOT, 'target/agents-cache');

/**
 * The fake model. Plan mode's user message says "Save the plan to: <session>/plan.md": it
 * creates that file with PLAN_1, then calls exit_plan_mode {summary} (the plan itself is only in
 * the file). exit_plan_mode denied with "User feedback:": it edits plan.md to PLAN_2 and calls
 * exit_plan_mode again; denied otherwise: it stops with a text. Approved ("Plan approved!"): the
 * world's `work` steps one by one (matched by call id), then FINAL. Past 16 turns it stops.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ text: 'Cache plan' }]; // a side request, if any
  if (fake.main().length > 16) return [{ text: 'fake model: too many turns, stopping' }];
  fake.planPath ??= allText(body).match(/Save the plan to: (\/\S+?plan\.md)/)?.[1];
  // The results of the model's last calls (after an approval Copilot adds a user message of
  // its own after them, a <mode_changed_notice>; these tests type nothing more).
  const [result] = toolResults(body);
  if (!result) {
    if (!fake.planPath) return [{ text: 'fake model: no plan path in the request' }];
    return [{ id: 'call_plan_1', tool: 'create', args: { path: fake.planPath, file_text: PLAN_1 } }];
  }
  if (result.id === 'call_plan_1') return [{ tool: 'exit_plan_mode', args: { summary: SUMMARY_1 } }];
  if (result.id === 'call_plan_2') return [{ tool: 'exit_plan_mode', args: { summary: SUMMARY_2 } }];
  if (result.name === 'exit_plan_mode') {
    if (result.text.startsWith('Plan approved!')) return fake.work.length ? [fake.work[0]] : [{ text: FINAL }];
    if (result.text.startsWith(DENIED) && result.text.includes('User feedback:')) {
      return [{ id: 'call_plan_2', tool: 'edit', args: { path: fake.planPath, old_str: PLAN_1, new_str: PLAN_2 } }];
    }
    return [{ text: STOPPED }];
  }
  return nextWork(fake, result, FINAL);
}

/** Copilot's matcher is a regular expression on the tool's whole name. */
const matches = (matcher, tool) => new RegExp(`^(?:${matcher})$`).test(tool);

/**
 * `plandesk install copilot`, as a person runs it: HOME is the world's, COPILOT_HOME as given
 * (none: `~/.copilot`). Returns the process's result.
 */
function installCopilot(w, { copilotHome, uninstall = false } = {}) {
  return spawnSync(CLI, ['install', 'copilot', ...(uninstall ? ['--uninstall'] : [])], {
    cwd: w.ws,
    env: { ...process.env, HOME: w.home, PLANDESK_DATA_DIR: w.data, COPILOT_HOME: copilotHome ?? '' },
    encoding: 'utf8', timeout: 30_000,
  });
}

/**
 * Copilot as a person would have it (the workspace trusted, no banner), then the hooks from
 * `plandesk install copilot`, checked. `hookTimeout` replaces the plan hook's `timeout`
 * (seconds), as a person editing the file would; `uninstall` takes the hooks out again with
 * `plandesk install copilot --uninstall`, checked. Returns Copilot's state folder.
 */
function configure(w, { copilotHome, hookTimeout, uninstall } = {}) {
  const state = copilotHome ?? join(w.home, '.copilot');
  mkdirSync(state, { recursive: true });
  writeFileSync(join(state, 'config.json'), JSON.stringify({ trustedFolders: [w.ws], banner: 'never' }));
  const installed = installCopilot(w, { copilotHome });
  assert.equal(installed.status, 0, installed.stderr);
  const file = join(state, 'hooks/plandesk.json');
  assert.ok(installed.stderr.includes(file), `install names the file it wrote: ${installed.stderr}`);
  assert.match(installed.stderr, /Plan Ready for Review/, 'install tells the person about Copilot\'s own menu');
  const hooks = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(Object.keys(hooks), ['hooks']);
  assert.deepEqual(Object.keys(hooks.hooks).sort(), ['agentStop', 'postToolUse', 'preToolUse']);
  // Claude Code's groups: {matcher, hooks: [{type, command, timeout}]}. Copilot reads them beside
  // its own flat entries (the plan reaching `pending` below shows it did).
  const [group] = hooks.hooks.preToolUse;
  assert.equal(group.matcher, 'exit_plan_mode');
  const [hook] = group.hooks;
  assert.equal(hook.type, 'command');
  assert.ok(hook.command.startsWith(CLI), `the hook runs this build: ${hook.command}`);
  assert.match(hook.command, /plandesk hook copilot$/);
  assert.equal(hook.timeout, 86400, 'seconds: a day, so that Plandesk\'s own deadline comes first');
  const recorded = hooks.hooks.postToolUse[0].matcher;
  for (const tool of ['exit_plan_mode', 'create', 'edit', 'bash']) assert.ok(matches(recorded, tool), `postToolUse records ${tool}`);
  for (const tool of ['view', 'grep', 'exit_plan']) assert.ok(!matches(recorded, tool), `postToolUse does not record ${tool}`);
  assert.equal(hooks.hooks.agentStop[0].matcher, undefined);
  for (const event of ['postToolUse', 'agentStop']) {
    assert.match(hooks.hooks[event][0].hooks[0].command, /plandesk record copilot$/, event);
  }
  if (hookTimeout !== undefined) {
    hook.timeout = hookTimeout;
    writeFileSync(file, JSON.stringify(hooks, null, 2));
  }
  if (uninstall) {
    const removed = installCopilot(w, { copilotHome, uninstall: true });
    assert.equal(removed.status, 0, removed.stderr);
    assert.equal(existsSync(file), false, 'Plandesk\'s own hooks file is gone');
    // The file as it was is kept beside it, under a name Copilot does not load (not *.json).
    const kept = readdirSync(join(state, 'hooks'));
    assert.equal(kept.length, 1, kept.join(' '));
    assert.match(kept[0], /^plandesk\.json\.plandesk-backup-\d+$/);
    assert.deepEqual(JSON.parse(readFileSync(join(state, 'hooks', kept[0]), 'utf8')), hooks);
  }
  return state;
}

/** The last line of the screen: Copilot's status line ("… · Plan · Manual Approval · …"). */
const status = (tmux) => tmux.screen().trimEnd().split('\n').at(-1);
const inPlanMode = (tmux) => / Plan · /.test(status(tmux));
const menuShown = (tmux) => tmux.screen().includes('Plan Ready for Review');

/**
 * Runs `fn(ctx)` with Copilot started in plan mode in tmux in a world of its own (`options`:
 * `work`, what the model does after an approval; `copilotHome`, whether Copilot and install get
 * a COPILOT_HOME (in the world, not under HOME); `hookTimeout` and `uninstall`, see
 * `configure`); afterwards (also on failure) stops tmux, every process of that world, and the
 * fake.
 */
async function withCopilot(name, fn, options = {}) {
  const w = world(name);
  const fake = await startFakeOpenAI(brain);
  let n = 0;
  const step = (tool, args) => ({ id: `call_work_${++n}`, tool, args });
  fake.work = options.work ? [
    step('edit', { path: join(w.ws, 'src/fetch.js'), old_str: 'return fetch(', new_str: 'return cache.get(id) ?? fetch(' }),
    step('create', { path: join(w.ws, 'src/cache.js'), file_text: 'export const cache = new Map();\n' }),
    step('bash', { command: 'echo cached', description: 'Say it is done' }),
    step('bash', { command: 'ls src/eviction.test.js', description: 'Look for the test' }),
  ] : [];
  const tmux = new Tmux(w);
  const diagnose = () => screenDiagnosis(name, fake, tmux, (r) => {
    const res = toolResults(r.body).map((x) => `${x.name}: ${x.text.slice(0, 140)}`);
    const told = (r.body.messages || []).filter((m) => m.role === 'user').map((m) => contentText(m.content).slice(0, 60));
    return `[${r.body.messages?.length} msgs] → ${JSON.stringify(r.answer ?? null).slice(0, 160)} | results: ${JSON.stringify(res)} | user: ${JSON.stringify(told)}`;
  });
  const ctx = { w, fake, tmux, diagnose };
  let failed = true;
  try {
    const copilotHome = options.copilotHome ? join(w.root, 'copilot-home') : undefined;
    ctx.state = configure(w, { ...options, copilotHome });
    // --allow-all-tools: the edits and commands after the approval run without Copilot's
    // per-tool questions (not what this is about). It does not skip the plan menu.
    tmux.start([join(BIN, 'copilot'), '--plan', '--allow-all-tools'], {
      cwd: w.ws,
      env: agentEnv(w, {
        COPILOT_OFFLINE: 'true', COPILOT_PROVIDER_BASE_URL: fake.url, COPILOT_PROVIDER_TYPE: 'openai',
        COPILOT_PROVIDER_API_KEY: 'x', COPILOT_MODEL: fake.model, COPILOT_AUTO_UPDATE: 'false',
        XDG_CACHE_HOME: CACHE, ...(copilotHome ? { COPILOT_HOME: copilotHome } : {}),
      }),
    });
    // The first start ever unpacks Copilot into the cache: give it time.
    await waitFor('Copilot to start in plan mode', () => inPlanMode(tmux), { seconds: 90, diagnose });
    await fn(ctx);
    failed = false;
  } finally {
    await endWorld({ w, tmux, fake }, failed);
  }
}

/** Types the request and waits for its plan in the inbox. */
const firstPlan = (ctx) => typeFirstPlan(ctx, 'copilot', PROMPT);

/** The first request answering the model's exit_plan_mode, its result matching `pattern`. */
function exitPlanResult(fake, pattern) {
  return fake.main().find((r) => {
    const [res] = toolResults(r.body);
    return res?.name === 'exit_plan_mode' && pattern.test(res.text);
  });
}

test('Copilot CLI: plan.md → pending → reject with feedback → revision 2 → approve → its own menu → it works, recorded', { timeout: 120_000 }, (t) => withCopilot('copilot-review', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  // 1. The plan lands in Plandesk's inbox, from Copilot: the session's plan.md, as written.
  const first = await firstPlan(ctx);
  const run = first.runId;
  const session = fake.planPath.split('/').at(-2);
  assert.equal(fake.planPath, join(ctx.state, 'session-state', session, 'plan.md'));
  assert.equal(first.kind, 'plan');
  assert.equal(first.toolName, 'exit_plan_mode');
  assert.equal(first.workspace, w.ws);
  assert.equal(first.source.session, session, 'the Copilot session is named');
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.equal(first.revision.path, fake.planPath, 'the plan file Copilot chose');
  assert.match(first.revision.body, /in-memory cache in `src\/fetch\.js`/);
  assert.equal(menuShown(tmux), false, 'Copilot\'s own menu is not shown while the hook waits');
  // Copilot has written the typed request to the session's transcript by now.
  const transcript = readFileSync(join(dirname(fake.planPath), 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(transcript.find((e) => e.type === 'user.message')?.data.content, PROMPT);
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed (from the session\'s events)');

  // 2. Reject with feedback: the deny's reason is exit_plan_mode's result after Copilot's
  // prefix; Copilot stays in plan mode and the model revises plan.md in the same turn.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => exitPlanResult(fake, /User feedback:/), { seconds: 30, diagnose });
  const feedbackText = toolResults(denied.body)[0].text;
  assert.ok(feedbackText.startsWith(DENIED), feedbackText);
  assert.ok(feedbackText.includes(`User feedback: ${FEEDBACK}`), feedbackText);

  // 3. The revised plan is revision 2 of the same thread, compared with the feedback between.
  const second = await secondPlan({ w, diagnose }, 'copilot');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  assert.match(second.revision.body, /Test the eviction order/);
  assert.equal(second.source.session, session);
  assert.ok(inPlanMode(tmux), `still in plan mode after the rejection: ${status(tmux)}`);
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);
  assert.equal(history[0].decision.feedback, FEEDBACK);
  const diff = plandesk(w, ['diff', String(history[0].id), String(history[1].id)]);
  assert.ok(diff.includes(FEEDBACK), diff);
  assert.match(diff, /\{\+ ?\(bounded\)\+\}/, diff);

  // 4. Approve exactly the revision seen. Copilot always asks again in its own "Plan Ready for
  // Review" menu after a hook's allow (no flag or setting skips it in its terminal). The model
  // named no `recommendedAction`, so Autopilot is item 1; `2` takes "Accept plan and continue
  // in Interactive execution mode".
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12)]);
  await waitFor('Copilot\'s own "Plan Ready for Review" menu', () => menuShown(tmux), { seconds: 30, diagnose });
  await sleep(800);
  assert.equal(exitPlanResult(fake, /^Plan approved!/), undefined, 'the hook\'s allow alone does not approve');
  assert.deepEqual(statuses(w, run), ['rejected', 'approved']);
  assert.match(tmux.screen(), /❯ 1\. Accept plan and continue in Autopilot execution mode \(recommended\)/);
  assert.match(tmux.screen(), /2\. Accept plan and continue in Interactive execution mode/);
  tmux.key('2');
  const approved = await waitFor('the approval in the model\'s next request', () => exitPlanResult(fake, /^Plan approved!/), { seconds: 30, diagnose });
  assert.match(toolResults(approved.body)[0].text, /^Plan approved! Exited plan mode\.\n\nYou are now in interactive mode\./);
  assert.match(contentText(approved.body.messages.at(-1).content), /^<mode_changed_notice>\nPlan mode is no longer active\./);

  // 5. The model works (a planned edit, a file outside the plan, two commands) and finishes.
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 40, diagnose });
  assert.ok(!inPlanMode(tmux), `out of plan mode: ${status(tmux)}`);
  // Copilot reports a command's exit code only in its output ("<shellId: N completed with exit
  // code 2>"), a failed command as a success.
  await assertScenarioWork(w, run, {
    finishedBy: 'agentStop', diagnose, commands: [['echo cached', 0], ['ls src/eviction.test.js', 2]],
  });
  assert.deepEqual(statuses(w, run), ['rejected', 'approved'], 'its postToolUse and agentStop change no decision');
  assert.deepEqual(pendingFrom(w, 'copilot'), []);
}, { work: true }));

// Copilot kills a preToolUse hook past its `timeout` (30 s when unset) and then shows its own
// menu, unreviewed. The installed hook's `timeout` (a day) holds: a person may take longer than
// 30 s. Here COPILOT_HOME is set: install and the hook both use it.
test('Copilot CLI: a person who takes past 30 s, then rejects without feedback → the model is told to stop and wait', { timeout: 90_000 }, () => withCopilot('copilot-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  assert.ok(fake.planPath.startsWith(join(ctx.state, 'session-state')), fake.planPath);
  assert.ok(!existsSync(join(w.home, '.copilot')), 'with COPILOT_HOME set, ~/.copilot is never made');
  const [hook] = processes(w.root, HOOK);
  const submitted = Date.now();
  await sleep(32_000);
  assert.equal(menuShown(tmux), false, 'Copilot\'s menu did not take over at 30 s');
  assert.deepEqual(processes(w.root, HOOK), [hook], 'the hook still waits');
  assert.deepEqual(statuses(w, item.runId), ['pending']);
  plandesk(w, ['reject', item.runId]);
  const denied = await waitFor('the rejection in the model\'s next request', () => exitPlanResult(fake, /^Denied/), { seconds: 30, diagnose });
  assert.ok(denied.at - submitted > 30_000);
  assert.match(toolResults(denied.body)[0].text, /^Denied by preToolUse hook: Plan was not approved\..*Stop now and wait for the user/s);
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.ok(inPlanMode(tmux), `still in plan mode: ${status(tmux)}`);
  assert.equal(menuShown(tmux), false, 'Copilot\'s own menu never opened');
  assert.equal(exitPlanResult(fake, /^Plan approved!/), undefined, 'never approved');
  assert.deepEqual(statuses(w, item.runId), ['rejected']);
  assert.deepEqual(pendingFrom(w, 'copilot'), []);
}, { copilotHome: true }));

// Past a preToolUse hook's `timeout` (seconds) Copilot kills it and shows its own menu, the plan
// unreviewed. With the `timeout` lowered in the hooks file, the hook reads it and denies first.
// Copilot takes any number of seconds (`5.5`, and `5.0` as 5); a string it does not run at all.
const shortTimeouts = {
  'its hook timeout is short (5 s)': [5],
  'its hook timeout is short, with a fraction (5.5 s)': [5.5],
};
for (const [how, [hookTimeout, todo]] of Object.entries(shortTimeouts)) {
  test(`Copilot CLI: ${how} and nobody decides → denied before Copilot gives up, expired, never approved`, { timeout: 60_000, todo }, () => withCopilot('copilot-timeout', async (ctx) => {
    const { w, fake, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const [hook] = processes(w.root, HOOK);
    await waitFor('the hook\'s answer or Copilot\'s own menu', () => exitPlanResult(fake, /^Denied/) || menuShown(tmux),
      { seconds: 15, diagnose });
    assert.equal(menuShown(tmux), false, `Copilot's own menu took the decision over (the plan is ${statuses(w, item.runId)})`);
    const denied = exitPlanResult(fake, /^Denied/);
    assert.match(toolResults(denied.body)[0].text, /^Denied by preToolUse hook: No decision was made on this plan in time/);
    const hookCall = fake.main().find((r) => r.answer?.some((p) => p.tool === 'exit_plan_mode'));
    const waited = (denied.at - hookCall.at) / 1000;
    assert.ok(waited < hookTimeout, `denied within the ${hookTimeout} s Copilot gives the hook (took ${waited.toFixed(1)} s)`);
    await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 20, diagnose });
    // Past the hook's timeout: Copilot's own menu never took the decision over.
    await sleep(Math.max(0, (hookTimeout + 1) * 1000 - (Date.now() - hookCall.at)));
    assert.equal(menuShown(tmux), false, 'Copilot\'s own menu never opened');
    assert.equal(exitPlanResult(fake, /^Plan approved!/), undefined, 'never approved');
    assert.ok(inPlanMode(tmux), `still in plan mode: ${status(tmux)}`);
    assert.deepEqual(statuses(w, item.runId), ['expired']);
    assert.ok(hook === undefined || parentOf(hook) === undefined, 'the hook exited');
    assert.deepEqual(processes(w.root, HOOK), []);
  }, { hookTimeout }));
}

// An agent that gives up on its plan must not leave it waiting in the inbox. Copilot runs the
// hook in a process group of its own and never stops it when it exits, whether stopped
// (SIGTERM) or killed (SIGKILL): the hook sees its parent (Copilot itself, `bash -c` having
// exec'd the hook) change and closes the plan itself.
const quits = {
  'it is stopped (SIGTERM to copilot, the hook\'s parent)': 'SIGTERM',
  'it is killed (SIGKILL to copilot, the hook\'s parent)': 'SIGKILL',
};
for (const [how, signal] of Object.entries(quits)) {
  test(`Copilot CLI: ${how} while its plan waits → the plan is marked abandoned`, { timeout: 60_000 }, (t) => withCopilot('copilot-quit', async (ctx) => {
    const { w, fake, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const [hook] = processes(w.root, HOOK);
    assert.ok(hook, 'the hook waits');
    const copilot = parentOf(hook);
    assert.deepEqual(processes(w.root, NATIVE), [copilot], 'the hook\'s parent is the native copilot');
    const quitAt = Date.now();
    process.kill(copilot, signal);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'copilot').length === 0, { seconds: 10, diagnose });
    t.diagnostic(`abandoned ${((Date.now() - quitAt) / 1000).toFixed(1)} s after the ${signal}`);
    assert.deepEqual(statuses(w, item.runId), ['abandoned']);
    const audit = plandesk(w, ['--json', 'audit', item.runId]).trim().split('\n').map((l) => JSON.parse(l));
    const decided = audit.find((e) => e.kind === 'decided');
    assert.equal(decided.process, 'hook:copilot', `closed by the hook: ${JSON.stringify(decided)}`);
    await waitFor('the hook to exit', () => processes(w.root, HOOK).length === 0, { seconds: 5, diagnose });
    assert.equal(exitPlanResult(fake, /^Plan approved!/), undefined, 'never approved');
  }));
}

// Ctrl+C in Copilot's terminal while its hook waits: Copilot writes an `abort` to the session's
// events.jsonl at once, shows "Cancelling" and waits for the hook, which it does not signal (it
// would wait up to the hook's `timeout`, a day). Only the hook can let it go.
test('Copilot CLI: the person cancels with Ctrl+C in its terminal while its plan waits → the hook lets Copilot go, never approved', { timeout: 60_000 }, () => withCopilot('copilot-cancel', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  tmux.key('C-c');
  // Copilot shows "Cancelling" until the hook answers: a moment, now that the hook watches.
  const transcript = () => readFileSync(join(dirname(fake.planPath), 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const abort = await waitFor('the abort in the session\'s events.jsonl', () => transcript().find((e) => e.type === 'abort'), { seconds: 5, diagnose });
  assert.equal(abort.data.reason, 'user_initiated');
  await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'copilot').length === 0, { seconds: 8, diagnose });
  assert.deepEqual(statuses(w, item.runId), ['abandoned']);
  await waitFor('the hook to exit', () => processes(w.root, HOOK).length === 0, { seconds: 5, diagnose });
  await waitFor('Copilot to be ready again', () => !/Cancelling/.test(status(tmux)), { seconds: 5, diagnose });
  assert.match(tmux.screen(), /Operation aborted by user/);
  assert.equal(menuShown(tmux), false, 'Copilot\'s own menu did not open');
  assert.equal(exitPlanResult(fake, /^Plan approved!/), undefined, 'never approved');
}));

// `plandesk install copilot --uninstall` takes Plandesk's hooks out of its file: Copilot then
// runs no hook at all (its session's events.jsonl records a `hook.start` for every hook it runs)
// and the plan goes straight to its own menu.
test('Copilot CLI: `plandesk install copilot --uninstall` removes the hooks; Copilot then runs none of them', { timeout: 60_000 }, (t) => withCopilot('copilot-uninstall', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  tmux.type(PROMPT);
  await waitFor('Copilot\'s own "Plan Ready for Review" menu', () => menuShown(tmux), { seconds: 40, diagnose });
  assert.deepEqual(plandeskJson(w, ['history']), [], 'no plan reached Plandesk');
  // Copilot writes the session's events a moment later.
  const read = () => readFileSync(join(dirname(fake.planPath), 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const events = await waitFor('the session\'s events', () => {
    const all = read();
    return all.some((e) => e.type === 'tool.execution_start') ? all : null;
  }, { seconds: 10, diagnose });
  assert.deepEqual(events.filter((e) => e.type === 'hook.start'), [], 'no hook ran');
  // Plandesk's own file is gone (a `{}` left there would be logged as an error at every start).
  await t.test('Copilot finds nothing wrong with the hooks folder', () => {
    const logs = join(ctx.state, 'logs');
    const logged = readdirSync(logs).map((f) => readFileSync(join(logs, f), 'utf8')).join('\n');
    assert.deepEqual(logged.split('\n').filter((l) => /\[ERROR\] \[rust:hooks\]/.test(l)), []);
  });
}, { uninstall: true }));
