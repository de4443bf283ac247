// The real Pi (pinned in package.json), interactive in tmux, against a fake OpenAI Chat
// Completions API. Pi has no plan mode of its own: Plandesk's extension (put in place by
// `plandesk install pi`) adds one (`/plan`: read-only tools and `submit_plan`), and its
// `submit_plan` waits on `plandesk hook pi`; a rejection's feedback is the tool's result, the
// revised plan is revision 2; an approval of that exact revision ends plan mode, and what the
// model then does is recorded against the plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentText, toolNames, toolResults } from './fake-openai.mjs';
import {
  BIN, CLI, FEEDBACK, PLAN_1, PLAN_2, PROMPT, ROOT, agentEnv, assertScenarioWork, install, nextWork,
  pendingFrom, plandesk, plandeskJson, processes, secondPlan, sleep, statuses, typeFirstPlan,
  waitFor, withTmuxAgent,
} from './harness.mjs';

const PI = process.env.PI_BIN || join(BIN, 'pi');
const FINAL = 'Implementation started: the bounded cache plan is approved.';
const STOPPED = 'fake model: stopping as told.';
const HOOK = /plandesk.* hook pi/;
/** The extension's message that starts the run implementing an approved plan. */
const IMPLEMENT = /^Plandesk: the plan is approved \(see the review above\)\. Implement it now/;
/** Plan mode's tools, as the extension leaves them. */
const PLAN_TOOLS = ['find', 'grep', 'ls', 'read', 'submit_plan'];

/** Pi's tools for the scenario's work. */
const TOOLS = {
  write: (path, content) => ['write', { path, content }],
  read: (path) => ['read', { path }],
  edit: (path, oldText, newText) => ['edit', { path, edits: [{ oldText, newText }] }],
  shell: (command) => ['bash', { command }],
};

/**
 * The fake model. In plan mode (submit_plan offered), the request: `submit_plan` PLAN_1; a
 * result with "User feedback:": `submit_plan` PLAN_2; any other result: stop with a text (an
 * approval ends the run: no request follows it). The extension's "implement it now": the
 * world's `work` steps one by one (matched by call id), then FINAL.
 */
function brain(body, fake) {
  if (fake.main().length > 20) return [{ text: 'fake model: too many turns, stopping' }];
  if (fake.batch) return batchBrain(body);
  const last = body.messages?.at(-1);
  const [result] = last?.role === 'tool' ? toolResults(body) : [];
  if (!result) {
    if (IMPLEMENT.test(contentText(last?.content))) return fake.work.length ? [fake.work[0]] : [{ text: FINAL }];
    if (!toolNames(body).includes('submit_plan')) return [{ text: 'fake model: not in plan mode' }];
    return [{ tool: 'submit_plan', args: { plan: PLAN_1 } }];
  }
  if (result.name === 'submit_plan') {
    if (result.text.includes('User feedback:')) return [{ tool: 'submit_plan', args: { plan: PLAN_2 } }];
    return [{ text: STOPPED }];
  }
  return nextWork(fake, result, FINAL);
}

/**
 * The fake model submitting its plan beside another tool call (`read`), so that an approval
 * does not end the run; approved, it submits a revised plan at once; any other result: stop.
 */
function batchBrain(body) {
  const last = body.messages?.at(-1);
  const submitted = last?.role === 'tool' ? toolResults(body).find((r) => r.name === 'submit_plan') : undefined;
  if (!submitted) {
    if (last?.role === 'tool') return [{ text: 'fake model: waiting' }];
    return [{ tool: 'read', args: { path: 'src/fetch.js' } }, { tool: 'submit_plan', args: { plan: PLAN_1 } }];
  }
  if (submitted.text.startsWith('Plan approved.')) return [{ tool: 'submit_plan', args: { plan: PLAN_2 } }];
  return [{ text: STOPPED }];
}

/** What `pi` runs with: the world's HOME, nothing fetched or reported. */
const piEnv = (w) => agentEnv(w, { PI_OFFLINE: '1', PI_SKIP_VERSION_CHECK: '1', PI_TELEMETRY: '0' });

/**
 * Pi's settings as a person would have them (the fake model as an OpenAI-compatible provider),
 * then Plandesk's extension from `plandesk install pi`, with Pi on the PATH, which proves that
 * Pi loads it. `command`: the extension's `plandesk` command instead of the installed one.
 */
function configure(w, fake, command) {
  const agentDir = join(w.home, '.pi/agent');
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(join(agentDir, 'models.json'), JSON.stringify({
    providers: {
      fake: {
        baseUrl: fake.url,
        api: 'openai-completions',
        apiKey: 'sk-test',
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: fake.model, name: 'Fake model', reasoning: false, input: ['text'], contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  }, null, 2));
  writeFileSync(join(agentDir, 'settings.json'), JSON.stringify({
    defaultProvider: 'fake', defaultModel: fake.model, enableInstallTelemetry: false,
  }, null, 2));
  const installed = install(w, 'pi', { PATH: `${BIN}:${process.env.PATH}`, PI_CODING_AGENT_DIR: '' });
  assert.equal(installed.status, 0, installed.stderr);
  assert.match(installed.stderr, /the extension for Pi is installed in .*\/\.pi\/agent\/extensions\/plandesk\.js/, installed.stderr);
  assert.match(installed.stderr, /Pi loads the extension \(checked with `pi --mode rpc`\)/, installed.stderr);
  const file = join(agentDir, 'extensions/plandesk.js');
  const extension = readFileSync(file, 'utf8');
  assert.equal(JSON.parse(extension.match(/^const PLANDESK = (\[.*\]); \/\/ set by plandesk install$/m)[1])[0], CLI);
  const source = readFileSync(join(ROOT, 'src/source/pi/plandesk.js'), 'utf8');
  const unfilled = (text) => text.replace(/^const (PLANDESK|RECORD) = .*$/gm, '');
  assert.equal(unfilled(extension), unfilled(source), 'the installed extension is this source\'s (rebuild plandesk?)');
  if (command) writeFileSync(file, extension.replace(/^const PLANDESK = .*$/m, `const PLANDESK = ${JSON.stringify(command)};`));
}

/**
 * Runs `fn(ctx)` with Pi started in tmux, in plan mode (`/plan`; `options.flag`: `pi
 * --plan=true`), in a world of its own (`options.work`: what the model does once the plan is
 * approved; `options.command(w)`: the extension's `plandesk` command); afterwards (also on failure) stops tmux, every process of
 * that world, and the fake.
 */
async function withPi(name, fn, options = {}) {
  const start = async ({ w, fake, tmux, diagnose }) => {
    fake.batch = options.batch;
    configure(w, fake, options.command?.(w));
    tmux.start([PI, ...(options.flag ? ['--plan=true'] : [])], { cwd: w.ws, env: piEnv(w) });
    await waitFor('Pi to start with the fake model', () => /fake-model\s*$/m.test(tmux.screen()), { seconds: 30, diagnose });
    assert.match(tmux.screen(), /\[Extensions\]\s+plandesk\.js/, 'Pi lists the extension');
    if (!options.flag) {
      tmux.type('/plan');
      await waitFor('plan mode on', () => /Plan mode on/.test(tmux.screen()), { seconds: 10, diagnose });
    }
  };
  return withTmuxAgent(name, { brain, tools: TOOLS, work: options.work, start }, fn);
}

/** The first request whose last message is submit_plan's result, matching `pattern`. */
function submitResult(fake, pattern) {
  return fake.main().find((r) => {
    if (r.body.messages?.at(-1)?.role !== 'tool') return false;
    const [res] = toolResults(r.body);
    return res?.name === 'submit_plan' && pattern.test(res.text);
  });
}

const sortedTools = (request) => toolNames(request.body).sort();

test('Pi: /plan → submit_plan → pending → reject with feedback → revision 2 → approve → plan mode ends, it works, recorded', { timeout: 120_000 }, () => withPi('pi-review', async (ctx) => {
  const { w, fake, diagnose } = ctx;
  // 1. The plan lands in the inbox, from Pi, with the request typed.
  const first = await typeFirstPlan(ctx, 'pi', PROMPT);
  const run = first.runId;
  assert.equal(first.toolName, 'submit_plan');
  assert.equal(first.workspace, w.ws);
  assert.match(first.source.session, /^[0-9a-f-]{36}$/, 'Pi\'s session id');
  assert.equal(first.revision.title, 'Cache user lookups');
  assert.equal(first.prompt, PROMPT, 'the inbox shows the request typed (the extension sends it)');
  assert.deepEqual(sortedTools(fake.main()[0]), PLAN_TOOLS, 'plan mode: the model may only read and submit');
  assert.match(contentText(fake.main()[0].body.messages[0].content), /PLAN MODE \(Plandesk\)/);

  // 2. Reject with feedback: the tool's result, in the contract's words; the model revises.
  plandesk(w, ['reject', run, '--feedback', FEEDBACK]);
  const denied = await waitFor('the feedback in the model\'s next request', () => submitResult(fake, /User feedback:/), { seconds: 30, diagnose });
  assert.equal(toolResults(denied.body)[0].text,
    `Plan was not approved. The user wants revisions.\n\nUser feedback: ${FEEDBACK}\n\nPlease revise the plan based on the feedback and submit again with submit_plan.`);
  assert.deepEqual(sortedTools(denied), PLAN_TOOLS, 'still plan mode after a rejection');

  // 3. Revision 2 of the same thread.
  const second = await secondPlan({ w, diagnose }, 'pi');
  assert.equal(second.runId, run, 'a revision of the same plan thread');
  assert.equal(second.revision.title, 'Cache user lookups (bounded)');
  assert.deepEqual(plandeskJson(w, ['history', run]).map((r) => [r.revisionNo, r.status]), [[1, 'rejected'], [2, 'pending']]);

  // 4. Approve exactly that revision, with a note: the approval ends the run; plan mode ends,
  // and the extension starts the run that implements it, with the tools back.
  plandesk(w, ['approve', run, '--revision', second.revision.sha256.slice(0, 12), '--note', 'Keep the cache per process']);
  const approved = await waitFor('the implementing run\'s first request', () => fake.main().find((r) => IMPLEMENT.test(contentText(r.body.messages?.at(-1)?.content))), { seconds: 30, diagnose });
  assert.equal(submitResult(fake, /^Plan approved\./), undefined, 'no request answers the approval itself (the run ended)');
  const approval = approved.body.messages.filter((m) => m.role === 'tool').map((m) => contentText(m.content))
    .find((text) => text.startsWith('Plan approved.'));
  assert.match(approval, /^Plan approved\. Proceed with implementation following the approved plan\./);
  assert.ok(approval.includes('Keep the cache per process'), approval);
  for (const tool of ['bash', 'edit', 'write']) assert.ok(toolNames(approved.body).includes(tool), `${tool} is back`);
  assert.equal(toolNames(approved.body).includes('submit_plan'), false, 'no plan to submit outside plan mode');

  // 5. The model works; its work is held against revision 2.
  await waitFor('the model\'s final text on the screen', () => ctx.tmux.screen().includes(FINAL), { seconds: 40, diagnose });
  await assertScenarioWork(w, run, {
    finishedBy: 'agent_end', diagnose, commands: [['echo cached', 0], ['ls src/eviction.test.js', 2]],
  });
  assert.deepEqual(statuses(w, run), ['rejected', 'approved'], 'the records change no decision');
}, { work: true }));

test('Pi: reject without feedback → the model is told to stop and wait, still in plan mode', { timeout: 90_000 }, () => withPi('pi-stop', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const item = await typeFirstPlan(ctx, 'pi', PROMPT);
  plandesk(w, ['reject', item.runId]);
  const denied = await waitFor('the rejection in the model\'s next request', () => submitResult(fake, /not approved/), { seconds: 30, diagnose });
  assert.match(toolResults(denied.body)[0].text, /^Plan was not approved\..*Stop now and wait for the user/s);
  assert.deepEqual(sortedTools(denied), PLAN_TOOLS, 'still plan mode');
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.deepEqual(statuses(w, item.runId), ['rejected']);
}));

test('Pi: approved beside another tool call, then a revised plan rejected in the same run → nothing is implemented', { timeout: 90_000 }, () => withPi('pi-batch', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  const first = await typeFirstPlan(ctx, 'pi', PROMPT);
  plandesk(w, ['approve', first.runId, '--revision', first.revision.sha256.slice(0, 12)]);
  // Pi goes on with the run (read was called beside submit_plan): the model submits again.
  const second = await secondPlan(ctx, 'pi');
  assert.equal(second.runId, first.runId);
  plandesk(w, ['reject', first.runId]);
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  await sleep(1500);
  const requests = fake.main();
  assert.equal(requests.some((r) => IMPLEMENT.test(contentText(r.body.messages?.at(-1)?.content))), false,
    'the earlier approval does not start the implementation');
  for (const r of requests) assert.deepEqual(sortedTools(r), PLAN_TOOLS, 'plan mode throughout');
  assert.deepEqual(statuses(w, first.runId), ['approved', 'rejected']);
}, { batch: true }));

test('Pi: Plandesk cannot be run → the plan is not approved (the extension fails closed)', { timeout: 90_000 }, () => withPi('pi-closed', async (ctx) => {
  const { w, fake, tmux, diagnose } = ctx;
  tmux.type(PROMPT);
  const failed = await waitFor('the extension\'s error in the model\'s next request', () => submitResult(fake, /./), { seconds: 30, diagnose });
  assert.match(toolResults(failed.body)[0].text,
    /^Plandesk could not review this plan \(`plandesk hook pi` could not be started: .*ENOENT.*\), so it is not approved\. Do not go on with it; tell the user\.$/);
  assert.deepEqual(sortedTools(failed), PLAN_TOOLS, 'still plan mode');
  await waitFor('the model\'s stop on the screen', () => tmux.screen().includes(STOPPED), { seconds: 30, diagnose });
  assert.deepEqual(pendingFrom(w, 'pi'), []);
}, { command: (w) => [join(w.root, 'no-such-plandesk')] }));

// Pi giving up on its plan while it waits: the extension stops the waiting hook on Esc (the
// tool's abort signal), on quitting (session_shutdown) and on its process exiting (SIGHUP);
// a Pi killed by SIGTERM (it then exits by the signal, running nothing) or SIGKILL: the hook
// notices it has a new parent.
const quits = {
  'the person interrupts with Esc': ({ tmux }) => tmux.key('Escape'),
  'the person quits with Ctrl+C twice': async ({ tmux }) => { tmux.key('C-c'); await sleep(100); tmux.key('C-c'); },
  'its terminal is closed (SIGHUP)': ({ tmux }) => tmux.kill(),
  'it is stopped (SIGTERM)': ({ tmux }) => process.kill(tmux.pid(), 'SIGTERM'),
  'it is killed (SIGKILL)': ({ tmux }) => process.kill(tmux.pid(), 'SIGKILL'),
};
for (const [how, quit] of Object.entries(quits)) {
  // One of them started in plan mode by `pi --plan=true` rather than /plan.
  const flag = how.includes('SIGKILL');
  test(`Pi${flag ? ' --plan=true' : ''}: ${how} while its plan waits → the plan is marked abandoned`, { timeout: 60_000 }, (t) => withPi('pi-quit', async (ctx) => {
    const { w, fake, diagnose } = ctx;
    const item = await typeFirstPlan(ctx, 'pi', PROMPT);
    assert.ok(processes(w.root, HOOK).length, 'the hook waits');
    const quitAt = Date.now();
    await quit(ctx);
    await waitFor('the plan to leave the inbox', () => pendingFrom(w, 'pi').length === 0, { seconds: 15, diagnose });
    t.diagnostic(`abandoned ${((Date.now() - quitAt) / 1000).toFixed(1)} s after the quit`);
    assert.deepEqual(statuses(w, item.runId), ['abandoned']);
    const audit = plandesk(w, ['--json', 'audit', item.runId]).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(audit.find((e) => e.kind === 'decided').process, 'hook:pi');
    await waitFor('the hook to exit', () => processes(w.root, HOOK).length === 0, { seconds: 5, diagnose });
    assert.equal(submitResult(fake, /^Plan approved/), undefined, 'never approved');
    assert.deepEqual(sortedTools(fake.main()[0]), PLAN_TOOLS, 'in plan mode');
  }, { flag }));
}
