// The real OpenCode (pinned in package.json), interactive in tmux, with its plan agent
// (OPENCODE_EXPERIMENTAL_PLAN_MODE=1), against a fake OpenAI Chat Completions API: the plan the
// agent writes to its plan file reaches `plandesk pending` through Plandesk's plugin (put in
// place by `plandesk install opencode`), which holds `plan_exit` in `tool.execute.before`; a
// rejection's feedback reaches the model as plan_exit's result, and the revised plan is revision
// 2; an approval of that exact revision lets plan_exit run, which still asks OpenCode's own
// "switch to the build agent?"; what the model then does is recorded against the plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentText, toolNames, toolResults } from './fake-openai.mjs';
import { OPENCODE_TOOLS, loadPluginAlone, planExitResult } from './opencode-plugin.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, ROOT, agentEnv, assertScenarioWork, install, nextWork,
  pendingFrom, plandesk, plandeskJson, processes, removeWorld, secondPlan, sleep, statuses,
  typeFirstPlan, waitFor, withTmuxAgent, world,
} from './harness.mjs';

const OPENCODE = process.env.OPENCODE_BIN || join(BIN, 'opencode');
const VERSION = '1.18.33';
const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping as told.';
const HOOK = /plandesk.* hook opencode/;
/** OpenCode's own message after plan_exit ran (a synthetic user message, agent "build"). */
const SWITCHED = /The plan at (\S+) has been approved, you can now edit files\. Execute the plan/;
/** OpenCode's own question, asked by plan_exit once the plugin let it run. */
const QUESTION = /Would you like to switch to the build\s+agent and start implementing\?/;

/**
 * The fake model. A conversation's first request with the plan agent: `write` PLAN_1 to the
 * plan file OpenCode names in its plan-mode reminder ("create your plan at <path> using the
 * write tool"), then `plan_exit` (it takes no arguments). plan_exit denied with "User feedback:":
 * write PLAN_2 there, then plan_exit again; denied otherwise: stop with a text. Approved: OpenCode
 * adds "The plan at … has been approved" as a user message, and the model does the world's
 * `work` steps one by one (matched by call id), then FINAL. Requests without tools (the title)
 * get a text. Past 20 turns it stops.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ text: 'Cache plan' }]; // the session's title
  if (fake.main().length > 20) return [{ text: 'fake model: too many turns, stopping' }];
  const last = body.messages?.at(-1);
  // Tool results count only when they are the last thing said.
  const [result] = last?.role === 'tool' ? toolResults(body) : [];
  if (!result) {
    if (SWITCHED.test(contentText(last?.content))) return fake.work.length ? [fake.work[0]] : [{ text: FINAL }];
    if (!toolNames(body).includes('plan_exit')) return [{ text: 'fake model: not the plan agent' }];
    const named = JSON.stringify(body.messages).match(/create your plan at (\S+?\.md) using the write tool/);
    if (!named) return [{ text: 'fake model: no plan file named' }];
    fake.planPath = named[1];
    return [{ tool: 'write', args: { filePath: fake.planPath, content: PLAN_1 } }];
  }
  if (result.name === 'write' && fake.work.every((step) => step.id !== result.id)) {
    return [{ tool: 'plan_exit', args: {} }];
  }
  if (result.name === 'plan_exit') {
    if (result.text.includes('User feedback:')) return [{ tool: 'write', args: { filePath: fake.planPath, content: PLAN_2 } }];
    return [{ text: STOPPED }];
  }
  return nextWork(fake, result, FINAL);
}

/** What `opencode` runs with: the world's HOME, the plan agent, nothing fetched or updated. */
const openCodeEnv = (w, extra = {}) => agentEnv(w, {
  OPENCODE_EXPERIMENTAL_PLAN_MODE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1', // models.dev: the fake provider is in opencode.json
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  ...extra,
});

/**
 * OpenCode's settings as a person would have them (the fake model as an OpenAI-compatible
 * provider, no updates, no sharing), then Plandesk's plugin from `plandesk install opencode`,
 * and the proof that OpenCode loads it. The workspace is a git repository, so the plan agent
 * writes its plans into `<workspace>/.opencode/plans/`.
 */
function configure(w, fake, { command: replaced, proveLoaded } = {}) {
  const config = join(w.home, '.config/opencode');
  mkdirSync(config, { recursive: true });
  writeFileSync(join(config, 'opencode.json'), JSON.stringify({
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    model: `fake/${fake.model}`,
    provider: {
      fake: {
        npm: '@ai-sdk/openai-compatible', // bundled in OpenCode: nothing is installed for it
        name: 'Fake',
        options: { baseURL: fake.url, apiKey: 'sk-test' },
        models: { [fake.model]: { name: 'Fake model', tool_call: true } },
      },
    },
  }, null, 2));
  // At start OpenCode installs @opencode-ai/plugin into each of its config folders with npm,
  // unless node_modules exists and package-lock.json already lists it. Plandesk's plugin
  // imports nothing: skip that install (seconds, and the registry).
  mkdirSync(join(config, 'node_modules'));
  writeFileSync(join(config, 'package-lock.json'), JSON.stringify({
    packages: { '': { dependencies: { '@opencode-ai/plugin': VERSION } } },
  }));
  const git = spawnSync('git', ['init', '-q'], { cwd: w.ws, encoding: 'utf8' });
  assert.equal(git.status, 0, git.stderr);

  // With OpenCode on the PATH, as a person has it: install checks that OpenCode loads the plugin.
  const installed = install(w, 'opencode', proveLoaded
    ? { PATH: `${BIN}:${process.env.PATH}`, XDG_CONFIG_HOME: '', OPENCODE_DISABLE_AUTOUPDATE: '1' }
    : { PATH: '/usr/bin:/bin', XDG_CONFIG_HOME: '' });
  assert.equal(installed.status, 0, installed.stderr);
  assert.match(installed.stderr, /switch to its build agent/, 'install tells the person about OpenCode\'s own question');
  assert.match(installed.stderr, proveLoaded
    ? /OpenCode loads the plugin \(checked with `opencode debug config`\)/
    : /Could not check that OpenCode loads the plugin: cannot run opencode/, installed.stderr);
  const file = join(config, 'plugins/plandesk.js');
  const plugin = readFileSync(file, 'utf8');
  const command = JSON.parse(plugin.match(/^const PLANDESK = (\[.*\]); \/\/ set by plandesk install$/m)[1]);
  assert.equal(command[0], CLI, 'the plugin runs this build');
  assert.match(plugin, /^const RECORD = true; \/\/ set by plandesk install$/m);
  const source = readFileSync(join(ROOT, 'src/source/opencode/plandesk.js'), 'utf8');
  const filled = (text) => text.replace(/^const (PLANDESK|RECORD) = .*$/gm, '');
  assert.equal(filled(plugin), filled(source), 'the installed plugin is this source\'s (rebuild plandesk?)');

  if (proveLoaded) {
    // OpenCode runs every plugin for any command; the plugin's own log line says it loaded (one
    // that fails to load is only logged, or not at all for a syntax error).
    const loaded = spawnSync(OPENCODE, ['debug', 'config', '--print-logs'], {
      cwd: w.ws, env: openCodeEnv(w), encoding: 'utf8', timeout: 60_000,
    });
    assert.equal(loaded.status, 0, loaded.stderr);
    assert.ok(JSON.parse(loaded.stdout).plugin.includes(`file://${file}`), 'OpenCode finds the plugin');
    assert.ok(loaded.stderr.includes(`message="Plandesk plugin loaded" plugin=file://${file} `),
      `OpenCode loads the plugin:\n${loaded.stderr}`);
    assert.doesNotMatch(loaded.stderr, /failed to load plugin/);
  }
  if (replaced) {
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^const PLANDESK = .*$/m, `const PLANDESK = ${JSON.stringify(replaced)};`));
  }
}

/** The agent OpenCode's prompt box shows ("┃  Plan · Fake model Fake"). */
const agentShown = (tmux) => [...tmux.screen().matchAll(/┃\s+(Plan|Build) · Fake model Fake/g)].at(-1)?.[1];
const questionShown = (tmux) => QUESTION.test(tmux.screen().replace(/\s*┃\s*/g, ' '));

/**
 * Runs `fn(ctx)` with OpenCode started with its plan agent in tmux in a world of its own
 * (`options.work`: what the model does after an approval, and prove the plugin loads first;
 * `options.command(w)`: the plugin's `plandesk` command instead of the installed one);
 * afterwards (also on failure) stops tmux, every process of that world, and the fake.
 */
async function withOpenCode(name, fn, options = {}) {
  const start = async ({ w, fake, tmux, diagnose }) => {
    configure(w, fake, { command: options.command?.(w), proveLoaded: options.work });
    tmux.start([OPENCODE, '--agent', 'plan'], { cwd: w.ws, env: openCodeEnv(w) });
    await waitFor('OpenCode to start with its plan agent', () => /Ask anything/.test(tmux.screen()) && agentShown(tmux) === 'Plan',
      { seconds: 60, diagnose });
  };
  return withTmuxAgent(name, { brain, tools: OPENCODE_TOOLS, work: options.work, start }, fn);
}

/** Types the request and waits for its plan in the inbox. */
const firstPlan = (ctx) => typeFirstPlan(ctx, 'opencode', PROMPT);

/** The first request in which OpenCode says plan_exit ran (its result, then its own message). */
const switched = (fake) => fake.main().find((r) => SWITCHED.test(contentText(r.body.messages?.at(-1)?.content)));

test('OpenCode: plan → pending → reject with feedback → revision 2 → approve → its own "switch to build?" → it works, recorded', { timeout: 180_000 }, (t) => withOpenCode('opencode-review', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  // 1. The plan lands in Plandesk's inbox, from OpenCode, read from the plan file it named.
  const first = await firstPlan(ctx);
  const run = first.runId;
  assert.equal(first.kind, 'plan');
  assert.equal(first.toolName, 'plan_exit');
  assert.equal(first.workspace, w.ws);
  assert.match(first.source.session, /^ses_/, 'the OpenCode session is named');
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.equal(first.revision.path, fake.planPath, 'the plan file OpenCode named');
  assert.match(fake.planPath, new RegExp(`^${w.ws}/\\.opencode/plans/\\d+-[a-z]+-[a-z]+\\.md$`));
  assert.match(first.revision.body, /in-memory cache/);
  assert.equal(questionShown(tmux), false, 'OpenCode\'s own question waits for the plugin');
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed (the plugin sends it)');

  // 2. Reject with feedback: the deny's reason is plan_exit's result, verbatim; OpenCode stays
  // with its plan agent, and the model revises in the same turn.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => planExitResult(fake, /User feedback:/), { seconds: 30, diagnose });
  const feedbackText = toolResults(denied.body)[0].text;
  assert.match(feedbackText, /^Plan was not approved\. The user wants revisions\./);
  assert.ok(feedbackText.includes(`User feedback: ${FEEDBACK}`), feedbackText);

  // 3. The revised plan is revision 2 of the same thread, compared with the feedback between.
  const second = await secondPlan({ w, diagnose }, 'opencode');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  assert.equal(second.source.session, first.source.session);
  assert.equal(agentShown(tmux), 'Plan', 'still the plan agent after the rejection');
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);
  assert.equal(history[0].decision.feedback, FEEDBACK);
  const diff = plandesk(w, ['diff', String(history[0].id), String(history[1].id)]);
  assert.ok(diff.includes(FEEDBACK), diff);
  assert.match(diff, /\{\+ ?\(bounded\)\+\}/, diff);

  // 4. Approve exactly the revision seen: plan_exit runs, and asks OpenCode's own question.
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12), '--note', 'Keep the cache per process']);
  await waitFor('OpenCode\'s own "switch to the build agent?"', () => questionShown(tmux), { seconds: 30, diagnose });
  await sleep(800);
  assert.equal(switched(fake), undefined, 'the plugin\'s allow alone does not switch agents');
  assert.deepEqual(statuses(w, run), ['rejected', 'approved']);
  tmux.key('Enter'); // "1. Yes" is selected
  const approved = await waitFor('OpenCode\'s switch in the model\'s next request', () => switched(fake), { seconds: 30, diagnose });
  const messages = approved.body.messages;
  assert.equal(messages.at(-2).role, 'tool');
  assert.match(contentText(messages.at(-2).content), /^User approved switching to build agent\./);
  assert.match(contentText(messages.at(-2).content), /\n\nReviewer notes: Keep the cache per process$/, 'the note, after OpenCode\'s words');
  assert.equal(SWITCHED.exec(contentText(messages.at(-1).content))[1], `.opencode/plans/${fake.planPath.split('/').pop()}`);

  // 5. The model works (a file outside the plan, a planned edit, two commands) and finishes.
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 40, diagnose });
  assert.equal(agentShown(tmux), 'Build', 'OpenCode switched to its build agent');
  // bash's exit code is the plugin's `exit_code` (OpenCode's metadata.exit).
  await assertScenarioWork(w, run, {
    finishedBy: 'session idle', diagnose, commands: [['echo cached', 0], ['ls src/eviction.test.js', 2]],
  });
  assert.deepEqual(statuses(w, run), ['rejected', 'approved'], 'the records change no decision');
  assert.deepEqual(pendingFrom(w, 'opencode'), []);
}, { work: true }));

test('OpenCode: reject without feedback → the model is told to stop and wait, still the plan agent', { timeout: 90_000 }, () => withOpenCode('opencode-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  plandesk(w, ['reject', item.runId]);
  const denied = await waitFor('the rejection in the model\'s next request', () => planExitResult(fake, /not approved/), { seconds: 30, diagnose });
  assert.match(toolResults(denied.body)[0].text, /^Plan was not approved\..*Stop now and wait for the user/s);
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.equal(agentShown(tmux), 'Plan', 'still the plan agent');
  assert.equal(questionShown(tmux), false, 'OpenCode\'s own question never came');
  assert.equal(switched(fake), undefined, 'never approved');
  assert.deepEqual(statuses(w, item.runId), ['rejected']);
  assert.deepEqual(pendingFrom(w, 'opencode'), []);
}));

test('OpenCode: Plandesk cannot be run → the plan is not approved (the plugin fails closed)', { timeout: 90_000 }, () => withOpenCode('opencode-closed', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  tmux.type(PROMPT);
  const denied = await waitFor('the plugin\'s error in the model\'s next request', () => planExitResult(fake, /./), { seconds: 40, diagnose });
  assert.match(toolResults(denied.body)[0].text,
    /^Plandesk could not review this plan \(`plandesk hook opencode` could not be started: .*ENOENT.*\), so it is not approved\. Do not go on with it; tell the user\.$/);
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.equal(agentShown(tmux), 'Plan', 'still the plan agent');
  assert.equal(questionShown(tmux), false, 'OpenCode\'s own question never came');
  assert.equal(switched(fake), undefined, 'never approved');
  assert.deepEqual(pendingFrom(w, 'opencode'), []);
}, { command: (w) => [join(w.root, 'no-such-plandesk')] }));

// An agent that gives up on its plan must not leave it waiting in the inbox. OpenCode gives a
// plugin's hook no abort signal: the plugin stops its `plandesk hook opencode` (SIGTERM) when
// the session's loop ends while the plan waits (Esc Esc: `session.error` MessageAbortedError,
// then `session.idle`), when OpenCode disposes its plugins (it quits), and when its process
// exits. A killed OpenCode cannot: its terminal's SIGHUP reaches the hook (same process
// group), and the hook notices it has a new parent anyway.
const quits = {
  'the person interrupts with Esc Esc': async ({ tmux, diagnose }) => {
    tmux.key('Escape');
    await waitFor('"esc again to interrupt"', () => /esc again to interrupt/.test(tmux.screen()), { seconds: 5, diagnose });
    tmux.key('Escape');
  },
  'it quits with ctrl+c': ({ tmux }) => tmux.key('C-c'),
  'its terminal is closed (SIGHUP)': ({ tmux }) => tmux.kill(),
  'it is stopped (SIGTERM)': ({ tmux }) => process.kill(tmux.pid(), 'SIGTERM'),
  'it is killed (SIGKILL)': ({ tmux }) => process.kill(tmux.pid(), 'SIGKILL'),
};
for (const [how, quit] of Object.entries(quits)) {
  test(`OpenCode: ${how} while its plan waits → the plan is marked abandoned`, { timeout: 90_000 }, (t) => withOpenCode('opencode-quit', async (ctx) => {
    const { w, fake, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const [hook] = processes(w.root, HOOK);
    assert.ok(hook, 'the hook waits');
    const quitAt = Date.now();
    await quit(ctx);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'opencode').length === 0, { seconds: 15, diagnose });
    t.diagnostic(`abandoned ${((Date.now() - quitAt) / 1000).toFixed(1)} s after the quit`);
    assert.deepEqual(statuses(w, item.runId), ['abandoned']);
    const audit = plandesk(w, ['--json', 'audit', item.runId]).trim().split('\n').map((l) => JSON.parse(l));
    const decided = audit.find((e) => e.kind === 'decided');
    assert.equal(decided.process, 'hook:opencode', `the hook closed it: ${JSON.stringify(decided)}`);
    await waitFor('the hook to exit', () => processes(w.root, HOOK).length === 0, { seconds: 5, diagnose });
    assert.equal(switched(fake), undefined, 'never approved');
    if (how.includes('Esc')) {
      await waitFor('"interrupted" on the screen', () => /interrupted/.test(tmux.screen()), { seconds: 5, diagnose });
      assert.equal(agentShown(tmux), 'Plan', 'still the plan agent');
      assert.equal(questionShown(tmux), false, 'OpenCode\'s own question never came');
    }
  }));
}

// The plugin alone, in Node, with a stand-in for `plandesk` (no OpenCode, no store): what it
// sends, and that anything but an explicit allow fails closed.
const loadPlugin = (w, mode, options) => loadPluginAlone(w, mode, { prompt: PROMPT, ...options });

test('OpenCode plugin: the plan file OpenCode names for the session, an allow, then the work recorded in order', { timeout: 30_000 }, async () => {
  const w = world('opencode-plugin');
  try {
    const { hooks, logs, sent, planExit } = await loadPlugin(w, 'allow');
    assert.deepEqual(logs.map((l) => l.message), ['Plandesk plugin loaded']);
    await hooks['tool.execute.after']({ tool: 'bash', sessionID: 'ses_1', args: { command: 'ls' } }, { output: 'x', metadata: { exit: 0 } });
    await planExit();
    await hooks['tool.execute.after']({ tool: 'bash', sessionID: 'ses_1', args: { command: 'ls' } }, { output: 'x', metadata: { exit: 0 } });
    // plan_exit ran: the person also said Yes to OpenCode's question (No or Esc fail it).
    const result = { output: 'User approved switching to build agent.' };
    await hooks['tool.execute.after']({ tool: 'plan_exit', sessionID: 'ses_1', callID: 'c1', args: {} }, result);
    assert.equal(result.output, 'User approved switching to build agent.\n\nReviewer notes: Keep it small', 'what the reviewer added');
    const plan = join(w.ws, '.opencode/plans/1765000000000-brave-squid.md');
    assert.deepEqual(sent('hook'), [{ session_id: 'ses_1', cwd: w.ws, plan_file: plan, prompt: PROMPT }],
      'the expected plan file even before it exists: Plandesk tells the model to write it');
    const big = 'é'.repeat(40_000); // 80,000 bytes
    await hooks['tool.execute.after']({ tool: 'write', sessionID: 'ses_1', args: { filePath: 'a.js', content: big } }, { output: 'Wrote file successfully.', metadata: {} });
    await hooks['tool.execute.after']({ tool: 'read', sessionID: 'ses_1', args: { filePath: 'a.js' } }, { output: 'x', metadata: {} });
    await hooks['tool.execute.after']({ tool: 'bash', sessionID: 'ses_1', args: { command: 'false' } }, { output: big, metadata: { exit: 1 } });
    await hooks['tool.execute.after']({ tool: 'bash', sessionID: 'ses_2', args: { command: 'ls' } }, { output: '', metadata: { exit: 0 } });
    await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_1' } } });
    const records = await waitFor('3 records', () => (sent('record').length >= 3 ? sent('record') : null), { seconds: 10 });
    await sleep(300);
    assert.deepEqual(records.map((r) => [r.session_id, r.tool ?? r.event, r.exit_code]), [
      ['ses_1', 'write', undefined], ['ses_1', 'bash', 1], ['ses_1', 'idle', undefined],
    ], 'once plan_exit ran only, the session\'s own, in order; no read');
    assert.equal(Buffer.byteLength(records[0].args.content), 64 * 1024, 'long arguments cut to 64 KiB');
    assert.equal(Buffer.byteLength(records[1].output), 64 * 1024, 'the output cut to 64 KiB');
    assert.equal(sent('record').length, 3);
  } finally {
    removeWorld(w, false);
  }
});

test('OpenCode plugin: where the plan file is without git, or when OpenCode cannot say', { timeout: 30_000 }, async () => {
  const w = world('opencode-plugin-files');
  const xdg = process.env.XDG_DATA_HOME;
  try {
    process.env.XDG_DATA_HOME = join(w.root, 'data-home');
    const noGit = await loadPlugin(w, 'allow', { vcs: null });
    await noGit.planExit();
    assert.equal(noGit.sent('hook')[0].plan_file, join(w.root, 'data-home/opencode/plans/1765000000000-brave-squid.md'));

    // The session lookup fails: the session's events, else the plan file it wrote last.
    const unknown = await loadPlugin(w, 'allow', { session: null });
    await unknown.hooks.event({ event: { type: 'session.created', properties: { sessionID: 'ses_1', info: { id: 'ses_1', slug: 'calm-river', time: { created: 1765000000001 } } } } });
    await unknown.planExit('ses_1');
    const written = join(w.ws, '.opencode/plans/1765000000002-quiet-lake.md');
    mkdirSync(join(w.ws, '.opencode/plans'), { recursive: true });
    writeFileSync(written, '# Plan\n');
    await unknown.hooks['tool.execute.after']({ tool: 'write', sessionID: 'ses_2', args: { filePath: written, content: '# Plan\n' } }, { output: '' });
    await unknown.planExit('ses_2');
    await assert.rejects(unknown.planExit('ses_3'),
      { message: 'Plandesk could not review this plan (the session\'s plan file could not be found), so it is not approved. Do not go on with it; tell the user.' });
    assert.deepEqual(unknown.sent('hook').map((h) => h.plan_file), [join(w.ws, '.opencode/plans/1765000000001-calm-river.md'), written]);
  } finally {
    if (xdg === undefined) delete process.env.XDG_DATA_HOME; else process.env.XDG_DATA_HOME = xdg;
    removeWorld(w, false);
  }
});

test('OpenCode plugin: a deny\'s reason is thrown as is; anything but an explicit answer fails closed', { timeout: 30_000 }, async () => {
  const w = world('opencode-plugin-deny');
  try {
    const deny = await loadPlugin(w, 'deny');
    await assert.rejects(deny.planExit(), { message: 'Make it smaller' });
    const cases = {
      failed: /^Plandesk could not review this plan \(`plandesk hook opencode` exited with status 1\)/,
      junk: /^Plandesk could not review this plan \(`plandesk hook opencode` gave no decision\)/,
      empty: /^Plandesk could not review this plan \(`plandesk hook opencode` gave no decision\)/,
      unexplained: /^Plandesk could not review this plan \(`plandesk hook opencode` gave no decision\)/,
      missing: /^Plandesk could not review this plan \(`plandesk hook opencode` could not be started: .*ENOENT/,
    };
    for (const [mode, message] of Object.entries(cases)) {
      const plugin = await loadPlugin(w, mode);
      await assert.rejects(plugin.planExit(), { message }, mode);
      assert.match(plugin.logs.at(-1).message, message, `${mode}: in OpenCode's log too`);
      await plugin.hooks['tool.execute.after']({ tool: 'bash', sessionID: 'ses_1', args: { command: 'ls' } }, { output: '', metadata: { exit: 0 } });
    }
    await sleep(300);
    assert.deepEqual(deny.sent('record'), [], 'nothing recorded without an approval');
  } finally {
    removeWorld(w, false);
  }
});

test('OpenCode plugin: the session stopped while its plan waits → the hook gets SIGTERM', { timeout: 30_000 }, async () => {
  const w = world('opencode-plugin-stop');
  try {
    for (const event of [
      { type: 'session.error', properties: { sessionID: 'ses_1', error: { name: 'MessageAbortedError', data: { message: 'Aborted' } } } },
      { type: 'session.idle', properties: { sessionID: 'ses_1' } },
      { type: 'session.deleted', properties: { sessionID: 'ses_1', info: { id: 'ses_1' } } },
    ]) {
      const { hooks, out, sent, planExit } = await loadPlugin(w, 'wait');
      const waiting = planExit();
      await waitFor('the hook', () => sent('hook').length === 1, { seconds: 10 });
      await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_other' } } });
      await hooks.event({ event });
      await assert.rejects(waiting, { message: 'The plan was not reviewed: the OpenCode session was stopped.' }, event.type);
      assert.equal(readFileSync(join(out, 'signal'), 'utf8'), 'SIGTERM', event.type);
    }
    // Stopped while the plugin still looks up the session: it never asks.
    const early = await loadPlugin(w, 'allow', { lookupMs: 300 });
    const asking = early.planExit();
    await early.hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_1' } } });
    await assert.rejects(asking, { message: 'The plan was not reviewed: the OpenCode session was stopped.' });
    assert.deepEqual(early.sent('hook'), []);

    const { hooks, out, sent, planExit } = await loadPlugin(w, 'wait');
    const waiting = planExit();
    await waitFor('the hook', () => sent('hook').length === 1, { seconds: 10 });
    await hooks.dispose();
    await assert.rejects(waiting, /not reviewed/);
    assert.equal(readFileSync(join(out, 'signal'), 'utf8'), 'SIGTERM', 'OpenCode disposing its plugins');
  } finally {
    removeWorld(w, false);
  }
});
