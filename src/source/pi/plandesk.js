// Plandesk's extension for Pi (checked with @mariozechner/pi-coding-agent 0.73.1). Pi has no plan
// mode of its own; this adds one. `plandesk install pi` writes it into Pi's extensions folder
// (~/.pi/agent/extensions/plandesk.js, or $PI_CODING_AGENT_DIR/extensions), with the two lines
// below filled in. Pi loads it when it starts.
//
// - `/plan` (or `pi --plan=true`) turns plan mode on: the model may only read (read, grep,
//   find, ls) and is told to call `submit_plan` with its whole plan. `/plan` again turns it off.
// - `submit_plan {plan}` runs `plandesk hook pi` and waits for your decision in Plandesk. An
//   approval is the tool's result, with your notes and edit, and ends the agent's run; plan
//   mode ends (Pi gives a run the tools it started with, so the tools come back for the next
//   one), and the extension starts that run: "implement the approved plan". A rejection is the
//   tool's result too (your feedback, or why it is not approved), and plan mode stays. It fails closed: if Plandesk cannot be asked or answers anything else, the
//   tool fails and the plan is not approved.
// - Esc while the plan waits, quitting Pi, or Pi's process exiting stops the waiting `plandesk
//   hook pi` (SIGTERM), and Plandesk marks the plan abandoned.
// - Once a plan was approved, what the agent then does (files written or edited, commands run)
//   and the end of each of its runs go to `plandesk record pi`, one at a time, in the background.
//
// Plain JavaScript with no dependencies. An extension that throws while loading stops Pi from
// starting at all, so nothing here throws then.
import { spawn } from 'node:child_process';

const PLANDESK = ["plandesk"]; // set by plandesk install
const RECORD = true; // set by plandesk install

/** The tools plan mode leaves the model: it reads, and submits its plan. */
const READ_ONLY = ['read', 'grep', 'find', 'ls'];
const TOOL = 'submit_plan';
/** The most of a tool's output (and of any one argument) sent to `plandesk record`. */
const MAX_TEXT = 64 * 1024;
/** The most of `plandesk hook`'s stdout read, and of its stderr kept for an error message. */
const MAX_ANSWER = 1024 * 1024;
const MAX_STDERR = 4 * 1024;
/** The most of the session's first request sent along as the plan's prompt. */
const MAX_PROMPT = 4 * 1024;
/** The most records waiting in one session's queue; past that new ones are dropped. */
const MAX_QUEUED = 64;
/** Tools whose work is recorded after an approval. */
const RECORDED = new Set(['write', 'edit', 'bash']);

/** What starts the run that implements an approved plan (its tools are no longer plan mode's). */
const IMPLEMENT = 'Plandesk: the plan is approved (see the review above). Implement it now, following the approved plan.';

const PLAN_MODE_PROMPT = `

PLAN MODE (Plandesk): do not change anything yet. Read what you need, then write your complete implementation plan in markdown (a title heading, then numbered steps naming the files and commands) and call ${TOOL} with it. A person reviews it in Plandesk: wait for the result. If it asks for changes, revise the plan and call ${TOOL} again; if it is not approved, stop and wait for the user.`;

/** The message for a plan Plandesk could not review (`why`): fail closed. */
const notReviewed = (why) => `Plandesk could not review this plan (${why}), so it is not approved. `
  + 'Do not go on with it; tell the user.';

/** Every `plandesk hook pi` still waiting in this process (shared by every copy of this file:
 * Pi loads it again for each new session and reload). */
const waiting = globalThis[Symbol.for('plandesk.pi.waiting')] ??= (() => {
  const all = new Set();
  // Pi's process exiting (SIGHUP, a quit): no plan may keep waiting for it.
  process.once('exit', () => stopAll(all));
  return all;
})();

function stopAll(all = waiting) {
  for (const child of all) {
    child.stoppedBecause = 'Pi was closed';
    try { child.kill('SIGTERM'); } catch { /* gone */ }
  }
}

export default function plandesk(pi) {
  try {
    setUp(pi);
  } catch (err) {
    // Never keep Pi from starting; say so where the person looks.
    console.error(`Plandesk's extension could not set up plan mode: ${err?.message ?? err}`);
  }
}

function setUp(pi) {
  let planMode = false;
  /** The tools active before plan mode, given back when it ends. */
  let before;
  /** Sessions whose plan Plandesk approved: their work is recorded. */
  const approved = new Set();
  /** Sessions whose run ends on an approval: the next one implements it. */
  const toImplement = new Set();
  /** sessionID → the tail of its record queue (records are sent one at a time, in order). */
  const queues = new Map();

  /** The active tools but submit_plan, which is offered in plan mode only. */
  const activeButPlan = () => pi.getActiveTools().filter((name) => name !== TOOL);
  const enter = () => {
    if (planMode) return;
    before = activeButPlan();
    const tools = new Set(pi.getAllTools().map((tool) => tool.name));
    pi.setActiveTools([...READ_ONLY.filter((name) => tools.has(name)), TOOL]);
    planMode = true;
  };
  const leave = () => {
    if (!planMode) return;
    pi.setActiveTools(before);
    planMode = false;
  };

  pi.registerFlag('plan', { description: 'Start in Plandesk\'s plan mode (write --plan=true)', type: 'boolean', default: false });
  pi.registerCommand('plan', {
    description: 'Plandesk plan mode: the agent reads, plans, and waits for your decision in Plandesk',
    handler: async (_args, ctx) => {
      if (planMode) leave(); else enter();
      ctx.ui?.notify?.(planMode
        ? 'Plan mode on: the agent submits its plan to Plandesk and waits for your decision.'
        : 'Plan mode off.', 'info');
    },
  });

  pi.on('session_start', async () => {
    if (pi.getActiveTools().includes(TOOL)) pi.setActiveTools(activeButPlan());
    if (pi.getFlag('plan')) enter();
  });
  pi.on('before_agent_start', async (event) => {
    if (planMode) return { systemPrompt: `${event.systemPrompt}${PLAN_MODE_PROMPT}` };
    return undefined;
  });
  // Quitting Pi (Ctrl+C twice, Ctrl+D, /quit): no plan may keep waiting for it. (Its process
  // exiting: see `waiting`; a Pi killed otherwise: the hook notices it has a new parent.)
  pi.on('session_shutdown', async () => { stopAll(); });

  pi.registerTool({
    name: TOOL,
    label: 'Submit plan',
    description: 'Submit your implementation plan (markdown) to Plandesk, where a person reviews it. '
      + 'Blocks until they decide; the result says whether it is approved, or what to change.',
    promptSnippet: 'Submit the implementation plan for review in Plandesk',
    parameters: {
      type: 'object',
      properties: { plan: { type: 'string', description: 'The complete plan, in markdown: a title heading, then the steps' } },
      required: ['plan'],
    },
    async execute(_toolCallId, params, signal, onUpdate, ctx) {
      const session = ctx.sessionManager.getSessionId();
      // A plan submitted again after an approval in the same run (Pi ends a run on an approval
      // only when nothing else was called beside it): that approval no longer stands, and plan
      // mode is back until this one is approved.
      toImplement.delete(session);
      enter();
      const prompt = firstRequest(ctx.sessionManager);
      const payload = JSON.stringify({
        session_id: session, cwd: ctx.cwd, plan: typeof params?.plan === 'string' ? params.plan : '',
        ...(prompt ? { prompt } : {}),
      });
      onUpdate?.({ content: [{ type: 'text', text: 'Waiting for your decision in Plandesk…' }] });
      if (signal?.aborted) throw new Error('The plan was not reviewed: it was cancelled in Pi.');
      let result;
      try {
        result = await run(['hook', 'pi'], payload, signal);
      } catch (err) {
        throw new Error(notReviewed(`\`plandesk hook pi\` could not be started: ${err?.message ?? err}`));
      }
      if (result.stoppedBecause) throw new Error(`The plan was not reviewed: ${result.stoppedBecause}.`);
      let answer;
      try {
        answer = JSON.parse(result.stdout.trim());
      } catch { /* below */ }
      if (result.code === 0 && answer?.decision === 'allow' && typeof answer.message === 'string') {
        approved.add(session);
        toImplement.add(session);
        leave();
        return { content: [{ type: 'text', text: answer.message }], details: { decision: 'approved' }, terminate: true };
      }
      if (result.code === 0 && answer?.decision === 'deny' && typeof answer.reason === 'string' && answer.reason.trim()) {
        return { content: [{ type: 'text', text: answer.reason }], details: { decision: 'not approved' } };
      }
      const why = result.code !== 0
        ? `\`plandesk hook pi\` exited with ${result.signal ?? `status ${result.code}`}${result.stderr.trim() ? `: ${result.stderr.trim().slice(-500)}` : ''}`
        : '`plandesk hook pi` gave no decision';
      throw new Error(notReviewed(why));
    },
  });

  /** Sends one record to `plandesk record pi` after the session's earlier ones; never throws,
   * never holds up the agent. */
  function record(session, cwd, body) {
    if (!RECORD) return;
    const queue = queues.get(session) ?? { tail: Promise.resolve(), length: 0 };
    if (queue.length >= MAX_QUEUED) return;
    queue.length += 1;
    queues.set(session, queue);
    const stdin = JSON.stringify({ session_id: session, cwd, ...body });
    queue.tail = queue.tail.then(() => new Promise((done) => {
      try {
        const [command, ...rest] = PLANDESK;
        const child = spawn(command, [...rest, 'record', 'pi'], { cwd, stdio: ['pipe', 'ignore', 'ignore'] });
        child.once('error', () => done());
        child.once('close', () => done());
        child.stdin.on('error', () => {});
        child.stdin.end(stdin);
      } catch {
        done();
      }
    })).finally(() => {
      queue.length -= 1;
      if (!queue.length && queues.get(session) === queue) queues.delete(session);
    });
  }

  pi.on('tool_result', async (event, ctx) => {
    try {
      const session = ctx.sessionManager.getSessionId();
      if (!RECORD || !approved.has(session) || !RECORDED.has(event.toolName)) return;
      const output = (event.content ?? []).filter((part) => part?.type === 'text').map((part) => part.text).join('\n');
      record(session, ctx.cwd, {
        tool: event.toolName,
        args: cut(event.input ?? {}),
        output: cutText(output),
        ...(event.toolName === 'bash' ? exitCode(event.isError, output) : {}),
      });
    } catch { /* recording never gets in the agent's way */ }
  });
  pi.on('agent_end', async (_event, ctx) => {
    try {
      const session = ctx.sessionManager.getSessionId();
      if (approved.has(session)) record(session, ctx.cwd, { event: 'idle' });
      // Pi is still in its run here: the next one starts once it is idle (at most 10 s later).
      if (toImplement.delete(session)) {
        whenIdle(ctx, () => {
          pi.sendMessage({ customType: 'plandesk', content: IMPLEMENT, display: true }, { triggerTurn: true });
        }, () => ctx.ui?.notify?.('The plan is approved in Plandesk, but Pi stayed busy: ask it to implement the plan.', 'warning'));
      }
    } catch { /* as above */ }
  });
}

/** Runs PLANDESK + `args` with `stdin`, stopped (SIGTERM) when `signal` aborts (Esc); resolves
 * {code, signal, stdout, stderr, stoppedBecause} when it exits, rejects if it cannot start. */
function run(args, stdin, signal) {
  return new Promise((resolvePromise, reject) => {
    const [command, ...rest] = PLANDESK;
    const child = spawn(command, [...rest, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    waiting.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk) => { if (stdout.length < MAX_ANSWER) stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-MAX_STDERR); });
    const onAbort = () => {
      child.stoppedBecause = 'it was cancelled in Pi';
      try { child.kill('SIGTERM'); } catch { /* gone */ }
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const forget = () => {
      waiting.delete(child);
      signal?.removeEventListener('abort', onAbort);
    };
    child.once('error', (err) => { forget(); reject(err); });
    child.once('close', (code, sig) => {
      forget();
      resolvePromise({ code, signal: sig, stdout, stderr, stoppedBecause: child.stoppedBecause });
    });
    child.stdin.on('error', () => { /* it exited without reading: its exit says why */ });
    child.stdin.end(stdin);
  });
}

/** Runs `then` once Pi is idle (checked every 50 ms, for at most 10 s), else `gaveUp`; never
 * throws. */
function whenIdle(ctx, then, gaveUp, tries = 0) {
  try {
    if (ctx.isIdle()) then();
    else if (tries < 200) setTimeout(() => whenIdle(ctx, then, gaveUp, tries + 1), 50);
    else gaveUp();
  } catch { /* the session is gone */ }
}

/** What the person typed first in the session, if known. */
function firstRequest(sessionManager) {
  try {
    const first = sessionManager.getBranch().find((entry) => entry?.type === 'message' && entry.message?.role === 'user');
    const content = first?.message?.content;
    const text = typeof content === 'string'
      ? content
      : (Array.isArray(content) ? content : []).filter((part) => part?.type === 'text').map((part) => part.text).join('\n');
    return text.trim().slice(0, MAX_PROMPT) || undefined;
  } catch {
    return undefined;
  }
}

/** A bash result's exit code: 0 when it succeeded; Pi says a failure's only in its text. */
function exitCode(isError, output) {
  if (!isError) return { exit_code: 0 };
  const code = output.match(/Command exited with code (\d+)\s*$/);
  return code ? { exit_code: Number(code[1]) } : {};
}

/** `text` cut to MAX_TEXT bytes of UTF-8 (no broken character at the end). */
function cutText(text) {
  if (text.length * 3 <= MAX_TEXT || Buffer.byteLength(text) <= MAX_TEXT) return text;
  return Buffer.from(text).subarray(0, MAX_TEXT).toString('utf8').replace(/\uFFFD+$/, '');
}

/** A tool's arguments with every long string cut. */
function cut(value, depth = 0) {
  if (typeof value === 'string') return cutText(value);
  if (!value || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.slice(0, 1000).map((v) => cut(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cut(v, depth + 1)]));
}
