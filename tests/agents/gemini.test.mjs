// The real Gemini CLI (pinned in package.json), headless in plan mode (`--approval-mode plan
// -p …`), against a fake Gemini API: its plan reaches `plandesk pending` through the hook
// `plandesk install gemini` put in place; a rejection's feedback reaches the model, whose revised
// plan is revision 2; an approval of that exact revision lets the CLI leave plan mode and go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaration, functionResponses, startFakeGemini } from './fake-gemini.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, agentEnv, install, killMarked, parentOf, pendingFrom,
  plandesk, plandeskJson, processes, removeWorld, saveArtifact, secondPlan, summarize, waitFor,
  world,
} from './harness.mjs';

const PLAN_FILE = 'cache-user-lookups.md';
const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping and waiting for the user.';

/** The plans folder the CLI tells the model about (in write_file's description, in plan mode). */
const plansDir = (body) => declaration(body, 'write_file')?.description?.match(/plans directory: (\/\S+?)\/?\.?(\s|$)/)?.[1];

/**
 * The fake model. In plan mode, first: write the plan into the plans folder, then call
 * exit_plan_mode with its file name. A blocked exit_plan_mode with feedback: write the revised
 * plan, call exit_plan_mode again; blocked without feedback: stop. Anything else after
 * exit_plan_mode (approved): a final text. Past 12 turns it only says so.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ text: 'Cache plan' }]; // a side request
  if (fake.main().length > 12) return [{ text: 'fake model: too many turns, stopping' }];
  const [response] = functionResponses(body);
  // After the approval, with `work`: a planned file, an unplanned one, a command, then done.
  if (fake.work?.length && fake.step > 0 && response && response.name !== 'exit_plan_mode') {
    const next = fake.work[fake.step];
    fake.step += 1;
    return next ? [{ functionCall: next }] : [{ text: FINAL }];
  }
  if (!response) {
    fake.plansDir = plansDir(body);
    if (!fake.plansDir) return [{ text: 'fake model: no plans folder in the request' }];
    return [{ functionCall: { name: 'write_file', args: { file_path: join(fake.plansDir, PLAN_FILE), content: PLAN_1 } } }];
  }
  if (response.name === 'write_file') {
    return [{ functionCall: { name: 'exit_plan_mode', args: { plan_filename: PLAN_FILE } } }];
  }
  if (response.name === 'exit_plan_mode') {
    if (response.text.includes('User feedback:')) {
      return [{ functionCall: { name: 'write_file', args: { file_path: join(fake.plansDir, PLAN_FILE), content: PLAN_2 } } }];
    }
    if (response.text.includes('blocked')) return [{ text: STOPPED }];
    if (fake.work?.length) {
      fake.step = 1;
      return [{ functionCall: fake.work[0] }];
    }
    return [{ text: FINAL }];
  }
  return [{ text: `fake model: unexpected response from ${response.name}` }];
}

/**
 * Sets Gemini CLI up as a person would (API key auth, no folder-trust prompt, no updates or
 * telemetry), adds the hook with `plandesk install gemini`, and starts it headless in plan mode
 * (`env` added to its environment, which its hook inherits). `hookTimeoutMs` replaces the
 * hook's timeout in the settings, as a person editing them would.
 * Returns the running CLI: `{child, output(), exited}`.
 */
function start(w, fake, { env = {}, hookTimeoutMs } = {}) {
  mkdirSync(join(w.home, '.gemini'));
  const settingsFile = join(w.home, '.gemini/settings.json');
  writeFileSync(settingsFile, JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
  }));
  const installed = install(w, 'gemini');
  assert.equal(installed.status, 0, installed.stderr);
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
  assert.equal(settings.security.auth.selectedType, 'gemini-api-key', 'install keeps the other settings');
  const [group] = settings.hooks.BeforeTool;
  assert.equal(group.matcher, '^exit_plan_mode$');
  assert.ok(group.hooks[0].command.startsWith(CLI), `the hook runs this build: ${group.hooks[0].command}`);
  assert.match(group.hooks[0].command, /plandesk hook gemini$/);
  assert.match(settings.hooks.AfterTool[0].hooks[0].command, /plandesk record gemini$/);
  assert.match(settings.hooks.AfterAgent[0].hooks[0].command, /plandesk record gemini$/);
  assert.ok(group.hooks[0].timeout <= 2 ** 31 - 1, 'a timeout Node can keep (milliseconds)');
  if (hookTimeoutMs) {
    group.hooks[0].timeout = hookTimeoutMs;
    writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
  }

  // Its own process group, so the CLI and everything it started can be stopped together.
  const child = spawn(join(BIN, 'gemini'), ['--approval-mode', 'plan', '-p', PROMPT], {
    cwd: w.ws,
    env: agentEnv(w, { GEMINI_API_KEY: 'x', GOOGLE_GEMINI_BASE_URL: fake.url, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => out, exited };
}

/**
 * Runs `fn(ctx)` with Gemini CLI started (`options` as for `start`); afterwards (also on
 * failure) stops all it started.
 */
async function withGemini(name, fn, options = {}) {
  const w = world(name);
  const fake = await startFakeGemini(brain);
  fake.work = options.work ? [
    { name: 'write_file', args: { file_path: join(w.ws, 'src/fetch.js'), content: 'export const cache = new Map();\n' } },
    { name: 'write_file', args: { file_path: 'src/metrics.js', content: 'export let hits = 0;\n' } },
    { name: 'run_shell_command', args: { command: 'echo cached; exit 3', description: 'Say it' } },
  ] : [];
  fake.step = 0;
  let cli;
  const diagnose = () => {
    const requests = summarize(fake.requests, (r) => {
      const res = functionResponses(r.body).map((x) => `${x.name}: ${x.text.slice(0, 160)}`);
      return `${r.method} → ${JSON.stringify(r.answer ?? null).slice(0, 160)} | responses: ${JSON.stringify(res)}`;
    });
    const output = cli?.output() ?? '';
    const file = saveArtifact(`${name}-output.txt`, output);
    return `requests to the fake model:\n${requests}\nthe CLI's output (${file}):\n${output}`;
  };
  let failed = true;
  try {
    cli = start(w, fake, options);
    await fn({ w, fake, cli, diagnose });
    failed = false;
  } finally {
    if (cli && cli.child.exitCode === null) {
      try { process.kill(-cli.child.pid, 'SIGKILL'); } catch { /* gone */ }
    }
    killMarked(w.root);
    await fake.close();
    removeWorld(w, failed);
  }
}

async function firstPlan({ w, diagnose }) {
  const [item] = await waitFor('the plan in `plandesk pending`', () => {
    const items = pendingFrom(w, 'gemini');
    return items.length ? items : null;
  }, { seconds: 40, diagnose });
  return item;
}

/** The first request whose function response is exit_plan_mode's and matches `pattern`. */
function exitPlanResponse(fake, pattern) {
  for (const r of fake.main()) {
    const res = functionResponses(r.body).find((x) => x.name === 'exit_plan_mode' && pattern.test(x.text));
    if (res) return { request: r, text: res.text };
  }
  return undefined;
}

async function exit(cli, diagnose) {
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(resolve, 30_000, null); });
  const result = await Promise.race([cli.exited, timeout]);
  clearTimeout(timer);
  if (!result) throw new Error(`timed out after 30 s waiting for Gemini CLI to exit\n${diagnose()}`);
  return result;
}

test('Gemini CLI: plan → pending → reject with feedback → revision 2 → approve → it carries on', { timeout: 120_000 }, () => withGemini('gemini-review', async (ctx) => {
  const { w, fake, cli, diagnose } = ctx;
  // 1. The plan lands in Plandesk's inbox, from Gemini CLI, read from the plans folder.
  const first = await firstPlan(ctx);
  const run = first.runId;
  assert.equal(first.kind, 'plan');
  assert.equal(first.toolName, 'exit_plan_mode');
  assert.equal(first.workspace, w.ws);
  assert.ok(fake.plansDir.includes(first.source.session), `the session (${first.source.session}) owns the plans folder ${fake.plansDir}`);
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.path, join(fake.plansDir, PLAN_FILE));
  assert.equal(first.revision.title, 'Cache user lookups');

  // 2. Reject with feedback: the model reads "Tool execution blocked: …" with it, and revises.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const blocked = await waitFor('the feedback in the model\'s next request', () => exitPlanResponse(fake, /blocked/), { seconds: 30, diagnose });
  assert.match(blocked.text, /Tool execution blocked: Plan was not approved/);
  assert.ok(blocked.text.includes(`User feedback: ${FEEDBACK}`), blocked.text);

  // 3. The revised plan is revision 2 of the same thread, compared with the feedback between.
  const second = await secondPlan({ w, diagnose }, 'gemini');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);
  assert.equal(history[0].decision.feedback, FEEDBACK);
  const diff = plandesk(w, ['diff', String(history[0].id), String(history[1].id)]);
  assert.ok(diff.includes(FEEDBACK), diff);
  assert.match(diff, /\{\+ ?\(bounded\)\+\}/, diff);

  // 4. Approve exactly the revision seen: the CLI leaves plan mode and the model goes on.
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12)]);
  const approved = await waitFor('the approval in the model\'s next request', () => exitPlanResponse(fake, /Plan approved/), { seconds: 30, diagnose });
  assert.ok(approved.text.includes(join(fake.plansDir, PLAN_FILE)), approved.text);
  const system = JSON.stringify(approved.request.body.systemInstruction ?? '');
  assert.doesNotMatch(system, /Active Approval Mode: Plan/, 'out of plan mode');
  const { code } = await exit(cli, diagnose);
  assert.equal(code, 0, diagnose());
  assert.ok(cli.output().includes(FINAL), diagnose());
  assert.deepEqual(plandeskJson(w, ['history', run]).map((r) => r.status), ['rejected', 'approved']);
  assert.deepEqual(pendingFrom(w, 'gemini'), []);
}));

test('Gemini CLI: reject without feedback → the model is told to stop and wait', { timeout: 60_000 }, () => withGemini('gemini-stop', async (ctx) => {
  const { w, fake, cli, diagnose } = ctx;
  const item = await firstPlan(ctx);
  plandesk(w, ['reject', item.runId]);
  const blocked = await waitFor('the rejection in the model\'s next request', () => exitPlanResponse(fake, /blocked/), { seconds: 30, diagnose });
  assert.match(blocked.text, /Tool execution blocked: .*Stop now and wait for the user/);
  await exit(cli, diagnose);
  assert.ok(cli.output().includes(STOPPED), diagnose());
  assert.equal(exitPlanResponse(fake, /Plan approved/), undefined, 'never approved');
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['rejected']);
}));

test('Gemini CLI: nobody decides before the deadline → not approved', { timeout: 60_000 }, () => withGemini('gemini-deadline', async (ctx) => {
  const { w, fake, cli, diagnose } = ctx;
  const item = await firstPlan(ctx);
  const blocked = await waitFor('the expiry in the model\'s next request', () => exitPlanResponse(fake, /blocked/), { seconds: 30, diagnose });
  assert.match(blocked.text, /No decision was made on this plan in time/);
  await exit(cli, diagnose);
  assert.equal(exitPlanResponse(fake, /Plan approved/), undefined, 'never approved');
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['expired']);
}, { env: { PLANDESK_HOOK_DEADLINE: '3s' } }));

test('Gemini CLI: Ctrl+C (SIGINT to its process group) while its plan waits → the plan is marked abandoned', { timeout: 60_000 }, () => withGemini('gemini-ctrl-c', async (ctx) => {
  const { w, cli, diagnose } = ctx;
  const item = await firstPlan(ctx);
  process.kill(-cli.child.pid, 'SIGINT'); // what a terminal does on Ctrl+C
  await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'gemini').length === 0, { seconds: 15, diagnose });
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['abandoned']);
  await exit(cli, diagnose);
}));

// Gemini CLI lets the plan through when a hook runs past its `timeout`: with a timeout shorter
// than any deadline of ours, the hook must deny before it (it reads the timeout from the settings).
test('Gemini CLI: its hook timeout is short and nobody decides → denied before Gemini CLI gives up, never approved', { timeout: 60_000 }, () => withGemini('gemini-timeout', async (ctx) => {
  const { w, fake, cli, diagnose } = ctx;
  const item = await firstPlan(ctx);
  const blocked = await waitFor('the denial in the model\'s next request', () => exitPlanResponse(fake, /blocked/), { seconds: 30, diagnose });
  assert.match(blocked.text, /No decision was made on this plan in time/);
  await exit(cli, diagnose);
  assert.doesNotMatch(cli.output(), /Hook timed out/, 'the hook answered in time');
  assert.equal(exitPlanResponse(fake, /Plan approved/), undefined, 'never approved');
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['expired']);
}, { hookTimeoutMs: 4000 }));

// Gemini CLI leaves its hook running when it dies: the hook notices its parent is gone.
const stops = {
  'stopped (SIGTERM)': 'SIGTERM',
  'killed (SIGKILL)': 'SIGKILL',
};
for (const [how, signal] of Object.entries(stops)) {
  test(`Gemini CLI: its process is ${how} while its plan waits → the plan is marked abandoned`, { timeout: 60_000 }, () => withGemini('gemini-stopped', async (ctx) => {
    const { w, cli, diagnose } = ctx;
    const item = await firstPlan(ctx);
    // `gemini` relaunches itself in a child process that runs the session and the hook (the
    // outer one ignores SIGTERM). Stop that one, as a crash or a supervisor would.
    const [hook] = processes(w.root, /plandesk hook gemini/);
    const agent = parentOf(hook);
    assert.ok(agent && agent !== cli.child.pid, `the process that runs the hook: ${agent}`);
    process.kill(agent, signal);
    await exit(cli, diagnose);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'gemini').length === 0, { seconds: 5, diagnose });
    assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['abandoned']);
    await waitFor('the hook to exit', () => processes(w.root, /plandesk hook gemini/).length === 0, { seconds: 5, diagnose });
  }));
}

test('Gemini CLI: after the approval its writes and commands are recorded and held against the plan', { timeout: 90_000 }, () => withGemini('gemini-work', async (ctx) => {
  const { w, cli, diagnose } = ctx;
  const item = await firstPlan(ctx);
  plandesk(w, ['approve', item.runId]);
  const { code } = await exit(cli, diagnose);
  assert.equal(code, 0, diagnose());
  const progress = await waitFor('the agent\'s end in `plandesk progress`', () => {
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
  assert.deepEqual(progress.commands.map((c) => [c.command, c.exitCode]), [['echo cached; exit 3', 3]]);
}, { work: true }));
