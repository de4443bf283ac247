// What the agent tests share: where things are, a throwaway world per test (HOME, workspace,
// Plandesk store), the `plandesk` CLI, bounded waits, tmux, and cleaning up every process a test
// started, even when it fails.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describeRequest, startFakeOpenAI } from './fake-openai.mjs';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = process.env.PLANDESK_CLI || join(ROOT, 'target/debug/plandesk');
export const BIN = join(import.meta.dirname, 'node_modules/.bin');
export const ARTIFACTS = join(ROOT, 'target/agents-artifacts');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A throwaway world: `home` (the agent's HOME), `ws` (its working directory), `data` (the
 * Plandesk store, handed to hooks through PLANDESK_DATA_DIR). The root's name is unique, so it
 * also marks every process started for this test (see `killMarked`).
 */
export function world(name) {
  const root = mkdtempSync(join(tmpdir(), `plandesk-agents-${name}-`));
  const w = { root, home: join(root, 'home'), ws: join(root, 'ws'), data: join(root, 'data') };
  mkdirSync(w.home, { recursive: true });
  mkdirSync(join(w.ws, 'src'), { recursive: true });
  writeFileSync(join(w.ws, 'src/fetch.js'), 'export async function fetchUser(id) {\n  return fetch(`/users/${id}`);\n}\n');
  return w;
}

/**
 * The environment an agent CLI runs in: nothing of this machine's agent settings or keys, the
 * store for its hooks, and a session bus that does not exist (the hook's own desktop
 * notification fails fast instead of popping up on a developer's desktop; the app's e2e tests
 * cover notifications).
 */
export function agentEnv(w, extra = {}) {
  return {
    PATH: process.env.PATH,
    HOME: w.home,
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    TMPDIR: tmpdir(),
    PLANDESK_DATA_DIR: w.data,
    DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(w.root, 'no-bus')}`,
    ...extra,
  };
}

/** `plandesk ARGS` on the test's store; its stdout. Throws with stderr on failure. */
export function plandesk(w, args, { env = {}, cwd = w.ws } = {}) {
  const res = spawnSync(CLI, args, {
    cwd, env: { ...process.env, PLANDESK_DATA_DIR: w.data, ...env }, encoding: 'utf8', timeout: 30_000,
  });
  if (res.status !== 0) {
    throw new Error(`plandesk ${args.join(' ')} failed (${res.status ?? res.signal}): ${res.stderr}${res.stdout}`);
  }
  return res.stdout;
}

export const plandeskJson = (w, args) => JSON.parse(plandesk(w, ['--json', ...args]));

/**
 * `plandesk install AGENT` with HOME pointed at the world's home, as a person would run it
 * (`env` added to its environment).
 */
export function install(w, agent, env = {}) {
  return spawnSync(CLI, ['install', agent], {
    cwd: w.ws, env: { ...process.env, HOME: w.home, PLANDESK_DATA_DIR: w.data, CLAUDE_CONFIG_DIR: '', CODEX_HOME: '', ...env },
    encoding: 'utf8', timeout: 30_000,
  });
}

/**
 * Polls `check` (sync or async) until it returns something truthy, which is returned. Past
 * `seconds`, throws "timed out after Ns waiting for WHAT", with `diagnose()` appended.
 */
export async function waitFor(what, check, { seconds = 30, every = 200, diagnose } = {}) {
  const until = Date.now() + seconds * 1000;
  let lastError;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > until) {
      const why = lastError ? `\nlast error: ${lastError.message}` : '';
      const more = diagnose ? `\n${await diagnose()}` : '';
      throw new Error(`timed out after ${seconds} s waiting for ${what}${why}${more}`);
    }
    await sleep(every);
  }
}

/** A tmux server of the test's own (its own socket), so nothing else's sessions are touched. */
export class Tmux {
  constructor(w, session = 'agent') {
    this.socket = join(w.root, 'tmux.sock');
    this.session = session;
    // Keep the pane (and what it last showed) if the program exits.
    this.conf = join(w.root, 'tmux.conf');
    writeFileSync(this.conf, 'set -g remain-on-exit on\nset -g history-limit 5000\n');
  }

  run(args, opts = {}) {
    return execFileSync('tmux', ['-S', this.socket, '-f', this.conf, ...args],
      { encoding: 'utf8', timeout: 10_000, ...opts });
  }

  /** Starts `argv` in a detached 160x50 session, in `cwd`, with exactly `env`. */
  start(argv, { cwd, env }) {
    const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    this.run(['new-session', '-d', '-s', this.session, '-x', '160', '-y', '50', '-c', cwd, ...envArgs, '--', ...argv],
      { env, cwd });
  }

  /** Types `text` literally, then Enter. */
  type(text) {
    this.run(['send-keys', '-t', this.session, '-l', text]);
    this.run(['send-keys', '-t', this.session, 'Enter']);
  }

  /** The pid of the program running in the pane. */
  pid() {
    return Number(this.run(['list-panes', '-t', this.session, '-F', '#{pane_pid}']).trim());
  }

  key(...keys) {
    this.run(['send-keys', '-t', this.session, ...keys]);
  }

  /** What the pane shows now, with its scrollback. */
  screen() {
    try {
      return this.run(['capture-pane', '-p', '-J', '-S', '-200', '-t', this.session]);
    } catch (err) {
      return `(no screen: ${err.message})`;
    }
  }

  kill() {
    try { this.run(['kill-server'], { stdio: 'ignore' }); } catch { /* already gone */ }
  }
}

/**
 * SIGKILLs every process whose environment or command line mentions `marker` (the test's
 * unique temporary root): the agent, its hooks, anything they started. Never this process.
 */
export function killMarked(marker) {
  const killed = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    if (Number(pid) === process.pid) continue;
    let text;
    try {
      text = readFileSync(`/proc/${pid}/environ`, 'latin1') + readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    } catch {
      continue;
    }
    if (!text.includes(marker)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
      killed.push(pid);
    } catch { /* gone */ }
  }
  return killed;
}

/** The processes of a world (`marker` in their environment or command line) whose command line matches `pattern`. */
export function processes(marker, pattern) {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      const cmdline = readFileSync(`/proc/${p}/cmdline`, 'latin1').replaceAll('\0', ' ');
      const environ = readFileSync(`/proc/${p}/environ`, 'latin1');
      return pattern.test(cmdline) && (environ.includes(marker) || cmdline.includes(marker));
    } catch {
      return false;
    }
  }).map(Number);
}

/** A process's parent pid; undefined once it is gone. */
export function parentOf(pid) {
  try {
    // Fields after the command's closing parenthesis: state, ppid, …
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * Types `prompt` in the agent's terminal and waits for its plan (from source kind `kind`) in
 * `plandesk pending`; returns the item.
 */
export async function typeFirstPlan({ w, tmux, diagnose }, kind, prompt) {
  tmux.type(prompt);
  const [item] = await waitFor('the plan in `plandesk pending`', () => {
    const items = pendingFrom(w, kind);
    return items.length ? items : null;
  }, { seconds: 40, diagnose });
  return item;
}

/** Waits for revision 2 of the agent's (`kind`) plan in the inbox (the plan revised after a
 * rejection), and returns that item. */
export async function secondPlan({ w, diagnose }, kind) {
  const [second] = await waitFor('revision 2 in `plandesk pending`', () => {
    const items = pendingFrom(w, kind);
    return items[0]?.revision?.revisionNo === 2 ? items : null;
  }, { seconds: 30, diagnose });
  return second;
}

/**
 * Runs `fn(ctx)` for an agent in a terminal: a world of its own (`name`), a fake OpenAI-compatible
 * model answering as `brain` says, and a tmux server; `ctx` is {w, fake, tmux, diagnose}.
 * `work`: the fake plays the scenario's work steps (in the agent's `tools`) once the plan is
 * approved. `start(ctx)` sets the agent up and starts it. Afterwards, also on failure, ends the
 * world (`endWorld`); a failure's report is kept among the artifacts as NAME-failure.txt.
 */
export async function withTmuxAgent(name, { brain, tools, work = false, start }, fn) {
  const w = world(name);
  const fake = await startFakeOpenAI(brain);
  fake.work = work ? scenarioSteps(w, tools) : [];
  const tmux = new Tmux(w);
  const diagnose = () => screenDiagnosis(name, fake, tmux, describeRequest);
  const ctx = { w, fake, tmux, diagnose };
  let failed = true;
  try {
    await start(ctx);
    await fn(ctx);
    failed = false;
  } finally {
    if (failed) saveArtifact(`${name}-failure.txt`, diagnose());
    await endWorld({ w, tmux, fake }, failed);
  }
}

/**
 * Ends a test's world, whether it passed or not: its tmux server, every process started for it
 * (the agent, any hook still waiting), the fake model server, and the folder (kept when the
 * test `failed` and KEEP_AGENT_WORLDS is set).
 */
export async function endWorld({ w, tmux, fake }, failed) {
  tmux.kill();
  killMarked(w.root);
  await fake.close();
  removeWorld(w, failed);
}

/** The scenario most agents' tests share: the request typed, the plan, the feedback on it, and
 * the revised plan that is approved (what `assertScenarioWork` holds the work against). */
export const PROMPT = 'Add a cache to fetchUser';
export const PLAN_1 = '# Cache user lookups\n\n1. Add an in-memory cache in `src/fetch.js`.\n2. Invalidate it on writes.\n';
export const FEEDBACK = 'Bound the cache: at most 1000 entries, evicting the least recently used';
export const PLAN_2 = '# Cache user lookups (bounded)\n\n1. Add an LRU cache of at most 1000 entries in `src/fetch.js`.\n'
  + '2. Invalidate it on writes.\n3. Test the eviction order.\n';

/**
 * What the model does once the scenario's plan is approved, as tool calls of an agent's own
 * (`tools`: its `write(path, content)`, `read(path)`, `edit(path, old, new)` and `shell(command,
 * description)`, each giving [name, args]): writes `src/cache.js` (outside the plan), reads and
 * edits `src/fetch.js`, runs a command that succeeds and one that fails. Each has a call id of
 * its own, which the fake model's brain follows.
 */
export function scenarioSteps(w, { write, read, edit, shell }) {
  let n = 0;
  const step = ([tool, args]) => ({ id: `call_work_${++n}`, tool, args });
  const [cache, fetch] = [join(w.ws, 'src/cache.js'), join(w.ws, 'src/fetch.js')];
  return [
    step(write(cache, 'export const cache = new Map();\n')),
    step(read(fetch)), // agents want a file read before it is edited
    step(edit(fetch, 'return fetch', 'return cache.get(id) ?? fetch')),
    step(shell('echo cached', 'Say it is done')),
    step(shell('ls src/eviction.test.js', 'Look for the test')),
  ];
}

/**
 * The work of the scenario the OpenAI-compatible agents' tests share, held against the plan it
 * was approved for (revision 2: an LRU cache in `src/fetch.js`, invalidation, an eviction test):
 * waits until `plandesk progress RUN` says the agent finished (`finishedBy`: the event that
 * says so), then checks the steps, the files (`src/fetch.js` planned, `src/cache.js` outside
 * the plan) and `commands` ([command, exit code]). Returns the progress.
 */
export async function assertScenarioWork(w, run, { finishedBy, diagnose, commands }) {
  assert.equal(readFileSync(join(w.ws, 'src/cache.js'), 'utf8'), 'export const cache = new Map();\n');
  assert.match(readFileSync(join(w.ws, 'src/fetch.js'), 'utf8'), /return cache\.get\(id\) \?\? fetch/);
  const progress = await waitFor(`the agent's ${finishedBy} in \`plandesk progress\``, () => {
    const p = plandeskJson(w, ['progress', run]);
    return p.finished ? p : null;
  }, { seconds: 15, diagnose });
  assert.equal(progress.revisionNo, 2, 'held against the approved revision');
  assert.deepEqual(progress.steps.map((s) => [s.text, s.state]), [
    ['Add an LRU cache of at most 1000 entries in `src/fetch.js`.', 'done'],
    ['Invalidate it on writes.', 'not-done-yet'],
    ['Test the eviction order.', 'not-done-yet'],
  ]);
  assert.deepEqual(progress.files.map((f) => [f.path, f.planned, f.changed]), [
    ['src/fetch.js', true, true],
    ['src/cache.js', false, true],
  ]);
  assert.deepEqual(progress.commands.map((c) => [c.command, c.exitCode]), commands);
  assert.equal(progress.summary, '1 of 3 steps done, 1 file outside the plan');
  return progress;
}

/** Removes the world, unless the test failed and KEEP_AGENT_WORLDS is set. */
export function removeWorld(w, failed) {
  if (failed && process.env.KEEP_AGENT_WORLDS) {
    console.error(`kept ${w.root}`);
    return;
  }
  rmSync(w.root, { recursive: true, force: true });
}

/** Saves text next to the other test artifacts; returns its path. */
export function saveArtifact(name, text) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, name);
  writeFileSync(path, text);
  return path;
}

/** The fake model's answer to `result`, a tool's result, in the scenario's work: the next work
 * step once a work step's result came back, after the last one `final`; anything else is
 * unexpected, said as text. */
export function nextWork(fake, result, final) {
  const done = fake.work.findIndex((step) => step.id === result.id);
  if (done >= 0) return fake.work[done + 1] ? [fake.work[done + 1]] : [{ text: final }];
  return [{ text: `fake model: unexpected tool result for ${result.name}: ${result.text.slice(0, 200)}` }];
}

/** The statuses of a run's revisions, oldest first (`plandesk history RUN`). */
export const statuses = (w, run) => plandeskJson(w, ['history', run]).map((r) => r.status);

/** The items of `plandesk pending` from one agent. */
export function pendingFrom(w, kind) {
  return plandeskJson(w, ['pending']).filter((item) => item.source?.kind === kind);
}

/**
 * What a failed TUI test says: every request the fake model got (each `describe`d), then any
 * `extra` sections ({title: text}), then the agent's terminal screen, also saved as
 * `NAME-screen.txt` among the artifacts.
 */
export function screenDiagnosis(name, fake, tmux, describe, extra = {}) {
  const screen = tmux.screen();
  const file = saveArtifact(`${name}-screen.txt`, screen);
  const sections = Object.entries(extra).map(([title, text]) => `${title}:\n${text}\n`).join('');
  return `requests to the fake model:\n${summarize(fake.requests, describe)}\n${sections}screen (${file}):\n${screen}`;
}

/** The shortest summary of a recorded request list, for failure messages. */
export function summarize(requests, describe) {
  return requests.map((r, i) => `  #${i + 1} ${r.path} ${describe(r)}`).join('\n');
}
