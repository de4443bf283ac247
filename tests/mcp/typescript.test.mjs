// The official TypeScript SDK (@modelcontextprotocol/sdk, pinned in package-lock.json) as an
// MCP client of `plandesk mcp` (stdio) and `plandesk serve` (streamable HTTP): a person decides
// with the real CLI; a client that cancels or times out leaves its plan abandoned at once; a
// client without a token is refused and nothing is recorded. The SDK speaks 2025-11-25, so over
// HTTP its cancellation is a `notifications/cancelled` POST of its own. A client that declares
// tasks (2025-11-25) may call submit_plan as a task it polls: the person's decision is the
// task's result, and a task cancelled, expired or left with its session leaves its plan
// abandoned at once, and one whose client falls silent (over HTTP) soon after; another client
// (or token) cannot see or touch it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  abandonedAtOnce, APPROVED, CLI, decide, pending, plandesk, plandeskJson, removeWorld,
  resultObject, revision, sleep, startServe, world, writePlan,
} from './harness.mjs';

/** A day: what the README tells people to give submit_plan; a test's person is quicker. */
const A_DAY = 86_400_000;

/** What a client that declares tasks says of them. */
const WITH_TASKS = { capabilities: { tasks: { list: {}, cancel: {} } } };

/**
 * Each transport: how to connect a client to a world (with the client's `options`, over HTTP
 * with `token`, another than the world's server's), and how to name a plan in a call.
 */
const transports = {
  stdio: {
    async connect(w, options) {
      const client = new Client({ name: 'plandesk-sdk-test', version: '1.0.0' }, options);
      await client.connect(new StdioClientTransport({
        command: CLI, args: ['mcp', '--workspace', w.ws], cwd: w.ws, env: w.env, stderr: 'ignore',
      }));
      return client;
    },
    args: (w, title, body = 'A plan') => ({ path: writePlan(w, `${slug(title)}.md`, `# ${title}\n\n${body}\n`) }),
  },
  http: {
    async connect(w, options, token) {
      w.server ??= await startServe(w);
      const client = new Client({ name: 'plandesk-sdk-test', version: '1.0.0' }, options);
      await client.connect(new StreamableHTTPClientTransport(new URL(w.server.url), {
        requestInit: { headers: { Authorization: `Bearer ${token ?? w.server.token}` } },
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
      assert.equal(tools.length, 2);
      assert.equal(tools[1].name, 'report_progress');
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

/** Every message of a task's stream (`callToolStream`) until it ends. */
async function drain(stream) {
  const messages = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

for (const [name, transport] of Object.entries(transports)) {
  describe(`TypeScript SDK tasks over ${name}`, () => {
    let w;
    let client;
    before(async () => {
      w = world(`ts-tasks-${name}`);
      client = await transport.connect(w, WITH_TASKS);
      // The SDK learns here which tools may be called as tasks.
      const { tools } = await client.listTools();
      assert.deepEqual(tools[0].execution, { taskSupport: 'optional' });
      assert.equal(tools[1].execution, undefined, 'report_progress answers at once');
    });
    after(async () => {
      await client?.close();
      await w.server?.stop();
      removeWorld(w);
    });

    test('the server declares tasks to a client that declares them, and only to it', async () => {
      assert.deepEqual(client.getServerCapabilities().tasks, {
        list: {}, cancel: {}, requests: { tools: { call: {} } },
      });
      const plain = await transport.connect(w);
      try {
        assert.equal(plain.getServerCapabilities().tasks, undefined);
      } finally {
        await plain.close();
      }
    });

    test('submit_plan as a task: polled while a person decides, the decision its result', async () => {
      // Every request gives up after 2 s, the person takes 4 s: only polling gets the answer.
      const stream = client.experimental.tasks.callToolStream(
        { name: 'submit_plan', arguments: transport.args(w, 'Task approve') }, undefined, { timeout: 2_000 });
      const [messages] = await Promise.all([
        drain(stream),
        (async () => {
          await pending(w);
          await sleep(4_000);
          return decide(w, 'approve', '--note', 'Keep the cache small');
        })(),
      ]);
      const [created, ...rest] = messages;
      assert.equal(created.type, 'taskCreated', JSON.stringify(messages));
      assert.equal(created.task.status, 'working');
      assert.match(created.task.taskId, /^[0-9a-f]{32}$/);
      assert.equal(created.task.pollInterval, 300);
      const polls = rest.filter((m) => m.type === 'taskStatus');
      assert.ok(polls.length >= 5, `polled every 300 ms through a 4 s wait: ${polls.length}`);
      assert.equal(polls.at(-1).task.status, 'completed');
      const last = rest.at(-1);
      assert.equal(last.type, 'result', JSON.stringify(last));
      const object = resultObject(last.result);
      assert.equal(last.result.isError, false);
      assert.equal(object.content, `${APPROVED}\n\nReviewer notes: Keep the cache small`);
      assert.equal(object.submittedPlan.title, 'Task approve');
      assert.equal(revision(w, 'Task approve').status, 'approved');
      // The result stays there to fetch again, and the task is listed as completed.
      const again = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      assert.deepEqual(resultObject(again), object);
      const { tasks } = await client.experimental.tasks.listTasks();
      assert.ok(tasks.some((t) => t.taskId === created.task.taskId && t.status === 'completed'), JSON.stringify(tasks));
    });

    test('a cancelled task leaves its plan abandoned at once', async () => {
      const stream = client.experimental.tasks.callToolStream(
        { name: 'submit_plan', arguments: transport.args(w, 'Task cancel') });
      const { value: created } = await stream.next();
      assert.equal(created.type, 'taskCreated');
      await pending(w);
      const cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
      assert.equal(cancelled.status, 'cancelled');
      const took = await abandonedAtOnce(w, 'Task cancel');
      console.log(`# ${name}: cancelled task's plan abandoned after ${took} ms`);
      const rest = await drain(stream);
      assert.equal(rest.at(-1).type, 'error');
      assert.match(rest.at(-1).error.message, /cancelled/);
      await assert.rejects(client.experimental.tasks.cancelTask(created.task.taskId), (err) => {
        assert.equal(err.code, -32602);
        assert.match(err.message, /terminal status 'cancelled'/);
        return true;
      });
    });

    test('a task whose ttl runs out leaves its plan abandoned', async () => {
      const stream = client.experimental.tasks.callToolStream(
        { name: 'submit_plan', arguments: transport.args(w, 'Task expire') }, undefined, { task: { ttl: 1_500 } });
      const { value: created } = await stream.next();
      assert.equal(created.task.ttl, 1_500);
      await pending(w);
      await abandonedAtOnce(w, 'Task expire');
      await assert.rejects(client.experimental.tasks.getTask(created.task.taskId), /not found/i);
      await stream.return();
    });

    test('a task whose client ends its session leaves its plan abandoned at once', async () => {
      const leaving = await transport.connect(w, WITH_TASKS);
      await leaving.listTools();
      const stream = leaving.experimental.tasks.callToolStream(
        { name: 'submit_plan', arguments: transport.args(w, 'Task left') });
      const { value: created } = await stream.next();
      assert.equal(created.type, 'taskCreated');
      await pending(w);
      // Over stdio the server's stdin closes; over HTTP the client ends its session (DELETE).
      if (name === 'http') await leaving.transport.terminateSession();
      await leaving.close();
      const took = await abandonedAtOnce(w, 'Task left');
      console.log(`# ${name}: a leaving client's task abandoned after ${took} ms`);
    });
  });
}

test('TypeScript SDK tasks over http: another client or token cannot see or touch a task', async () => {
  const w = world('ts-tasks-strangers');
  let owner;
  const others = [];
  try {
    owner = await transports.http.connect(w, WITH_TASKS);
    await owner.listTools();
    const stream = owner.experimental.tasks.callToolStream(
      { name: 'submit_plan', arguments: transports.http.args(w, 'Task mine') });
    const { value: created } = await stream.next();
    const id = created.task.taskId;
    await pending(w);
    const otherToken = plandesk(w, ['token', 'create', 'sdk-stranger']).trim();
    others.push(await transports.http.connect(w, WITH_TASKS, otherToken));
    // Another client on the same token is another session: not the task's either.
    others.push(await transports.http.connect(w, WITH_TASKS));
    for (const other of others) {
      const { tasks } = await other.experimental.tasks.listTasks();
      assert.deepEqual(tasks, []);
      for (const attempt of [
        () => other.experimental.tasks.getTask(id),
        () => other.experimental.tasks.cancelTask(id),
        () => other.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 2_000 }),
      ]) {
        await assert.rejects(attempt(), (err) => {
          assert.equal(err.code, -32602, err.message);
          assert.match(err.message, /not found/i);
          return true;
        });
      }
    }
    assert.equal(revision(w, 'Task mine').status, 'pending');
    assert.equal((await owner.experimental.tasks.getTask(id)).status, 'working');
    await owner.experimental.tasks.cancelTask(id);
    await abandonedAtOnce(w, 'Task mine');
    await drain(stream);
  } finally {
    for (const client of [owner, ...others]) await client?.close();
    await w.server?.stop();
    removeWorld(w);
  }
});

test('TypeScript SDK tasks over http: a client gone without a word loses its plan; one that polls keeps it', async () => {
  const w = world('ts-tasks-silent');
  // Silent for 2 s, the server takes a client to be gone (30 s unless set).
  w.env.PLANDESK_MCP_TASK_IDLE_MS = '2000';
  let vanishing;
  let polling;
  try {
    vanishing = await transports.http.connect(w, WITH_TASKS);
    await vanishing.listTools();
    const gone = vanishing.experimental.tasks.callToolStream(
      { name: 'submit_plan', arguments: transports.http.args(w, 'Task vanished') });
    const { value: created } = await gone.next();
    assert.equal(created.type, 'taskCreated');
    assert.ok(created.task.pollInterval <= 2_000 / 6, JSON.stringify(created.task));
    assert.match(created.task.statusMessage, /at least every 2 s.*abandoned/);
    // It stops polling and goes without ending its session, as a crashed client would.
    await gone.return();
    await vanishing.close();
    const took = await abandonedAtOnce(w, 'Task vanished');
    console.log(`# http: a vanished client's task abandoned ${took} ms after it went silent`);
    assert.ok(took >= 1_000, `not before the limit: ${took} ms`);

    // Polled every 300 ms (each request giving up after 2 s) while the person takes 5 s.
    polling = await transports.http.connect(w, WITH_TASKS);
    await polling.listTools();
    const stream = polling.experimental.tasks.callToolStream(
      { name: 'submit_plan', arguments: transports.http.args(w, 'Task polled') }, undefined, { timeout: 2_000 });
    const [messages] = await Promise.all([
      drain(stream),
      (async () => {
        await pending(w);
        await sleep(5_000);
        assert.equal(revision(w, 'Task polled').status, 'pending');
        return decide(w, 'approve');
      })(),
    ]);
    const last = messages.at(-1);
    assert.equal(last.type, 'result', JSON.stringify(last));
    assert.equal(resultObject(last.result).content, APPROVED);
    assert.equal(revision(w, 'Task polled').status, 'approved');
  } finally {
    for (const client of [vanishing, polling]) await client?.close();
    await w.server?.stop();
    removeWorld(w);
  }
});

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
