// The real Kilo CLI (OpenCode's fork, pinned in package.json), interactive in tmux with its plan
// agent, against a fake OpenAI Chat Completions API. Kilo runs Plandesk's OpenCode plugin
// unchanged (`plandesk install kilo` puts it in Kilo's plugins folder); the differences the
// plugin handles: Kilo's model names the plan file itself (in `.kilo/plans/`) and passes it to
// `plan_exit {path}`; after an approval Kilo asks "Ready to implement?", and its default, "Start
// new session", implements the plan in another session, whose work is recorded against the plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentText, toolNames, toolResults } from './fake-openai.mjs';
import { OPENCODE_TOOLS, loadPluginAlone, planExitResult } from './opencode-plugin.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, agentEnv, assertScenarioWork, install, nextWork,
  pendingFrom, plandesk, plandeskJson, processes, removeWorld, secondPlan, sleep, statuses,
  typeFirstPlan, waitFor, withTmuxAgent, world,
} from './harness.mjs';

const KILO = process.env.KILO_BIN || join(BIN, 'kilo');
const VERSION = '7.7.7';
const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping as told.';
const HOOK = /plandesk.* hook kilo/;
/** Kilo's plan-mode reminder: where the model is to create its plan file, and how to name it. */
const PLAN_DIR = /otherwise create it in (\S+?)\. For generated filenames, use (\d+)-/;
/** Kilo's first message in the session it opens to implement an approved plan. */
const HANDOVER = /^Plan file: (\S+)\nRead this file first and treat it as the source of truth for implementation\./;
/** Kilo's own question once plan_exit ran. */
const QUESTION = /Ready to implement\?/;

/**
 * The fake model. The plan agent's first request: `write` PLAN_1 to a file in the folder Kilo's
 * reminder names, then `plan_exit {path}`. plan_exit denied with "User feedback:": write PLAN_2
 * there, then plan_exit again; denied otherwise: stop with a text. The session Kilo opens to
 * implement the plan ("Plan file: …"): the world's `work` steps one by one (matched by call
 * id), then FINAL. Requests without tools (the title, the handover summary) get a text.
 */
function brain(body, fake) {
  if (!body.tools?.length) return [{ text: 'Cache plan' }];
  if (fake.main().length > 24) return [{ text: 'fake model: too many turns, stopping' }];
  const last = body.messages?.at(-1);
  const [result] = last?.role === 'tool' ? toolResults(body) : [];
  if (!result) {
    if (HANDOVER.test(contentText(last?.content))) return fake.work.length ? [fake.work[0]] : [{ text: FINAL }];
    if (!toolNames(body).includes('plan_exit')) return [{ text: 'fake model: not the plan agent' }];
    const named = JSON.stringify(body.messages).match(PLAN_DIR);
    if (!named) return [{ text: 'fake model: no plan folder named' }];
    fake.planPath = `${named[1]}/${named[2]}-cache-plan.md`;
    return [{ tool: 'write', args: { filePath: fake.planPath, content: PLAN_1 } }];
  }
  if (result.name === 'write' && fake.work.every((step) => step.id !== result.id)) {
    return [{ tool: 'plan_exit', args: { path: fake.planPath } }];
  }
  if (result.name === 'plan_exit') {
    if (result.text.includes('User feedback:')) return [{ tool: 'write', args: { filePath: fake.planPath, content: PLAN_2 } }];
    return [{ text: STOPPED }];
  }
  return nextWork(fake, result, FINAL);
}

/** What `kilo` runs with: the world's HOME, nothing fetched, updated or reported. */
const kiloEnv = (w, extra = {}) => agentEnv(w, {
  KILO_DISABLE_AUTOUPDATE: '1',
  KILO_DISABLE_MODELS_FETCH: '1',
  KILO_DISABLE_LSP_DOWNLOAD: '1',
  KILO_TELEMETRY_LEVEL: 'off',
  ...extra,
});

/**
 * Kilo's settings as a person would have them (the fake model as an OpenAI-compatible provider,
 * its tools allowed), then Plandesk's plugin from `plandesk install kilo`; with `check`, with
 * Kilo on the PATH, which proves that Kilo loads it (`kilo debug config`: 8 s, so only the first
 * test does). The workspace is a git repository.
 */
function configure(w, fake, check) {
  const config = join(w.home, '.config/kilo');
  mkdirSync(config, { recursive: true });
  writeFileSync(join(config, 'kilo.json'), JSON.stringify({
    $schema: 'https://app.kilo.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    model: `fake/${fake.model}`,
    provider: {
      fake: {
        npm: '@ai-sdk/openai-compatible', // bundled in Kilo
        name: 'Fake',
        options: { baseURL: fake.url, apiKey: 'sk-test' },
        models: { [fake.model]: { name: 'Fake model', tool_call: true } },
      },
    },
    permission: { edit: 'allow', bash: 'allow' },
  }, null, 2));
  // Like OpenCode, Kilo installs its plugin package into each config folder at start unless
  // node_modules exists and package-lock.json lists it (75 s without a registry).
  mkdirSync(join(config, 'node_modules'));
  writeFileSync(join(config, 'package-lock.json'), JSON.stringify({
    packages: { '': { dependencies: { '@kilocode/plugin': VERSION } } },
  }));
  const git = spawnSync('git', ['init', '-q'], { cwd: w.ws, encoding: 'utf8' });
  assert.equal(git.status, 0, git.stderr);

  const installed = install(w, 'kilo', {
    PATH: check ? `${BIN}:${process.env.PATH}` : '/usr/bin:/bin',
    XDG_CONFIG_HOME: '', KILO_DISABLE_AUTOUPDATE: '1', KILO_DISABLE_MODELS_FETCH: '1',
  });
  assert.equal(installed.status, 0, installed.stderr);
  assert.match(installed.stderr, /the plugin for Kilo CLI is installed in .*\/\.config\/kilo\/plugins\/plandesk\.js/, installed.stderr);
  assert.match(installed.stderr, /Kilo still asks "Ready to implement\?"/, 'install tells the person about Kilo\'s own question');
  const said = check ? /Kilo CLI loads the plugin \(checked with `kilo debug config`\)/ : /Could not check that Kilo CLI loads the plugin: cannot run kilo/;
  assert.match(installed.stderr, said, installed.stderr);
  const plugin = readFileSync(join(config, 'plugins/plandesk.js'), 'utf8');
  assert.equal(JSON.parse(plugin.match(/^const PLANDESK = (\[.*\]); \/\/ set by plandesk install$/m)[1])[0], CLI);
}

/** The agent Kilo's prompt box shows. */
const agentShown = (tmux) => [...tmux.screen().matchAll(/\b(Plan|Code)\s+· Fake model/g)].at(-1)?.[1];
const questionShown = (tmux) => QUESTION.test(tmux.screen());

/**
 * Runs `fn(ctx)` with Kilo started with its plan agent in tmux in a world of its own
 * (`options.work`: what the model does once the plan is approved; `options.check`: see
 * `configure`); afterwards (also on
 * failure) stops tmux, every process of that world, and the fake.
 */
async function withKilo(name, fn, options = {}) {
  const start = async ({ w, fake, tmux, diagnose }) => {
    configure(w, fake, options.check);
    tmux.start([KILO, '--agent', 'plan'], { cwd: w.ws, env: kiloEnv(w) });
    await waitFor('Kilo to start with its plan agent', () => agentShown(tmux) === 'Plan', { seconds: 60, diagnose });
  };
  return withTmuxAgent(name, { brain, tools: OPENCODE_TOOLS, work: options.work, start }, fn);
}

/** The first request that opens the session implementing the plan. */
const handedOver = (fake) => fake.main().find((r) => HANDOVER.test(contentText(r.body.messages?.at(-1)?.content)));

test('Kilo CLI: plan → pending → reject with feedback → revision 2 → approve → "Ready to implement?" → a new session works, recorded', { timeout: 180_000 }, () => withKilo('kilo-review', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  // 1. The plan lands in the inbox, from Kilo, read from the file its model named.
  const first = await typeFirstPlan(ctx, 'kilo', PROMPT);
  const run = first.runId;
  assert.equal(first.toolName, 'plan_exit');
  assert.equal(first.workspace, w.ws);
  assert.match(first.source.session, /^ses_/);
  assert.equal(first.revision.revisionNo, 1);
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.match(fake.planPath, new RegExp(`^${w.ws}/\\.kilo/plans/\\d+-cache-plan\\.md$`));
  assert.equal(first.revision.path, fake.planPath, 'the file plan_exit named');
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed');
  assert.equal(questionShown(tmux), false, 'Kilo\'s own question waits for the plugin');

  // 2. Reject with feedback: the reason is plan_exit's result, verbatim; the model revises.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => planExitResult(fake, /User feedback:/), { seconds: 30, diagnose });
  assert.match(toolResults(denied.body)[0].text, /^Plan was not approved\. The user wants revisions\./);
  assert.ok(toolResults(denied.body)[0].text.includes(`User feedback: ${FEEDBACK}`));

  // 3. Revision 2 of the same thread.
  const second = await secondPlan({ w, diagnose }, 'kilo');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  assert.equal(agentShown(tmux), 'Plan', 'still the plan agent after the rejection');
  assert.deepEqual(plandeskJson(w, ['history', run]).map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);

  // 4. Approve exactly that revision: plan_exit runs, and Kilo asks its own question.
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12), '--note', 'Keep the cache per process']);
  await waitFor('Kilo\'s own "Ready to implement?"', () => questionShown(tmux), { seconds: 30, diagnose });
  await sleep(800);
  assert.equal(handedOver(fake), undefined, 'the plugin\'s allow alone implements nothing');
  assert.deepEqual(statuses(w, run), ['rejected', 'approved']);
  tmux.key('Enter'); // "Start new session" is selected

  // 5. A new session implements the approved plan; its work is held against that plan.
  const opened = await waitFor('the implementing session\'s first request', () => handedOver(fake), { seconds: 30, diagnose });
  assert.equal(HANDOVER.exec(contentText(opened.body.messages.at(-1).content))[1], `.kilo/plans/${fake.planPath.split('/').pop()}`);
  // The note follows plan_exit's own result, which Kilo's handover summary is written from.
  const results = fake.requests.flatMap((r) => (r.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => contentText(m.content)));
  assert.ok(results.some((text) => /^Plan is ready at .*\n\nReviewer notes: Keep the cache per process$/s.test(text)), results.join('\n---\n'));
  await waitFor('the model\'s final text on the screen', () => tmux.screen().includes(FINAL), { seconds: 40, diagnose });
  await assertScenarioWork(w, run, {
    finishedBy: 'session idle', diagnose, commands: [['echo cached', 0], ['ls src/eviction.test.js', 2]],
  });
  assert.deepEqual(statuses(w, run), ['rejected', 'approved'], 'the records change no decision');
  assert.deepEqual(pendingFrom(w, 'kilo'), []);
}, { work: true, check: true }));

test('Kilo CLI: reject without feedback → the model is told to stop and wait', { timeout: 90_000 }, () => withKilo('kilo-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await typeFirstPlan(ctx, 'kilo', PROMPT);
  plandesk(w, ['reject', item.runId]);
  const denied = await waitFor('the rejection in the model\'s next request', () => planExitResult(fake, /not approved/), { seconds: 30, diagnose });
  assert.match(toolResults(denied.body)[0].text, /^Plan was not approved\..*Stop now and wait for the user/s);
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.equal(agentShown(tmux), 'Plan', 'still the plan agent');
  assert.equal(questionShown(tmux), false, 'Kilo\'s own question never came');
  assert.equal(handedOver(fake), undefined, 'never approved');
  assert.deepEqual(statuses(w, item.runId), ['rejected']);
}));

// Kilo giving up on its plan while it waits: the plugin stops the waiting hook (the session's
// loop ended, the plugin disposed, the process exiting); a killed Kilo's hook notices it has a
// new parent. (Ctrl+C does nothing in Kilo while it works.)
const quits = {
  'the person interrupts with Esc Esc': async ({ tmux, diagnose }) => {
    tmux.key('Escape');
    await waitFor('"esc again to interrupt"', () => /esc again to interrupt/.test(tmux.screen()), { seconds: 5, diagnose });
    tmux.key('Escape');
  },
  'its terminal is closed (SIGHUP)': ({ tmux }) => tmux.kill(),
  'it is killed (SIGKILL)': ({ tmux }) => process.kill(tmux.pid(), 'SIGKILL'),
};
for (const [how, quit] of Object.entries(quits)) {
  test(`Kilo CLI: ${how} while its plan waits → the plan is marked abandoned`, { timeout: 90_000 }, () => withKilo('kilo-quit', async (ctx) => {
    const { w, fake, diagnose } = ctx;
    const item = await typeFirstPlan(ctx, 'kilo', PROMPT);
    assert.ok(processes(w.root, HOOK).length, 'the hook waits');
    await quit(ctx);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'kilo').length === 0, { seconds: 15, diagnose });
    assert.deepEqual(statuses(w, item.runId), ['abandoned']);
    const audit = plandesk(w, ['--json', 'audit', item.runId]).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(audit.find((e) => e.kind === 'decided').process, 'hook:kilo');
    await waitFor('the hook to exit', () => processes(w.root, HOOK).length === 0, { seconds: 5, diagnose });
    assert.equal(handedOver(fake), undefined, 'never approved');
  }));
}

test('Kilo plugin: `plandesk hook kilo`, the plan file Kilo will carry out, and the new session\'s work as the plan\'s', { timeout: 30_000 }, async () => {
  const w = world('kilo-plugin');
  try {
    const load = (mode, options) => loadPluginAlone(w, mode, { prompt: PROMPT, kilo: true, ...options });
    const plugin = await load('allow');
    const { hooks, sent, agents, planExit } = plugin;
    const plans = join(w.ws, '.kilo/plans');
    const named = join(plans, '1765000000000-cache-plan.md');
    mkdirSync(plans, { recursive: true });
    writeFileSync(named, '# Cache\n');
    // The file plan_exit names (relative to the project, or any file of it: Kilo carries out
    // what it names), and plan_exit is given exactly the file reviewed.
    const before = (sessionID, args) => {
      const output = { args };
      return hooks['tool.execute.before']({ tool: 'plan_exit', sessionID, callID: 'c1' }, output).then(() => output.args.path);
    };
    assert.equal(await before('ses_1', { path: '.kilo/plans/1765000000000-cache-plan.md' }), named);
    assert.equal(await before('ses_2', { path: join(w.ws, 'README.md') }), join(w.ws, 'README.md'));
    // No path: the session's own file, <created>-<slug>.md, or as Kilo takes it, the newest
    // of the session's plan files beside it.
    assert.equal(await before('ses_3', {}), named);
    // Kilo carries out the newest of the file named and the session's others beside it.
    const newer = join(plans, '1765000000000-other.md');
    writeFileSync(newer, '# Other\n');
    utimesSync(newer, new Date(), new Date(Date.now() + 60_000));
    assert.equal(await before('ses_4', { path: named }), newer, 'the one Kilo would take, reviewed');
    rmSync(newer);
    assert.deepEqual(sent('hook').map((h) => h.plan_file), [named, join(w.ws, 'README.md'), named, newer]);
    // A name outside the project, or none usable: not approved, nothing asked.
    await assert.rejects(planExit('ses_5', { path: '.kilo/plans/../../../../etc/passwd.md' }), /which is not in this project/);
    await assert.rejects(planExit('ses_6', { path: 42 }), /plan_exit named no usable plan file/);
    assert.deepEqual(agents('hook'), ['kilo', 'kilo', 'kilo', 'kilo']);
    // Kilo took another file than the one approved: not approved, nothing recorded for it.
    await before('ses_10', { path: named });
    const took = { output: 'Plan is ready at .kilo/plans/x.md.', metadata: { plan: join(plans, 'x.md') } };
    await hooks['tool.execute.after']({ tool: 'plan_exit', sessionID: 'ses_10', args: {} }, took);
    assert.match(took.output, /^Plandesk approved .*1765000000000-cache-plan\.md, but Kilo took .*x\.md, which nobody approved\./);
    await hooks['tool.execute.after']({ tool: 'write', sessionID: 'ses_10', args: { filePath: 'src/b.js', content: 'x' } }, { output: '', metadata: {} });

    // ses_1's plan_exit ran; Kilo opens ses_9 with its handover, naming that plan.
    await hooks['tool.execute.after']({ tool: 'plan_exit', sessionID: 'ses_1', args: {} }, { output: 'Plan is ready' });
    const message = (sessionID, id, role) => hooks.event({ event: { type: 'message.updated', properties: { sessionID, info: { id, sessionID, role } } } });
    const text = (sessionID, messageID, t) => hooks.event({ event: { type: 'message.part.updated', properties: { sessionID, part: { id: `prt_${messageID}`, messageID, sessionID, type: 'text', text: t } } } });
    const handover = 'Plan file: .kilo/plans/1765000000000-cache-plan.md\nRead this file first and treat it as the source of truth for implementation.';
    await message('ses_8', 'msg_80', 'user');
    await text('ses_8', 'msg_80', 'Add a cache');
    await message('ses_8', 'msg_81', 'assistant');
    await text('ses_8', 'msg_81', handover); // a model saying it: not Kilo's handover
    await message('ses_8', 'msg_82', 'user');
    await text('ses_8', 'msg_82', handover); // not the session's first message
    await message('ses_7', 'msg_70', 'user');
    await text('ses_7', 'msg_70', 'Plan file: .kilo/plans/other.md\nRead this file first'); // another plan
    await message('ses_9', 'msg_90', 'user');
    await text('ses_9', 'msg_90', handover);
    for (const session of ['ses_7', 'ses_8', 'ses_9']) {
      await hooks['tool.execute.after']({ tool: 'write', sessionID: session, args: { filePath: 'src/a.js', content: session } }, { output: '', metadata: {} });
    }
    await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_9' } } });
    const records = await waitFor('2 records', () => (sent('record').length >= 2 ? sent('record') : null), { seconds: 10 });
    await sleep(300);
    assert.deepEqual(sent('record').map((r) => [r.session_id, r.tool ?? r.event, r.args?.content]), [
      ['ses_1', 'write', 'ses_9'], ['ses_1', 'idle', undefined],
    ], 'only the session Kilo opened for the approved plan, recorded as the planning session');
    assert.equal(records.length, 2);
    assert.deepEqual(agents('record'), ['kilo', 'kilo']);

    // Anything but an explicit allow still fails closed, naming Kilo's hook.
    const failed = await load('failed');
    await assert.rejects(failed.planExit(), /^Error: Plandesk could not review this plan \(`plandesk hook kilo` exited with status 1\)/);
  } finally {
    removeWorld(w, false);
  }
});
