// The real Factory Droid CLI (pinned in package.json), interactive in tmux, in spec mode,
// offline (Airgap Mode with a BYOK custom model) against a fake Chat Completions API: its spec
// (ExitSpecMode) reaches `plandesk pending` through the PreToolUse hook `plandesk install droid`
// put in place; a rejection's feedback reaches the model, whose revised spec is revision 2; an
// approval lets Droid leave spec mode, and what the model then does (a file, an edit, a command)
// is recorded by the PostToolUse and Stop hooks for `plandesk progress`.
//
// Why the TUI and not `droid exec --use-spec`: in exec, Droid 0.225.2 leaves spec mode as soon
// as the model calls ExitSpecMode, before the hook runs, and then refuses the call itself; a
// denied spec cannot be revised there (see README.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startFakeOpenAI, toolNames, toolResults } from './fake-openai.mjs';
import {
  CLI, FEEDBACK, PROMPT, Tmux, agentEnv, endWorld, install, parentOf, pendingFrom, plandesk,
  plandeskJson, processes, screenDiagnosis, secondPlan, sleep, typeFirstPlan, waitFor, world,
} from './harness.mjs';

// Droid's own binary (its npm launcher, @factory/cli, pins a linux-x64 build that was never
// published, so the platform package is installed by name).
const DROID = join(import.meta.dirname, 'node_modules/@factory/cli-linux-x64/bin/droid');
const PLAN_1 = {
  title: 'Cache user lookups',
  plan: '1. Add an in-memory cache in `src/fetch.js`.\n2. Invalidate it on writes.\n',
};
const PLAN_2 = {
  title: 'Cache user lookups (bounded)',
  plan: '# Cache user lookups (bounded)\n\n1. Add an LRU cache of at most 1000 entries in `src/cache.js`.\n'
    + '2. Use it in `src/fetch.js`.\n3. Run `npm test` to check the eviction order.\n',
};
const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping and waiting for the user.';
/** What the model does once the spec is approved: a planned file, an edit, a command, a failing one. */
const WORK = [
  { tool: 'Create', args: { file_path: 'src/cache.js', content: 'export const cache = new Map();\n' } },
  { tool: 'Edit', args: { file_path: 'src/fetch.js', old_str: 'return fetch', new_str: 'return cache.get(id) ?? fetch' } },
  { tool: 'Execute', args: { command: 'echo cached', riskLevelReason: 'Prints a word', riskLevel: 'low' } },
  { tool: 'Execute', args: { command: 'echo cached; exit 3', riskLevelReason: 'Prints a word', riskLevel: 'low' } },
];

/**
 * The fake model. First (spec mode): ExitSpecMode with PLAN_1. A denied ExitSpecMode ("Error: …")
 * with feedback: ExitSpecMode again with PLAN_2; denied without feedback: stop. An approved one
 * (`{"approved":true,…}`): the WORK steps one by one, then FINAL. Past 14 turns it only says so.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ text: 'Cache plan' }]; // a side request (the session's title)
  if (fake.main().length > 14) return [{ text: 'fake model: too many turns, stopping' }];
  const [result] = toolResults(body);
  if (!result) return [{ tool: 'ExitSpecMode', args: PLAN_1 }];
  if (result.name === 'ExitSpecMode') {
    if (result.text.startsWith('Error:') && result.text.includes('User feedback:')) return [{ tool: 'ExitSpecMode', args: PLAN_2 }];
    if (result.text.startsWith('Error:')) return [{ text: STOPPED }];
    fake.step = 0;
  }
  const next = WORK[fake.step++];
  return next ? [next] : [{ text: FINAL }];
}

/**
 * Sets Droid up as a person would for offline use (a BYOK model; spec mode and medium autonomy
 * as session defaults; the workspace trusted, else no hook runs), adds the hooks with `plandesk
 * install droid`, and starts the TUI in tmux (`env` added to its environment, which its hooks
 * inherit). With `hooksJson`, `~/.factory/hooks.json` exists beforehand, so the hooks go there
 * (Droid reads a folder's hooks.json over its settings.json). Returns when Droid shows its
 * spec-mode prompt.
 */
async function start(w, fake, tmux, diagnose, { env = {}, hooksJson = false } = {}) {
  mkdirSync(join(w.home, '.factory'));
  const settingsFile = join(w.home, '.factory/settings.json');
  writeFileSync(settingsFile, JSON.stringify({
    customModels: [{
      model: fake.model, displayName: 'Fake', provider: 'generic-chat-completion-api',
      baseUrl: fake.url, apiKey: 'x', maxOutputTokens: 4096,
    }],
    sessionDefaultSettings: { model: 'custom:Fake-0', interactionMode: 'spec', autonomyLevel: 'medium' },
    trustedFolders: { [w.ws]: { trustedAt: new Date().toISOString() } },
  }, null, 2));
  const hooksFile = join(w.home, '.factory/hooks.json');
  if (hooksJson) writeFileSync(hooksFile, '{}\n');
  const installed = install(w, 'droid');
  assert.equal(installed.status, 0, installed.stderr);
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
  assert.equal(settings.customModels[0].baseUrl, fake.url, 'install keeps the other settings');
  const hooks = hooksJson ? JSON.parse(readFileSync(hooksFile, 'utf8')) : settings.hooks;
  if (hooksJson) assert.equal(settings.hooks, undefined, 'the hooks go to hooks.json, at its top level');
  assert.deepEqual(Object.keys(hooks).sort(), ['PostToolUse', 'PreToolUse', 'Stop']);
  const [group] = hooks.PreToolUse;
  assert.equal(group.matcher, '^ExitSpecMode$');
  assert.ok(group.hooks[0].command.startsWith(CLI), `the hook runs this build: ${group.hooks[0].command}`);
  assert.match(group.hooks[0].command, /plandesk hook droid$/);
  assert.ok(group.hooks[0].timeout > 600 && group.hooks[0].timeout <= 2147483,
    `a long timeout, in seconds, that Droid's timer can hold: ${group.hooks[0].timeout}`);
  const [post] = hooks.PostToolUse;
  assert.equal(post.matcher, '^(ExitSpecMode|Create|Edit|MultiEdit|ApplyPatch|Execute)$');
  assert.match(post.hooks[0].command, /plandesk record droid$/);
  assert.match(hooks.Stop[0].hooks[0].command, /plandesk record droid$/);

  tmux.start([DROID], {
    cwd: w.ws,
    env: agentEnv(w, { FACTORY_AIRGAP_ENABLED: 'true', FACTORY_DROID_AUTO_UPDATE_ENABLED: 'false', ...env }),
  });
  await waitFor('Droid to start in spec mode', () => /── Spec ─/.test(tmux.screen()), { seconds: 40, diagnose });
  await sleep(300);
}

/**
 * Runs `fn({w, fake, tmux, diagnose})` with Droid started in spec mode in a world of its own
 * (`options` as for `start`); afterwards (also on failure) stops tmux, every process of that
 * world, and the fake.
 */
async function withDroid(name, fn, options = {}) {
  const w = world(name);
  const fake = await startFakeOpenAI(brain);
  fake.step = 0;
  const tmux = new Tmux(w);
  const diagnose = () => screenDiagnosis(name, fake, tmux, (r) => {
    const res = toolResults(r.body).map((x) => `${x.name}: ${x.text.slice(0, 160)}`);
    return `→ ${JSON.stringify(r.answer ?? null).slice(0, 160)} | results: ${JSON.stringify(res)}`;
  }, {
    processes: processes(w.root, /./).map((pid) => `  ${pid} (parent ${parentOf(pid)}): ${commandLine(pid).slice(0, 120)}`).join('\n'),
  });
  let failed = true;
  try {
    await start(w, fake, tmux, diagnose, options);
    await fn({ w, fake, tmux, diagnose });
    failed = false;
  } finally {
    await endWorld({ w, tmux, fake }, failed);
  }
}

/** Types the request and waits for its spec in the inbox. */
const firstPlan = (ctx) => typeFirstPlan(ctx, 'droid', PROMPT);

/** The first request whose ExitSpecMode result matches `pattern`: {request, text}. */
function exitSpecResult(fake, pattern) {
  for (const request of fake.main()) {
    const res = toolResults(request.body).find((x) => x.name === 'ExitSpecMode' && pattern.test(x.text));
    if (res) return { request, text: res.text };
  }
  return undefined;
}

/** Whether the prompt box at the bottom of the screen is titled "Spec" (Droid is in spec mode). */
const inSpecMode = (tmux) => /╭── Spec ─/.test(tmux.screen().trimEnd().split('\n').slice(-6).join('\n'));

/** A process's command line, its arguments joined by spaces. */
function commandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' ').trim();
  } catch {
    return '(gone)';
  }
}

/** Droid's two processes: the TUI in the pane, and its child that runs the session and the hooks. */
function droidProcesses(w) {
  const all = processes(w.root, /^\S*\/droid( |$)/);
  const session = processes(w.root, /^\S*\/droid exec --input-format stream-jsonrpc/);
  const tui = all.filter((pid) => !session.includes(pid) && session.some((s) => parentOf(s) === pid));
  assert.equal(session.length, 1, `one session process: ${all}`);
  assert.equal(tui.length, 1, `one TUI process: ${all}`);
  return { tui: tui[0], session: session[0] };
}

test('Droid: spec → pending → reject with feedback → revision 2 → approve → its work is recorded', { timeout: 90_000 }, (t) => withDroid('droid-review', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  // 1. The spec lands in Plandesk's inbox, from Droid, titled by ExitSpecMode's title.
  const first = await firstPlan(ctx);
  const run = first.runId;
  assert.equal(first.source.kind, 'droid');
  assert.equal(first.toolName, 'ExitSpecMode');
  assert.equal(first.workspace, w.ws);
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, PLAN_1.title);
  assert.equal(first.revision.body.trim(), PLAN_1.plan.trim());
  const session = first.source.session;
  assert.ok(existsSync(join(w.home, '.factory/sessions', w.ws.replaceAll('/', '-'), `${session}.jsonl`)),
    `the session is Droid's own (${session})`);
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed (from Droid\'s transcript)');

  // 2. Reject with feedback: the model reads the hook's reason as ExitSpecMode's error, and Droid
  //    stays in spec mode (it offers every tool either way; it says when spec mode ends).
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => exitSpecResult(fake, /^Error:/), { seconds: 30, diagnose });
  assert.ok(denied.text.startsWith('Error: Plan was not approved.'), denied.text);
  assert.ok(denied.text.includes(`User feedback: ${FEEDBACK}`), denied.text);
  assert.ok(toolNames(denied.request.body).includes('ExitSpecMode'));
  assert.doesNotMatch(JSON.stringify(denied.request.body.messages), /Spec mode has ended|The user has approved your implementation plan/);

  // 3. The revised spec is revision 2 of the same run, from the same session.
  const second = await secondPlan({ w, diagnose }, 'droid');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.source.session, session);
  assert.equal(second.revision.title, PLAN_2.title);
  assert.match(second.revision.body, /LRU cache of at most 1000 entries/);
  const history = plandeskJson(w, ['history', run]);
  assert.deepEqual(history.map((r) => r.status), ['rejected', 'pending']);
  assert.equal(history[0].decision.feedback, FEEDBACK);
  assert.ok(inSpecMode(tmux), 'Droid is still in spec mode');

  // 4. Approve: Droid leaves spec mode with no dialog of its own, and the model goes on.
  plandesk(w, ['approve', run]);
  const approved = await waitFor('the approval in the model\'s next request', () => exitSpecResult(fake, /"approved":true/), { seconds: 30, diagnose });
  const result = JSON.parse(approved.text);
  assert.equal(result.message, 'Spec mode exited. The user approved the plan. Continue with the implementation.');
  assert.match(JSON.stringify(approved.request.body.messages), /Spec mode has ended/);
  assert.equal(readFileSync(result.filePath, 'utf8').trim(), PLAN_2.plan.trim(), 'Droid saved the approved spec');
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 30, diagnose });
  assert.ok(!inSpecMode(tmux), 'out of spec mode');
  assert.equal(readFileSync(join(w.ws, 'src/cache.js'), 'utf8'), 'export const cache = new Map();\n');
  assert.match(readFileSync(join(w.ws, 'src/fetch.js'), 'utf8'), /cache\.get\(id\) \?\? fetch/);
  assert.deepEqual(plandeskJson(w, ['history', run]).map((r) => r.status), ['rejected', 'approved'],
    'the PostToolUse of the approved ExitSpecMode changes nothing');
  assert.deepEqual(pendingFrom(w, 'droid'), []);

  // 5. What it did after the approval, recorded by PostToolUse and Stop. Droid reports only
  //    tools that succeeded: the failing command is not recorded.
  const progress = await waitFor('Droid\'s Stop in `plandesk progress`', () => {
    const p = plandeskJson(w, ['progress', run]);
    return p.finished ? p : null;
  }, { seconds: 15, diagnose });
  t.diagnostic(`progress: ${progress.summary}`);
  assert.equal(progress.revisionNo, 2);
  assert.deepEqual(progress.files.map((f) => [f.path, f.planned, f.changed]), [
    ['src/cache.js', true, true],
    ['src/fetch.js', true, true],
  ]);
  assert.deepEqual(progress.commands.map((c) => [c.command, c.exitCode]), [['echo cached', 0]]);
  assert.deepEqual(progress.steps.map((s) => s.state), ['done', 'done', 'not-done-yet']);
}));

test('Droid: reject without feedback → the model reads "Stop now and wait", never approved', { timeout: 60_000 }, () => withDroid('droid-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  plandesk(w, ['reject', item.runId]);
  const denied = await waitFor('the rejection in the model\'s next request', () => exitSpecResult(fake, /^Error:/), { seconds: 30, diagnose });
  assert.match(denied.text, /Plan was not approved\. .*Stop now and wait for the user/);
  await waitFor('the model to stop', () => tmux.screen().includes(STOPPED), { seconds: 20, diagnose });
  assert.equal(exitSpecResult(fake, /"approved":true/), undefined, 'never approved');
  assert.ok(inSpecMode(tmux), 'still in spec mode');
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['rejected']);
  assert.ok(!existsSync(join(w.ws, 'src/cache.js')), 'nothing was written');
}));

test('Droid: nobody decides before the deadline (hooks in ~/.factory/hooks.json) → expired, denied, never approved', { timeout: 60_000 }, () => withDroid('droid-deadline', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await firstPlan(ctx);
  const denied = await waitFor('the expiry in the model\'s next request', () => exitSpecResult(fake, /^Error:/), { seconds: 20, diagnose });
  assert.match(denied.text, /No decision was made on this plan in time, so it is not approved\. Stop now and wait/);
  await waitFor('the model to stop', () => tmux.screen().includes(STOPPED), { seconds: 20, diagnose });
  assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['expired']);
  assert.equal(exitSpecResult(fake, /"approved":true/), undefined, 'never approved');
  assert.ok(inSpecMode(tmux), 'still in spec mode');
}, { env: { PLANDESK_HOOK_DEADLINE: '3s' }, hooksJson: true }));

// A Droid that gives up on its spec must not leave it waiting in the inbox. The TUI runs the
// session in a child process, which runs each hook under `sh -c` in a process group of its own.
// Interrupted (Esc), Droid stops its hook (SIGTERM) and stays in spec mode; quit as a person
// does (Ctrl+C twice) or stopped (SIGTERM), it stops its hook and exits. When that child is
// SIGKILLed, the TUI stays up and the hook is left running: it notices by itself, as its
// `sh -c` gets a new parent.
const quits = {
  'the person interrupts it (Esc)': { quit: ({ tmux }) => tmux.key('Escape'), exits: false },
  'the person quits (Ctrl+C twice)': {
    quit: async ({ tmux }) => {
      tmux.key('C-c');
      await sleep(300);
      tmux.key('C-c');
    },
    exits: true,
  },
  'it is stopped (SIGTERM)': { quit: ({ w }) => process.kill(droidProcesses(w).tui, 'SIGTERM'), exits: true },
  'its session process is killed (SIGKILL)': {
    quit: ({ w }) => process.kill(droidProcesses(w).session, 'SIGKILL'),
    exits: false,
  },
};
for (const [how, { quit, exits }] of Object.entries(quits)) {
  test(`Droid: ${how} while its spec waits → the plan is marked abandoned`, { timeout: 60_000 }, () => withDroid('droid-quit', async (ctx) => {
    const { w, tmux, diagnose } = ctx;
    const item = await firstPlan(ctx);
    const [hook] = processes(w.root, new RegExp(`^${CLI.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} hook droid`));
    const wrapper = parentOf(hook);
    assert.match(commandLine(wrapper), /^sh -c .*plandesk hook droid/, 'Droid runs its hook under `sh -c`');
    assert.equal(parentOf(wrapper), droidProcesses(w).session, 'in the TUI\'s session process');
    await quit(ctx);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'droid').length === 0, { seconds: 10, diagnose });
    assert.deepEqual(plandeskJson(w, ['history', item.runId]).map((r) => r.status), ['abandoned']);
    await waitFor('the hook to exit', () => processes(w.root, /plandesk hook droid/).length === 0, { seconds: 5, diagnose });
    const dead = () => tmux.run(['list-panes', '-t', tmux.session, '-F', '#{pane_dead}']).trim() === '1';
    if (exits) {
      await waitFor('Droid to exit', dead, { seconds: 10, diagnose });
    } else {
      await sleep(500);
      assert.ok(!dead() && processes(w.root, /^\S*\/droid $/).length === 1, 'the TUI stays up');
    }
  }));
}
