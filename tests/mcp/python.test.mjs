// The official Python SDK (`mcp` from PyPI, pinned in requirements.txt, in the venv `./x test`
// makes) as an MCP client of `plandesk mcp` (stdio) and `plandesk serve` (streamable HTTP),
// through client.py: a person decides with the real CLI; a client that cancels or times out
// leaves its plan abandoned at once; a client without a token is refused and nothing is
// recorded. The SDK speaks 2026-07-28 where the server does (it does: rmcp 3.11), where
// cancelling closes the call's stream; `mode: legacy` makes it speak 2025-11-25, where a
// cancellation is a `notifications/cancelled` of its own.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';

import {
  abandonedAtOnce, APPROVED, CLI, decide, pending, plandeskJson, PYTHON, removeWorld, revision,
  sleep, startServe, waitFor, world, writePlan,
} from './harness.mjs';

const CLIENT = join(import.meta.dirname, 'client.py');

/** client.py with `spec`: its events as they come, and its stdin to tell it to go on. */
class PythonClient {
  constructor(w, spec) {
    this.child = spawn(PYTHON, [CLIENT, JSON.stringify({ cli: CLI, workspace: w.ws, ...spec })],
      { cwd: w.ws, env: w.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.events = [];
    this.stderr = '';
    this.child.stderr.on('data', (d) => { this.stderr += d; });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.events.push(JSON.parse(line)));
    this.exited = new Promise((r) => this.child.once('exit', r));
  }

  /** The first event named `name`; fails on an `error` event or if the client exits first. */
  event(name, ms = 20_000) {
    return waitFor(`client.py's ${name}`, () => {
      const found = this.events.find((e) => e.event === name || e.event === 'error');
      if (found?.event === 'error' && name !== 'error') throw new Error(`client.py: ${found.error}\n${this.stderr}`);
      if (!found && this.child.exitCode !== null) throw new Error(`client.py exited: ${JSON.stringify(this.events)}\n${this.stderr}`);
      return found;
    }, { ms });
  }

  /** Tells the client to go on (cancel its call, or end). */
  poke() {
    this.child.stdin.write('go\n');
  }

  async end() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Each way of connecting: the transport and protocol era, and how a plan is named in a call. */
const connections = {
  'stdio': { transport: 'stdio', mode: 'auto' },
  'http': { transport: 'http', mode: 'auto' },
  'http, 2025-11-25': { transport: 'http', mode: 'legacy' },
};

const slug = (title) => title.toLowerCase().replaceAll(/[^a-z0-9]+/g, '-');

function argsFor(w, transport, title) {
  const text = `# ${title}\n\nA plan\n`;
  return transport === 'stdio'
    ? { path: writePlan(w, `${slug(title)}.md`, text) }
    : { path: `plans/${slug(title)}.md`, plan: text };
}

for (const [name, connection] of Object.entries(connections)) {
  describe(`Python SDK over ${name}`, () => {
    let w;
    let spec;
    before(async () => {
      w = world(`py-${slug(name)}`);
      if (connection.transport === 'http') {
        w.server = await startServe(w);
      }
      spec = { ...connection, url: w.server?.url, token: w.server?.token };
    });
    after(async () => {
      await w.server?.stop();
      removeWorld(w);
    });

    /** Runs client.py for `action` on a plan titled `title`. */
    const client = (action, title, extra = {}) =>
      new PythonClient(w, { ...spec, action, arguments: argsFor(w, connection.transport, title), ...extra });

    test('an approval with a note reaches the agent', async () => {
      const py = client('call', 'Approve me');
      const connected = await py.event('connected');
      assert.equal(connected.protocolVersion, connection.mode === 'legacy' ? '2025-11-25' : '2026-07-28');
      await decide(w, 'approve', '--note', 'Keep the cache small');
      const { result } = await py.event('result');
      await py.end();
      const object = JSON.parse(result.content[0].text);
      // The SDK has checked structuredContent against the tool's output schema.
      assert.deepEqual(result.structuredContent, object);
      assert.equal(object.content, `${APPROVED}\n\nReviewer notes: Keep the cache small`);
      assert.equal(revision(w, 'Approve me').status, 'approved');
    });

    test('a rejection with feedback reaches the agent', async () => {
      const py = client('call', 'Reject me');
      await decide(w, 'reject', '--feedback', 'Measure first');
      const { result } = await py.event('result');
      await py.end();
      const object = JSON.parse(result.content[0].text);
      assert.match(object.content, /User feedback: Measure first/);
      assert.equal(revision(w, 'Reject me').status, 'rejected');
    });

    if (connection.transport === 'http') {
      test('progress keeps a waiting call\'s stream alive past a short read timeout', async () => {
        // 2 s without a byte and the client gives up; the person takes 4 s. The reports (every
        // 300 ms here) are what flows: at 2026-07-28 the answer's headers wait for them.
        const py = client('progress', 'Slow person', { read_timeout: 2 });
        await py.event('calling');
        await pending(w);
        await sleep(4_000);
        await decide(w, 'approve');
        const { result, progress } = await py.event('result');
        await py.end();
        assert.equal(JSON.parse(result.content[0].text).content, APPROVED);
        assert.ok(progress.length >= 5, `progress every 300 ms through a 4 s wait: ${JSON.stringify(progress)}`);
      });
    }

    test('a cancelled call leaves its plan abandoned at once', async () => {
      const py = client('cancel', 'Cancel me');
      await py.event('calling');
      await pending(w);
      py.poke();
      await py.event('cancelled');
      // The client is still connected: the cancellation did it.
      const took = await abandonedAtOnce(w, 'Cancel me');
      console.log(`# ${name}: cancelled call abandoned after ${took} ms`);
      await py.end();
    });

    test('a call the client times out leaves its plan abandoned at once', async () => {
      const py = client('timeout', 'Time me out', { timeout: 2 });
      await py.event('calling');
      await pending(w);
      const timedOut = await py.event('timed-out');
      assert.match(timedOut.error, /time/i);
      const took = await abandonedAtOnce(w, 'Time me out');
      console.log(`# ${name}: timed-out call abandoned after ${took} ms`);
      await py.end();
    });
  });
}

test('Python SDK over http without a token: refused, nothing recorded', async () => {
  const w = world('py-no-token');
  try {
    w.server = await startServe(w);
    const py = new PythonClient(w, { transport: 'http', mode: 'auto', url: w.server.url, token: null, action: 'connect' });
    await py.event('error');
    await py.end();
    const statuses = py.events.filter((e) => e.event === 'http').map((e) => e.status);
    assert.ok(statuses.length > 0 && statuses.every((s) => s === 401), `every request refused: ${statuses}`);
    assert.deepEqual(plandeskJson(w, ['runs']), []);
    assert.deepEqual(plandeskJson(w, ['history']), []);
  } finally {
    await w.server?.stop();
    removeWorld(w);
  }
});
