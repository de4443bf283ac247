// The real Claude Code CLI (pinned in package.json), interactive in tmux, in plan mode, against
// a fake Messages API: its plan reaches `plandesk pending` through the hook `plandesk install
// claude-code` put in place; a rejection's feedback reaches the model, whose revised plan is
// revision 2; an approval of that exact revision takes Claude Code out of plan mode and the
// model carries on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { allText, startFakeAnthropic, toolResults, toolUse } from './fake-anthropic.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, Tmux, agentEnv, endWorld, install, pendingFrom,
  plandesk, plandeskJson, processes, screenDiagnosis, secondPlan, sleep, typeFirstPlan, waitFor,
  world,
} from './harness.mjs';

const FINAL = 'Implementation started: the bounded cache plan is approved.';
/** What the model does after the approval when a test asks for work (see `brain`). */
let WORK = [];

/**
 * The fake model. First request of plan mode: write the plan where the system text says, then
 * call ExitPlanMode with `{}`. A denied ExitPlanMode carrying feedback: write the revised plan,
 * then ExitPlanMode again. An approved one: a final text. It never loops: past 12 turns it only
 * says so.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ type: 'text', text: 'Cache plan' }]; // a side request (title, summary)
  if (fake.main().length > 12) return [{ type: 'text', text: 'fake model: too many turns, stopping' }];
  const planPath = allText(body).match(/create your plan at (\/.+?\.md)/)?.[1];
  const [result] = toolResults(body);
  const use = result && toolUse(body, result.tool_use_id);
  if (!use) {
    if (!planPath) return [{ type: 'text', text: 'fake model: no plan path in the request' }];
    fake.planPath = planPath;
    return [{ type: 'tool_use', name: 'Write', input: { file_path: planPath, content: PLAN_1 } }];
  }
  // After the approval, with `work`: a planned file, an unplanned one, a command, then done.
  const done = WORK.findIndex((step) => (step.file_path ?? step.command) === (use.input.file_path ?? use.input.command));
  if (fake.work && done >= 0) {
    const next = WORK[done + 1];
    if (!next) return [{ type: 'text', text: FINAL }];
    return [{ type: 'tool_use', name: next.command ? 'Bash' : 'Write', input: next }];
  }
  if (use.name === 'Write') {
    if (result.is_error) return [{ type: 'text', text: `fake model: Write failed: ${result.text}` }];
    return [{ type: 'tool_use', name: 'ExitPlanMode', input: {} }];
  }
  if (use.name === 'ExitPlanMode') {
    if (result.is_error && result.text.includes('User feedback:')) {
      return [{ type: 'tool_use', name: 'Write', input: { file_path: fake.planPath, content: PLAN_2 } }];
    }
    if (result.is_error) return [{ type: 'text', text: 'fake model: stopping as told.' }];
    if (fake.work) return [{ type: 'tool_use', name: 'Write', input: WORK[0] }];
    return [{ type: 'text', text: FINAL }];
  }
  return [{ type: 'text', text: `fake model: unexpected tool result for ${use.name}` }];
}


/** `plandesk install claude-code` into the world's HOME: one hook, running this build. */
function checkInstall(w, settingsFile) {
  const installed = install(w, 'claude-code');
  assert.equal(installed.status, 0, installed.stderr);
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
  assert.equal(settings.apiKeyHelper, 'echo sk-test', 'install keeps the other settings');
  const [group] = settings.hooks.PermissionRequest;
  assert.equal(group.matcher, 'ExitPlanMode');
  assert.match(group.hooks[0].command, /plandesk hook claude-code$/);
  assert.ok(group.hooks[0].command.startsWith(CLI), `the hook runs this build: ${group.hooks[0].command}`);
  for (const event of ['PostToolUse', 'PostToolUseFailure', 'Stop']) {
    assert.match(settings.hooks[event][0].hooks[0].command, /plandesk record claude-code$/, event);
  }
}

/**
 * `plandesk serve` on a free loopback port over the world's store, and a token for Claude Code.
 * `killMarked` stops it with the world's other processes.
 */
async function startServe(w, { revoked = false } = {}) {
  const token = plandesk(w, ['token', 'create', 'laptop']).trim();
  if (revoked) plandesk(w, ['token', 'revoke', 'laptop']);
  const child = spawn(CLI, ['--data-dir', w.data, 'serve', '--listen', '127.0.0.1:0'], {
    env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(w.root, 'no-bus')}` },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise((resolve, reject) => {
    let text = '';
    child.stderr.on('data', (d) => {
      text += d;
      const found = text.match(/serving on (http:\/\/[0-9.]+:[0-9]+)/);
      if (found) resolve(found[1]);
    });
    child.on('exit', (code) => reject(new Error(`plandesk serve exited (${code}): ${text}`)));
  });
  return { token, url };
}

/**
 * Sets Claude Code up as a person would (onboarding done, the project trusted, a key helper),
 * adds the hook with `plandesk install claude-code` (or, with `http`, a `type: "http"` hook to
 * `plandesk serve`, as on another machine), and starts it in plan mode in tmux.
 */
async function setUp(w, fake, tmux, diagnose, env, { http = false, revoked = false, allowed = true } = {}) {
  writeFileSync(join(w.home, '.claude.json'), JSON.stringify({
    hasCompletedOnboarding: true, projects: { [w.ws]: { hasTrustDialogAccepted: true } },
  }));
  const settingsFile = join(w.home, '.claude/settings.json');
  mkdirSync(join(w.home, '.claude'));
  if (http) {
    const served = await startServe(w, { revoked });
    writeFileSync(settingsFile, JSON.stringify({
      apiKeyHelper: 'echo sk-test',
      hooks: { PermissionRequest: [{ matcher: 'ExitPlanMode', hooks: [{
        type: 'http', url: `${served.url}/hooks/claude`, timeout: 600, onFailure: 'block',
        headers: { Authorization: 'Bearer $PLANDESK_TOKEN' }, allowedEnvVars: ['PLANDESK_TOKEN'],
      }] }] },
    }));
    env = { ...env, PLANDESK_TOKEN: served.token };
  } else {
    const permissions = fake.work && allowed ? { permissions: { allow: ['Write', 'Edit', 'Bash(echo:*)'] } } : {};
    writeFileSync(settingsFile, JSON.stringify({ apiKeyHelper: 'echo sk-test', ...permissions }));
    checkInstall(w, settingsFile);
  }
  tmux.start([join(BIN, 'claude'), '--permission-mode', 'plan'], {
    cwd: w.ws,
    env: agentEnv(w, {
      ANTHROPIC_BASE_URL: fake.url, DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1', ...env,
    }),
  });
  await waitFor('Claude Code to start in plan mode', () => /plan mode on/i.test(tmux.screen()), { seconds: 40, diagnose });
}

/**
 * Runs `fn({w, fake, tmux, diagnose})` with Claude Code started in plan mode in a world of its
 * own (`env` added to its environment, which its hooks inherit); afterwards (also on failure) stops tmux, every process of that world, and the fake.
 */
async function withClaude(name, fn, env = {}, options = {}) {
  const w = world(name);
  const fake = await startFakeAnthropic(brain);
  fake.work = options.work ?? false;
  WORK = fake.work ? [
    { file_path: join(w.ws, 'src/fetch.js'), content: 'export const cache = new Map();\n' },
    { file_path: join(w.ws, 'src/metrics.js'), content: 'export let hits = 0;\n' },
    { command: 'echo cached', description: 'Say it is done' },
  ] : [];
  const tmux = new Tmux(w);
  const diagnose = () => screenDiagnosis(name, fake, tmux, (r) => {
    const res = toolResults(r.body).map((x) => `${x.is_error ? 'error' : 'ok'}: ${x.text.slice(0, 160)}`);
    return `→ ${JSON.stringify(r.answer ?? null).slice(0, 160)} | results: ${JSON.stringify(res)}`;
  });
  let failed = true;
  try {
    await setUp(w, fake, tmux, diagnose, env, options);
    await fn({ w, fake, tmux, diagnose });
    failed = false;
  } finally {
    await endWorld({ w, tmux, fake }, failed);
  }
}

/** Types the request and waits for its plan in the inbox. */
const firstPlan = (ctx) => typeFirstPlan(ctx, 'claude-code', PROMPT);

/** The first request whose last tool result is ExitPlanMode's, denied (`error`) or not. */
function exitPlanResult(fake, error) {
  return fake.main().find((r) => {
    const [res] = toolResults(r.body);
    return res && res.is_error === error && toolUse(r.body, res.tool_use_id)?.name === 'ExitPlanMode';
  });
}

test('Claude Code: plan → pending → reject with feedback → revision 2 → approve → it carries on', { timeout: 120_000 }, (t) => withClaude('claude-review', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  // 1. The plan lands in Plandesk's inbox, from Claude Code, as written.
  const first = await firstPlan(ctx);
  const run = first.runId;
  assert.equal(first.kind, 'plan');
  assert.equal(first.toolName, 'ExitPlanMode');
  assert.equal(first.workspace, w.ws);
  assert.ok(first.source.session, 'the Claude Code session is named');
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.equal(first.revision.path, fake.planPath, 'the plan file Claude Code chose');
  assert.match(first.revision.body, /in-memory cache/);
  await t.test('the inbox shows the request that was typed', {
    todo: 'the hook reads it from the transcript, which Claude Code may not have written yet (Rust side)',
  }, () => assert.equal(first.prompt, PROMPT));

  // 2. Reject with feedback: the model reads it as ExitPlanMode's error and revises.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => exitPlanResult(fake, true), { seconds: 30, diagnose });
  const feedbackText = toolResults(denied.body)[0].text;
  assert.ok(feedbackText.includes(`User feedback: ${FEEDBACK}`), feedbackText);

  // 3. The revised plan is revision 2 of the same thread, compared with the feedback between.
  const second = await secondPlan({ w, diagnose }, 'claude-code');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  assert.equal(second.source.session, first.source.session);
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);
  assert.equal(history[0].decision.feedback, FEEDBACK);
  const diff = plandesk(w, ['diff', String(history[0].id), String(history[1].id)]);
  assert.ok(diff.includes(FEEDBACK), diff);
  assert.match(diff, /\{\+ ?\(bounded\)\+\}/, diff);

  // 4. Approve exactly the revision seen: Claude Code leaves plan mode, the model carries on.
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12)]);
  const approved = await waitFor('the approval in the model\'s next request', () => exitPlanResult(fake, false), { seconds: 30, diagnose });
  const approval = toolResults(approved.body)[0].text;
  assert.match(approval, /User has approved your plan/);
  assert.ok(approval.includes(PLAN_2.trim()), `the approved plan is revision 2: ${approval}`);
  assert.match(allText(approved.body), /Exited Plan Mode/);
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 30, diagnose });
  const status = tmux.screen().trimEnd().split('\n').slice(-3).join('\n');
  assert.doesNotMatch(status, /plan mode on/i, `out of plan mode: ${status}`);
  assert.deepEqual(plandeskJson(w, ['history', run]).map((r) => r.status), ['rejected', 'approved']);
  assert.deepEqual(pendingFrom(w, 'claude-code'), []);
}));

test('Claude Code: reject without feedback → the turn stops; the model reads why with the next message', { timeout: 60_000 }, (t) => withClaude('claude-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  const before = fake.main().length;
  plandesk(w, ['reject', item.runId]);
  await waitFor('Claude Code to show the rejection', () => /Rejected Claude's plan/.test(tmux.screen()), { seconds: 30, diagnose });
  await sleep(1000);
  assert.equal(fake.main().length, before, 'the turn stopped: the model is not asked to go on');
  assert.match(tmux.screen().trimEnd().split('\n').slice(-3).join('\n'), /plan mode on/i, 'still in plan mode');
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['rejected']);
  // The person's next message carries the denial to the model.
  tmux.type('Keep it small');
  const next = await waitFor('the next request', () => fake.main()[before], { seconds: 30, diagnose });
  const denial = next.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .find((b) => b.type === 'tool_result' && toolUse(next.body, b.tool_use_id)?.name === 'ExitPlanMode');
  assert.ok(denial, `ExitPlanMode's result is in the conversation: ${allText(next.body).slice(-2000)}`);
  assert.equal(denial.is_error, true);
  // With `interrupt`, Claude Code 2.1.332 puts its own text there, not the hook's message (same
  // meaning: stop and wait for the user).
  assert.match(JSON.stringify(denial.content), /STOP what you are doing and wait for the user|Stop now and wait for the user/);
  t.diagnostic(`Plandesk's own text reached the model: ${allText(next.body).includes('Plan was not approved')}`);
}));

// An agent that gives up on its plan must not leave it waiting in the inbox. Claude Code runs
// its hook under `sh -c`; killed, it cannot stop the hook, which notices it is gone.
const quits = {
  'its terminal is closed (SIGHUP)': (tmux) => tmux.kill(),
  'it is stopped (SIGTERM)': (tmux) => process.kill(tmux.pid(), 'SIGTERM'),
  'it is killed (SIGKILL)': (tmux) => process.kill(tmux.pid(), 'SIGKILL'),
};
for (const [how, quit] of Object.entries(quits)) {
  test(`Claude Code: ${how} while its plan waits → the plan is marked abandoned`, { timeout: 60_000 }, () => withClaude('claude-quit', async (ctx) => {
    const { w, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    quit(tmux);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'claude-code').length === 0, { seconds: 10, diagnose });
    assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['abandoned']);
    await waitFor('the hook to exit', () => processes(w.root, /plandesk hook claude-code/).length === 0, { seconds: 5, diagnose });
  }));
}

// Claude Code keeps its hook running (same parent, its pipes open) when the plan is answered
// in its own dialog; its PostToolUse hook on ExitPlanMode (`plandesk record`) tells Plandesk.
test('Claude Code: the plan is answered in its own dialog while Plandesk waits → it leaves the inbox', {
  timeout: 60_000,
}, () => withClaude('claude-terminal', async (ctx) => {
  const { w, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  await waitFor('Claude Code\'s own approval dialog', () => tmux.screen().includes('Would you like to proceed?'), { seconds: 20, diagnose });
  await sleep(500);
  tmux.key('Down');
  await sleep(300);
  tmux.key('Enter');
  await waitFor('the model to carry on after the terminal\'s approval', () => tmux.screen().includes(FINAL), { seconds: 20, diagnose });
  await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'claude-code').length === 0, { seconds: 5, diagnose });
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['answered-in-agent']);
  const refused = spawnSync(CLI, ['--data-dir', w.data, 'approve', item.runId], { encoding: 'utf8' });
  assert.notEqual(refused.status, 0, 'nobody approves here what was answered there');
  assert.match(refused.stderr, /answered-in-agent by Claude Code/);
  await waitFor('the hook to exit', () => processes(w.root, /plandesk hook claude-code/).length === 0, { seconds: 5, diagnose });
}));

test('Claude Code: after the approval its edits and commands are recorded and held against the plan', {
  timeout: 90_000,
}, () => withClaude('claude-work', async (ctx) => {
  const { w, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  plandesk(w, ['approve', item.runId]);
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 40, diagnose });
  const progress = await waitFor('the agent\'s Stop in `plandesk progress`', () => {
    const p = plandeskJson(w, ['progress', item.runId]);
    return p.finished ? p : null;
  }, { seconds: 10, diagnose });
  assert.deepEqual(progress.steps.map((s) => [s.text, s.state]), [
    ['Add an in-memory cache in `src/fetch.js`.', 'done'],
    ['Invalidate it on writes.', 'not-done-yet'],
  ]);
  assert.deepEqual(progress.files.map((f) => [f.path, f.planned, f.changed]), [
    ['src/fetch.js', true, true],
    ['src/metrics.js', false, true],
  ]);
  assert.deepEqual(progress.commands.map((c) => [c.command, c.exitCode]), [['echo cached', 0]]);
  assert.equal(progress.summary, '1 of 2 steps done, 1 file outside the plan');
}, {}, { work: true }));

test('Claude Code: approved to edit without asking → it writes files unasked, in its accept-edits mode; approved plainly → it asks before an edit', {
  timeout: 150_000,
}, async () => {
  await withClaude('claude-accept-edits', async (ctx) => {
    const { w, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    plandesk(w, ['approve', item.runId, '--accept-edits']);
    await waitFor('both files written, nobody asked', () => existsSync(join(w.ws, 'src/metrics.js')), { seconds: 40, diagnose });
    assert.equal(readFileSync(join(w.ws, 'src/fetch.js'), 'utf8'), WORK[0].content);
    await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 30, diagnose });
    assert.match(tmux.screen(), /accept edits on/, 'the mode its own "Yes, and auto-accept edits" sets');
    const [answered] = plandesk(w, ['--json', 'audit', item.runId]).trim().split('\n').map((l) => JSON.parse(l))
      .filter((e) => e.kind === 'answered');
    assert.equal(answered.data.answer, 'approved: the agent proceeds with the plan, editing files without asking',
      'the audit trail says what Claude Code was allowed');
  }, {}, { work: true, allowed: false });
  await withClaude('claude-asks-edits', async (ctx) => {
    const { w, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const before = readFileSync(join(w.ws, 'src/fetch.js'), 'utf8');
    plandesk(w, ['approve', item.runId]);
    await waitFor('Claude Code to ask before the first edit', () => /Do you want to/i.test(tmux.screen())
      && tmux.screen().includes('fetch.js'), { seconds: 40, diagnose });
    assert.equal(readFileSync(join(w.ws, 'src/fetch.js'), 'utf8'), before, 'nothing written unasked');
    assert.throws(() => plandesk(w, ['approve', item.runId, '--accept-edits']), /already decided/, 'decided once');
  }, {}, { work: true, allowed: false });
});

test('Claude Code: nobody decides before the deadline → not approved, the turn stops', { timeout: 60_000 }, () => withClaude('claude-deadline', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  await waitFor('Claude Code to show the plan as rejected', () => /Rejected Claude's plan/.test(tmux.screen()), { seconds: 30, diagnose });
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['expired']);
  assert.equal(exitPlanResult(fake, false), undefined, 'never approved');
  assert.match(tmux.screen().trimEnd().split('\n').slice(-3).join('\n'), /plan mode on/i, 'still in plan mode');
}, { PLANDESK_HOOK_DEADLINE: '3s' }));

test('Claude Code on another machine: its type "http" hook reaches `plandesk serve` with a token; reject → revision 2 → approve', { timeout: 120_000 }, () => withClaude('claude-http', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const first = await firstPlan(ctx);
  const run = first.runId;
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.match(first.source.session, /^laptop#\d+\//, 'the session is the token\'s (its name and id)');
  const submitted = plandesk(w, ['--json', 'audit', run]).trim().split('\n').map((l) => JSON.parse(l))
    .find((e) => e.kind === 'submitted');
  assert.deepEqual([submitted.actor, submitted.process], ['laptop', 'serve:claude-code']);

  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => exitPlanResult(fake, true), { seconds: 30, diagnose });
  assert.ok(toolResults(denied.body)[0].text.includes(`User feedback: ${FEEDBACK}`));
  const second = await secondPlan({ w, diagnose }, 'claude-code');
  assert.equal(second.runId, run, 'a revision of the same plan thread');

  plandesk(w, ['approve', run]);
  const approved = await waitFor('the approval in the model\'s next request', () => exitPlanResult(fake, false), { seconds: 30, diagnose });
  assert.ok(toolResults(approved.body)[0].text.includes(PLAN_2.trim()));
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 30, diagnose });
  assert.deepEqual(plandeskJson(w, ['history', run]).map((r) => r.status), ['rejected', 'approved']);
}, {}, { http: true }));

test('Claude Code on another machine with a revoked token: 401, nothing recorded, and the plan is not approved', { timeout: 90_000 }, (t) => withClaude('claude-http-401', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  tmux.type(PROMPT);
  // `onFailure: "block"`: the failed hook blocks the request instead of falling back to asking.
  const refused = await waitFor('ExitPlanMode to be refused', () => exitPlanResult(fake, true),
    { seconds: 40, diagnose });
  t.diagnostic(`the model read: ${toolResults(refused.body)[0].text.slice(0, 300)}`);
  await sleep(1000);
  assert.equal(exitPlanResult(fake, false), undefined, 'never approved');
  assert.deepEqual(plandeskJson(w, ['history']), [], 'nothing was recorded');
  assert.deepEqual(plandeskJson(w, ['pending']), []);
}, {}, { http: true, revoked: true }));
