// Plandesk's plugin for OpenCode (checked with opencode-ai 1.18.33) and for Kilo CLI, its fork
// (checked with @kilocode/cli 7.7.7). `plandesk install opencode` writes it into OpenCode's
// plugins folder (~/.config/opencode/plugins/plandesk.js), `plandesk install kilo` into Kilo's
// (~/.config/kilo/plugins/plandesk.js), with the two lines below filled in. The agent loads it
// when it starts; "OpenCode" below stands for either.
//
// - Before the plan agent's `plan_exit` runs, it runs `plandesk hook opencode` with the
//   session's plan file and waits for your decision in Plandesk. An approval lets `plan_exit`
//   run (OpenCode then asks whether to switch to the build agent, Kilo whether to implement in
//   a new session, here, or keep refining); anything else throws, and
//   the model reads the thrown message as plan_exit's result: your feedback, or why the plan
//   is not approved. It fails closed: if Plandesk cannot be asked or answers anything else,
//   the plan is not approved. What you add to an approval (notes; an edit, which Plandesk also
//   writes into the plan file) is appended to plan_exit's result, where the model reads it.
// - When the session is stopped while its plan waits, the waiting `plandesk hook opencode` is
//   stopped (SIGTERM), and Plandesk marks the plan abandoned.
// - Once an approved plan_exit ran (the person also said Yes to OpenCode's question), what the
//   agent then does (files written or edited, commands run) and the end of each of its turns
//   go to `plandesk record opencode`, one at a time, in the background. Kilo implements in a
//   new session that it opens with "Plan file: <the approved plan>": its work is recorded as
//   the planning session's.
//
// Plain JavaScript with no dependencies. Every export of a plugin file must be a function.
import { spawn } from 'node:child_process';
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';

const PLANDESK = ["plandesk"]; // set by plandesk install
const RECORD = true; // set by plandesk install

/** The agent running the plugin, as `plandesk hook` and `plandesk record` name it: Kilo sets
 * KILO_PID to its own pid (so one inherited from a Kilo that started OpenCode is not taken). */
const HOST = process.env.KILO_PID === String(process.pid) ? 'kilo' : 'opencode';
const HOST_NAME = HOST === 'kilo' ? 'Kilo CLI' : 'OpenCode';

/** The most of a tool's output (and of any one argument) sent to `plandesk record`. */
const MAX_TEXT = 64 * 1024;
/** The most of `plandesk hook`'s stdout read, and of its stderr kept for an error message. */
const MAX_ANSWER = 1024 * 1024;
const MAX_STDERR = 4 * 1024;
/** The most of the session's first request sent along as the plan's prompt. */
const MAX_PROMPT = 4 * 1024;
/** How long looking up a session may take before the plugin falls back on what it saw. */
const LOOKUP_MS = 5_000;
/** The most records waiting in one session's queue; past that new ones are dropped. */
const MAX_QUEUED = 64;
/** The most sessions and plan files the plugin remembers (older ones are forgotten first). */
const MAX_REMEMBERED = 1000;
/** Tools whose work is recorded after an approval. */
const RECORDED = new Set(['write', 'edit', 'multiedit', 'apply_patch', 'patch', 'bash']);

/** The message for a plan Plandesk could not review (`why`): fail closed. */
const notReviewed = (why) => `Plandesk could not review this plan (${why}), so it is not approved. `
  + 'Do not go on with it; tell the user.';

/** Every `plandesk hook` still waiting in this process (shared by every copy of this file). */
const everyWaiting = globalThis[Symbol.for('plandesk.opencode.waiting')] ??= (() => {
  const all = new Set();
  // OpenCode exiting (also on an uncaught error): no plan may keep waiting for it.
  process.once('exit', () => {
    for (const child of all) {
      try { child.kill('SIGTERM'); } catch { /* gone */ }
    }
  });
  return all;
})();

export const PlandeskPlugin = async ({ client, project, worktree, directory }) => {
  const cwd = directory || worktree || process.cwd();
  /** sessionID → the `plandesk hook` processes waiting for a decision. */
  const waiting = new Map();
  /** sessionID → {plan, message}: the plan file Plandesk approved and what the reviewer added,
   * until plan_exit ran (or failed: OpenCode asks "switch to the build agent?", and No or Esc
   * ends the turn in plan_exit). */
  const allowed = new Map();
  /** Sessions whose approved plan_exit ran (while this OpenCode runs): their work is recorded. */
  const approved = new Set();
  /** sessionID → {slug, created} from OpenCode's session events. */
  const sessions = new Map();
  /** sessionID → the last plan file (.opencode/plans/*.md) the session wrote or edited. */
  const planWrites = new Map();
  /** sessionID → the tail of its record queue (records are sent one at a time, in order). */
  const queues = new Map();
  /** An approved plan file → the session that planned it (Kilo implements it in another). */
  const plannedIn = new Map();
  /** sessionID → the planning session whose plan it implements (its records are that one's). */
  const implementing = new Map();
  /** sessionID → the id of its first message from the user's side (Kilo's handover is one). */
  const firstUserMessage = new Map();

  /** sessionID → the reviews under way, from plan_exit until `plandesk hook` answered. */
  const reviews = new Map();

  const stopWaiting = (sessionID) => {
    for (const review of reviews.get(sessionID) ?? []) review.stopped = true;
    for (const child of waiting.get(sessionID) ?? []) {
      child.stoppedBecause = `the ${HOST_NAME} session was stopped`;
      try { child.kill('SIGTERM'); } catch { /* gone */ }
    }
  };
  const stopAll = () => { for (const id of new Set([...reviews.keys(), ...waiting.keys()])) stopWaiting(id); };

  /** A line in OpenCode's log (`--print-logs` shows it on stderr); never throws. */
  const log = (level, message, extra) => withTimeout(
    Promise.resolve().then(() => client.app.log({ body: { service: 'plandesk', level, message, extra } })),
    2_000,
  ).catch(() => {});
  // The proof that OpenCode loaded this plugin: `opencode debug config --print-logs` runs every
  // plugin and shows this line on stderr (a plugin that fails to load is only logged, or not
  // even that for a syntax error).
  await log('info', 'Plandesk plugin loaded', { plugin: import.meta.url, command: PLANDESK.join(' '), host: HOST });

  /** The plan file OpenCode gives this session: <worktree>/.opencode/plans/<created>-<slug>.md
   * in a git project, else in OpenCode's data folder. Which one exists, else the one expected.
   * In Kilo: the file Kilo will carry out (see `kiloPlanFile`). */
  async function planFile(sessionID, given) {
    const info = (await lookup(sessionID)) ?? sessions.get(sessionID);
    if (info) remember(sessions, sessionID, info);
    if (HOST === 'kilo') return kiloPlanFile(sessionID, given, info);
    const candidates = [];
    if (info?.slug && Number.isFinite(info.created)) {
      const name = `${info.created}-${info.slug}.md`;
      const inProject = join(worktree || cwd, '.opencode', 'plans', name);
      const inData = join(dataDir(), 'plans', name);
      candidates.push(...(project?.vcs ? [inProject, inData] : [inData, inProject]));
    }
    const written = planWrites.get(sessionID);
    if (written) candidates.push(written);
    return candidates.find(isFile) ?? candidates[0];
  }

  /** Kilo's project folder: its worktree, or the session's folder outside git. */
  const kiloBase = () => (worktree && worktree !== '/' ? worktree : (directory || cwd));

  /** The plan file Kilo will carry out, which is the one reviewed: the file plan_exit names
   * (`given`, Kilo's model names it) resolved as Kilo resolves it, else the session's own (the
   * one it wrote last, else <created>-<slug>.md in .kilo/plans); then, as Kilo picks, the
   * newest of it and the session's other plan files beside it (<created>-*.md). A name outside
   * the project is refused (thrown: not approved), and so is a session whose creation time is
   * unknown (which file Kilo takes cannot be told). plan_exit is then told exactly this file. */
  function kiloPlanFile(sessionID, given, info) {
    if (!Number.isFinite(info?.created)) throw new Error(notReviewed('which plan file Kilo will carry out cannot be told'));
    let target;
    if (given !== undefined && given !== null) {
      if (typeof given !== 'string' || !given || given.length > 4096) throw new Error(notReviewed('plan_exit named no usable plan file'));
      target = resolve(kiloBase(), given);
      const inside = [kiloBase(), directory || cwd].some((root) => target.startsWith(root + sep));
      if (!inside) throw new Error(notReviewed(`plan_exit named ${JSON.stringify(given.slice(0, 300))}, which is not in this project`));
    } else {
      const own = [planWrites.get(sessionID), info.slug && join(kiloBase(), '.kilo', 'plans', `${info.created}-${info.slug}.md`)].filter(Boolean);
      // None written yet: the expected one, which Plandesk tells the model to write first.
      target = own.find(isFile) ?? own.at(-1);
      if (!target) return undefined;
    }
    return newestPlan(target, info.created);
  }

  async function lookup(sessionID) {
    try {
      const res = await withTimeout(client.session.get({ path: { id: sessionID } }), LOOKUP_MS);
      const s = res?.data ?? res;
      if (s?.id === sessionID && s.slug && Number.isFinite(s.time?.created)) {
        return { slug: s.slug, created: s.time.created };
      }
    } catch { /* fall back on the session's events */ }
    return undefined;
  }

  /** What the person typed first in the session (its text parts, not OpenCode's own), if known. */
  async function firstRequest(sessionID) {
    try {
      const res = await withTimeout(client.session.messages({ path: { id: sessionID } }), LOOKUP_MS);
      const messages = Array.isArray(res?.data) ? res.data : Array.isArray(res) ? res : [];
      for (const message of messages) {
        if (message?.info?.role !== 'user') continue;
        const text = (message.parts ?? [])
          .filter((part) => part?.type === 'text' && !part.synthetic && typeof part.text === 'string')
          .map((part) => part.text).join('\n').trim();
        if (text) return text.slice(0, MAX_PROMPT);
      }
    } catch { /* none */ }
    return undefined;
  }

  /** Runs `plandesk hook opencode` for the plan; returns normally only on its explicit allow. */
  async function review(sessionID, given) {
    const mine = { stopped: false };
    const all = reviews.get(sessionID) ?? new Set();
    all.add(mine);
    reviews.set(sessionID, all);
    try {
      return await reviewOnce(sessionID, mine, given);
    } finally {
      all.delete(mine);
      if (!all.size && reviews.get(sessionID) === all) reviews.delete(sessionID);
    }
  }

  async function reviewOnce(sessionID, mine, given) {
    const plan = await planFile(sessionID, given);
    if (!plan) {
      throw new Error(notReviewed('the session\'s plan file could not be found'));
    }
    const prompt = await firstRequest(sessionID);
    // Stopped while the plan file was looked up: never ask.
    if (mine.stopped) throw new Error(`The plan was not reviewed: the ${HOST_NAME} session was stopped.`);
    const payload = JSON.stringify({ session_id: sessionID, cwd, plan_file: plan, ...(prompt ? { prompt } : {}) });
    let result;
    try {
      result = await run(['hook', HOST], payload, sessionID);
    } catch (err) {
      throw new Error(notReviewed(`\`plandesk hook ${HOST}\` could not be started: ${err?.message ?? err}`));
    }
    if (result.stoppedBecause) {
      throw new Error(`The plan was not reviewed: ${result.stoppedBecause}.`);
    }
    let answer;
    try {
      answer = JSON.parse(result.stdout.trim());
    } catch { /* below */ }
    if (result.code === 0 && answer?.decision === 'allow') {
      allowed.set(sessionID, { plan, message: typeof answer.message === 'string' ? answer.message : '' });
      return plan;
    }
    if (result.code === 0 && answer?.decision === 'deny' && typeof answer.reason === 'string' && answer.reason.trim()) {
      throw new Error(answer.reason);
    }
    const why = result.code !== 0
      ? `\`plandesk hook ${HOST}\` exited with ${result.signal ?? `status ${result.code}`}${result.stderr.trim() ? `: ${result.stderr.trim().slice(-500)}` : ''}`
      : `\`plandesk hook ${HOST}\` gave no decision`;
    throw new Error(notReviewed(why));
  }

  /** Runs PLANDESK + `args` with `stdin`; resolves {code, signal, stdout, stderr, stoppedBecause}
   * when it exits, rejects if it cannot start. Tracked under `sessionID` while it runs. */
  function run(args, stdin, sessionID) {
    return new Promise((resolvePromise, reject) => {
      const [command, ...rest] = PLANDESK;
      const child = spawn(command, [...rest, ...args], { cwd, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
      const mine = waiting.get(sessionID) ?? new Set();
      mine.add(child);
      everyWaiting.add(child);
      waiting.set(sessionID, mine);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8');
      child.stderr.setEncoding('utf8');
      child.stdout.on('data', (chunk) => { if (stdout.length < MAX_ANSWER) stdout += chunk; });
      child.stderr.on('data', (chunk) => { stderr = (stderr + chunk).slice(-MAX_STDERR); });
      const forget = () => {
        everyWaiting.delete(child);
        mine.delete(child);
        if (!mine.size && waiting.get(sessionID) === mine) waiting.delete(sessionID);
      };
      child.once('error', (err) => { forget(); reject(err); });
      child.once('close', (code, signal) => {
        forget();
        resolvePromise({ code, signal, stdout, stderr, stoppedBecause: child.stoppedBecause });
      });
      child.stdin.on('error', () => { /* it exited without reading: its exit says why */ });
      child.stdin.end(stdin);
    });
  }

  /** In Kilo, the plan file plan_exit took if it is not `plan`, the one approved (another was
   * written beside it since); else undefined. */
  function kiloTook(sessionID, plan, output) {
    if (HOST !== 'kilo') return undefined;
    const said = output?.metadata?.plan;
    if (typeof said === 'string' && resolve(kiloBase(), said) !== plan) return resolve(kiloBase(), said);
    const created = sessions.get(sessionID)?.created;
    const newest = Number.isFinite(created) ? newestPlan(plan, created) : plan;
    return newest !== plan ? newest : undefined;
  }

  /** Sends one record to `plandesk record opencode` after the session's earlier ones, as the
   * planning session's if the session implements another's plan; never throws, never holds up
   * the agent. */
  function record(sessionID, body) {
    if (!RECORD) return;
    const queue = queues.get(sessionID) ?? { tail: Promise.resolve(), length: 0 };
    if (queue.length >= MAX_QUEUED) return;
    queue.length += 1;
    queues.set(sessionID, queue);
    const stdin = JSON.stringify({ session_id: implementing.get(sessionID) ?? sessionID, cwd, ...body });
    queue.tail = queue.tail.then(() => new Promise((done) => {
      try {
        const [command, ...rest] = PLANDESK;
        const child = spawn(command, [...rest, 'record', HOST], { cwd, stdio: ['pipe', 'ignore', 'ignore'], windowsHide: true });
        child.once('error', () => done());
        child.once('close', () => done());
        child.stdin.on('error', () => {});
        child.stdin.end(stdin);
      } catch {
        done();
      }
    })).finally(() => {
      queue.length -= 1;
      if (!queue.length && queues.get(sessionID) === queue) queues.delete(sessionID);
    });
  }

  return {
    'tool.execute.before': async (input, output) => {
      if (input?.tool !== 'plan_exit') return;
      try {
        const plan = await review(input.sessionID, output?.args?.path);
        // Kilo carries out the plan file plan_exit is given: exactly the one approved.
        if (HOST === 'kilo' && output?.args && typeof output.args === 'object') output.args.path = plan;
      } catch (err) {
        if (/^Plandesk could not review/.test(err?.message)) log('error', err.message, { session: input.sessionID });
        throw err;
      }
    },

    'tool.execute.after': async (input, output) => {
      try {
        const { tool, sessionID, args } = input ?? {};
        // Called only when the tool succeeded: for plan_exit, once the person said Yes (in
        // Kilo, before it asks how to implement).
        if (tool === 'plan_exit' && allowed.has(sessionID)) {
          const { plan, message } = allowed.get(sessionID);
          allowed.delete(sessionID);
          const took = kiloTook(sessionID, plan, output);
          if (took) {
            // Kilo took another file than the one approved (changed meanwhile): that one is not.
            log('error', `Kilo took ${took}, not the plan approved (${plan})`, { session: sessionID });
            if (output) output.output = `Plandesk approved ${plan}, but Kilo took ${took}, which nobody approved. Do not implement it; tell the user.`;
            return;
          }
          remember(plannedIn, plan, sessionID);
          approved.add(sessionID);
          // The reviewer's notes and edit, after the agent's own words.
          if (message && output && typeof output.output === 'string') output.output += message;
        }
        if ((tool === 'write' || tool === 'edit') && typeof args?.filePath === 'string' && isPlanPath(args.filePath)) {
          remember(planWrites, sessionID, resolve(cwd, args.filePath));
        }
        if (!RECORD || !approved.has(sessionID) || !RECORDED.has(tool)) return;
        const exit = output?.metadata?.exit;
        record(sessionID, {
          tool,
          args: cut(args ?? {}),
          output: cutText(typeof output?.output === 'string' ? output.output : ''),
          ...(tool === 'bash' && Number.isInteger(exit) ? { exit_code: exit } : {}),
        });
      } catch { /* recording never gets in the agent's way */ }
    },

    event: async ({ event }) => {
      try {
        const props = event?.properties ?? {};
        const sessionID = props.sessionID ?? props.info?.id;
        switch (event?.type) {
          case 'session.created':
          case 'session.updated':
            if (props.info?.slug && Number.isFinite(props.info?.time?.created)) {
              remember(sessions, props.info.id, { slug: props.info.slug, created: props.info.time.created });
            }
            break;
          case 'message.updated':
            if (props.info?.role === 'user' && props.info.sessionID && !firstUserMessage.has(props.info.sessionID)) {
              remember(firstUserMessage, props.info.sessionID, props.info.id);
            }
            break;
          case 'message.part.updated': {
            // Kilo's "Start new session" opens the implementing session with a user message of
            // its own naming the approved plan file on its first line.
            const part = props.part;
            const named = part?.type === 'text' && typeof part.text === 'string' && part.messageID !== undefined
              && part.messageID === firstUserMessage.get(part.sessionID)
              && part.text.slice(0, 4096).match(/^Plan file: ([^\n]+)\n/);
            const from = named && plannedIn.get(resolve(worktree || cwd, named[1].trim()));
            if (from && part.sessionID && part.sessionID !== from && !implementing.has(part.sessionID)) {
              remember(implementing, part.sessionID, from);
              approved.add(part.sessionID);
            }
            break;
          }
          case 'session.error':
            // Esc (interrupt) while plan_exit waits: MessageAbortedError, then session.idle.
            if (props.error?.name === 'MessageAbortedError' && sessionID) stopWaiting(sessionID);
            break;
          case 'session.idle':
            // The session's loop ended; while plan_exit waits it is busy, so a plan still
            // waiting now was given up on.
            if (!sessionID) break;
            stopWaiting(sessionID);
            allowed.delete(sessionID);
            if (approved.has(sessionID)) record(sessionID, { event: 'idle' });
            break;
          case 'session.deleted':
            if (sessionID) {
              stopWaiting(sessionID);
              allowed.delete(sessionID);
              approved.delete(sessionID);
              sessions.delete(sessionID);
              planWrites.delete(sessionID);
              implementing.delete(sessionID);
              firstUserMessage.delete(sessionID);
            }
            break;
          default:
        }
      } catch { /* an event never breaks OpenCode */ }
    },

    // OpenCode shutting down its instance (quit, /exit): no plan may keep waiting for it.
    dispose: async () => { stopAll(); },
  };
};

/** The agent's data folder: $XDG_DATA_HOME/opencode, else ~/.local/share/opencode (Kilo: kilo). */
function dataDir() {
  return join(process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), HOST);
}

function isPlanPath(file) {
  const path = isAbsolute(file) ? file : resolve(file);
  return path.endsWith('.md') && (path.includes(`${sep}.${HOST}${sep}plans${sep}`) || path.startsWith(join(dataDir(), 'plans') + sep));
}

/** `map[key] = value`, forgetting the oldest entries past MAX_REMEMBERED. */
function remember(map, key, value) {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value);
}

/** The plan file Kilo carries out for `target`: the newest (then first by name) of it and the
 * session's other plan files beside it, named <created>-*.md, as Kilo 7.7.7 picks it. */
function newestPlan(target, created) {
  const dir = dirname(target);
  let names = [];
  try {
    names = readdirSync(dir).filter((name) => name.startsWith(`${created}-`) && name.endsWith('.md')).slice(0, 1000);
  } catch { /* no folder: the target alone */ }
  const files = [...new Set([target, ...names.map((name) => join(dir, name))])].flatMap((path) => {
    try {
      const stat = statSync(path);
      return stat.isFile() ? [{ path, mtime: stat.mtimeMs }] : [];
    } catch {
      return [];
    }
  });
  files.sort((a, b) => b.mtime - a.mtime || a.path.localeCompare(b.path));
  return files[0]?.path ?? target;
}

function isFile(path) {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timed out')), ms); }),
  ]).finally(() => clearTimeout(timer));
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
