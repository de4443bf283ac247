// The official TypeScript SDK (@modelcontextprotocol/sdk, pinned in package-lock.json) as an
// MCP client of `plandesk mcp` (stdio) and `plandesk serve` (streamable HTTP): a person decides
// with the real CLI; a client that cancels or times out leaves its plan abandoned at once; a
// client without a token is refused and nothing is recorded. The SDK speaks 2025-11-25, so over
// HTTP its cancellation is a `notifications/cancelled` POST of its own.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  abandonedAtOnce, APPROVED, CLI, decide, pending, plandeskJson, removeWorld, resultObject,
  revision, sleep, startServe, world, writePlan,
} from './harness.mjs';

/** A day: what the README tells people to give submit_plan; a test's person is quicker. */
const A_DAY = 86_400_000;

/** Each transport: how to connect a client to a world, and how to name a plan in a call. */
const transports = {
  stdio: {
    async connect(w) {
      const client = new Client({ name: 'plandesk-sdk-test', version: '1.0.0' });
      await client.connect(new StdioClientTransport({
        command: CLI, args: ['mcp', '--workspace', w.ws], cwd: w.ws, env: w.env, stderr: 'ignore',
      }));
      return client;
    },
    args: (w, title, body = 'A plan') => ({ path: writePlan(w, `${slug(title)}.md`, `# ${title}\n\n${body}\n`) }),
  },
  http: {
    async connect(w) {
      w.server ??= await startServe(w);
      const client = new Client({ name: 'plandesk-sdk-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(w.server.url), {
        requestInit: { headers: { Authorization: `Bearer ${w.server.token}` } },
      }));
      return client;
    },
    args: (_w, title, body = 'A plan') => ({ path: `plans/${slug(title)}.md`, plan: `# ${title}\n\n${body}\n` }),
  },
};

const slug = (title) => title.toLowerCase().replaceAll(/[^a-z0-9]+/g, '-');

for (const [name, transport] of Object.entries(transports)) {
  describe(`TypeScript SDK over ${name}`, () => {
    let w;
    let client;
    before(async () => {
      w = world(`ts-${name}`);
      client = await transport.connect(w);
    });
    after(async () => {
      await client?.close();
      await w.server?.stop();
      removeWorld(w);
    });

    test('lists submit_plan with its metadata', async () => {
      const { tools } = await client.listTools();
      assert.equal(tools.length, 1);
      const [tool] = tools;
      assert.equal(tool.name, 'submit_plan');
      assert.equal(tool.title, 'Submit plan for review');
      assert.deepEqual(tool.annotations, {
        title: 'Submit plan for review', readOnlyHint: false, destructiveHint: false,
        idempotentHint: false, openWorldHint: false,
      });
      assert.deepEqual(tool.outputSchema.required, ['toolId', 'content', 'isError']);
      assert.match(tool.description, /hours/);
      assert.doesNotMatch(tool.description, /write_file/);
    });

    test('an approval with a note reaches the agent', async () => {
      const [result] = await Promise.all([
        // The SDK checks structuredContent against the tool's output schema here.
        client.callTool({ name: 'submit_plan', arguments: transport.args(w, 'Approve me') }, undefined, { timeout: A_DAY }),
        decide(w, 'approve', '--note', 'Keep the cache small'),
      ]);
      const object = resultObject(result);
      assert.equal(result.isError, false);
      assert.equal(object.content, `${APPROVED}\n\nReviewer notes: Keep the cache small`);
      assert.equal(object.submittedPlan.title, 'Approve me');
      assert.equal(revision(w, 'Approve me').status, 'approved');
    });

    test('a rejection with feedback reaches the agent', async () => {
      const [result] = await Promise.all([
        client.callTool({ name: 'submit_plan', arguments: transport.args(w, 'Reject me') }, undefined, { timeout: A_DAY }),
        decide(w, 'reject', '--feedback', 'Measure first'),
      ]);
      const object = resultObject(result);
      assert.match(object.content, /User feedback: Measure first/);
      assert.equal(object.submittedPlan.feedback, 'Measure first');
      assert.equal(revision(w, 'Reject me').status, 'rejected');
    });

    test('a cancelled call leaves its plan abandoned at once', async () => {
      const controller = new AbortController();
      const call = client.callTool({ name: 'submit_plan', arguments: transport.args(w, 'Cancel me') }, undefined,
        { signal: controller.signal, timeout: A_DAY });
      await pending(w);
      controller.abort('the user pressed Esc');
      await assert.rejects(call, /Esc|abort/i);
      const took = await abandonedAtOnce(w, 'Cancel me');
      console.log(`# ${name}: cancelled call abandoned after ${took} ms`);
    });

    test('a call the client times out leaves its plan abandoned at once', async () => {
      const call = client.callTool({ name: 'submit_plan', arguments: transport.args(w, 'Time me out') }, undefined,
        { timeout: 2_000 });
      await pending(w);
      await assert.rejects(call, /timed out/i);
      const took = await abandonedAtOnce(w, 'Time me out');
      console.log(`# ${name}: timed-out call abandoned after ${took} ms`);
    });

    test('progress keeps a call alive past its timeout', async () => {
      const heard = [];
      const [result] = await Promise.all([
        client.callTool({ name: 'submit_plan', arguments: transport.args(w, 'Slow person') }, undefined, {
          timeout: 2_000, resetTimeoutOnProgress: true, onprogress: (p) => heard.push(p),
        }),
        (async () => {
          // The person takes 4 s; the client gives up after 2 s without progress.
          await pending(w);
          await sleep(4_000);
          return decide(w, 'approve', '--note', 'Go');
        })(),
      ]);
      assert.equal(resultObject(result).content, `${APPROVED}\n\nReviewer notes: Go`);
      assert.ok(heard.length >= 5, `progress every 300 ms through a 4 s wait: ${JSON.stringify(heard)}`);
      assert.match(heard.at(-1).message, /Waiting for a person/);
    });
  });
}

test('TypeScript SDK over http without a token: refused, nothing recorded', async () => {
  const w = world('ts-no-token');
  try {
    w.server = await startServe(w);
    const client = new Client({ name: 'plandesk-sdk-test', version: '1.0.0' });
    await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(w.server.url))), (err) => {
      assert.equal(err.code, 401, err.message);
      // What the SDK shows its user says what to send and how to get it.
      assert.match(err.message, /Authorization: Bearer pdt_.*plandesk token create/);
      return true;
    });
    assert.deepEqual(plandeskJson(w, ['runs']), []);
    assert.deepEqual(plandeskJson(w, ['history']), []);
  } finally {
    await w.server?.stop();
    removeWorld(w);
  }
});
