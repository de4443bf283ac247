// What the SDK tests share: a throwaway world per test (workspace, Plandesk store), the
// `plandesk` CLI as a person uses it (pending, approve, reject, history), `plandesk serve` on a
// free loopback port with a token, and bounded waits.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = process.env.PLANDESK_CLI || join(ROOT, 'target/debug/plandesk');
/** The Python that has the pinned `mcp` package (`./x test` makes this venv). */
export const PYTHON = process.env.PLANDESK_MCP_PYTHON || join(ROOT, 'target/mcp-venv/bin/python');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** How long a client that gives up must wait at most for its plan to be abandoned. */
export const AT_ONCE_MS = 5_000;

/**
 * A throwaway world: `ws` (the workspace `plandesk mcp` serves, with its plans folder) and
 * `data` (the Plandesk store). `env` is what every Plandesk process of the test runs with: no
 * session bus (a desktop notification fails fast instead of showing on a developer's desktop)
 * and progress every 300 ms, so a test sees several reports within a few seconds; tasks ask to
 * be polled every 300 ms too.
 */
export function world(name) {
  const root = mkdtempSync(join(tmpdir(), `plandesk-mcp-${name}-`));
  const w = { root, ws: join(root, 'ws'), data: join(root, 'data') };
  mkdirSync(join(w.ws, '.plandesk/plans'), { recursive: true });
  w.env = {
    ...process.env,
    PLANDESK_DATA_DIR: w.data,
    DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(root, 'no-bus')}`,
    PLANDESK_MCP_PROGRESS_MS: '300',
    PLANDESK_MCP_POLL_MS: '300',
  };
  return w;
}

export function removeWorld(w) {
  rmSync(w.root, { recursive: true, force: true });
}

/** Writes a plan file into the workspace's plans folder; returns its path relative to it. */
export function writePlan(w, name, text) {
  const path = `.plandesk/plans/${name}`;
  writeFileSync(join(w.ws, path), text);
  return path;
}

/** `plandesk ARGS` on the world's store; its stdout. Throws with stderr on failure. */
export function plandesk(w, args) {
  const res = spawnSync(CLI, args, { cwd: w.ws, env: w.env, encoding: 'utf8', timeout: 30_000 });
  if (res.status !== 0) {
    throw new Error(`plandesk ${args.join(' ')} failed (${res.status ?? res.signal}): ${res.stderr}${res.stdout}`);
  }
  return res.stdout;
}

export const plandeskJson = (w, args) => JSON.parse(plandesk(w, ['--json', ...args]));

/**
 * Polls `check` until it returns something truthy, which is returned; past `ms`, throws
 * "timed out after N ms waiting for WHAT".
 */
export async function waitFor(what, check, { ms = 20_000, every = 50 } = {}) {
  const until = Date.now() + ms;
  let lastError;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > until) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}${lastError ? `: ${lastError.message}` : ''}`);
    }
    await sleep(every);
  }
}

/** The plan waiting for a person, once there is one (the inbox's newest). */
export const pending = (w) => waitFor('a pending plan', () => plandeskJson(w, ['pending'])[0]);

/** Decides the pending plan as a person would, with the real CLI: `plandesk VERB RUN ARGS`. */
export async function decide(w, verb, ...args) {
  const item = await pending(w);
  plandesk(w, [verb, item.runId, ...args]);
  return item;
}

/** The history's revision titled `title`. */
export function revision(w, title) {
  const found = plandeskJson(w, ['history']).find((r) => r.title === title);
  if (!found) throw new Error(`no revision titled ${title}`);
  return found;
}

/**
 * Waits until the revision titled `title` is abandoned, at most AT_ONCE_MS; returns how long it
 * took. Then checks that nobody is asked about it and that a decision on it is refused, saying
 * it was abandoned.
 */
export async function abandonedAtOnce(w, title) {
  const started = Date.now();
  await waitFor(`${title} abandoned`, () => revision(w, title).status === 'abandoned', { ms: AT_ONCE_MS });
  const took = Date.now() - started;
  const asked = plandeskJson(w, ['pending']).filter((p) => p.revision?.title === title);
  if (asked.length) throw new Error(`${title} is still put to a person: ${JSON.stringify(asked)}`);
  const run = revision(w, title).runId;
  const res = spawnSync(CLI, ['approve', run], { cwd: w.ws, env: w.env, encoding: 'utf8', timeout: 30_000 });
  if (res.status === 0 || !res.stderr.includes('abandoned')) {
    throw new Error(`approving abandoned ${title} was not refused as abandoned (${res.status}): ${res.stderr}`);
  }
  return took;
}

/** `plandesk serve` on a free loopback port, and a token for it. */
export async function startServe(w) {
  const token = plandesk(w, ['token', 'create', 'sdk-test']).trim();
  const child = spawn(CLI, ['serve', '--listen', '127.0.0.1:0'], { cwd: w.ws, env: w.env, stdio: ['ignore', 'ignore', 'pipe'] });
  const lines = createInterface({ input: child.stderr });
  const first = await new Promise((resolveLine, reject) => {
    lines.once('line', resolveLine);
    child.once('exit', (code) => reject(new Error(`plandesk serve exited (${code})`)));
  });
  // Keep reading, so the server never blocks on a full pipe.
  lines.on('line', () => {});
  const address = first.split('http://')[1]?.split(': ')[0];
  if (!address) throw new Error(`no address in ${first}`);
  return {
    child,
    token,
    url: `http://${address}/mcp`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The result object a `submit_plan` answer carries, checked to be its structured content. */
export function resultObject(result) {
  const text = result.content?.[0]?.text;
  const object = JSON.parse(text);
  if (JSON.stringify(result.structuredContent) !== JSON.stringify(object)) {
    throw new Error(`structuredContent differs from the text: ${JSON.stringify(result)}`);
  }
  return object;
}

export const APPROVED = 'Plan approved. Proceed with implementation following the approved plan.';
