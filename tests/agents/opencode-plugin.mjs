// What opencode.test.mjs and kilo.test.mjs share: OpenCode's tools (Kilo CLI, its fork, has
// the same), and Plandesk's plugin alone, in Node, with a stand-in for `plandesk` and for the
// agent's client (no agent, no store): what it sends, and that anything but an explicit allow
// fails closed.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toolResults } from './fake-openai.mjs';
import { ROOT, sleep } from './harness.mjs';

/** OpenCode's (and Kilo's) tools for the scenario's work (see `scenarioSteps`). */
export const OPENCODE_TOOLS = {
  write: (filePath, content) => ['write', { filePath, content }],
  read: (filePath) => ['read', { filePath }],
  edit: (filePath, oldString, newString) => ['edit', { filePath, oldString, newString }],
  shell: (command, description) => ['bash', { command, description }],
};

/** The first request to `fake` whose last message is plan_exit's result, matching `pattern`. */
export function planExitResult(fake, pattern) {
  return fake.main().find((r) => {
    if (r.body.messages?.at(-1)?.role !== 'tool') return false;
    const [res] = toolResults(r.body);
    return res?.name === 'plan_exit' && pattern.test(res.text);
  });
}

/** A stand-in for `plandesk`: `MODE OUT hook|record AGENT`; it appends its stdin to
 * OUT/hook.jsonl or OUT/record.jsonl and the agent named to OUT/hook.agents, then answers as
 * MODE says (`wait`: never; SIGTERM is noted in OUT/signal). */
const STANDIN = `
const fs = require('node:fs');
const [mode, out, command, agent] = process.argv.slice(2);
const stdin = fs.readFileSync(0, 'utf8');
fs.appendFileSync(out + '/' + command + '.jsonl', stdin.replace(/\\n/g, ' ') + '\\n');
fs.appendFileSync(out + '/' + command + '.agents', agent + '\\n');
process.on('SIGTERM', () => { fs.writeFileSync(out + '/signal', 'SIGTERM'); process.exit(143); });
if (command === 'record') process.exit(0);
const answers = {
  allow: [0, '{"decision":"allow","message":"\\\\n\\\\nReviewer notes: Keep it small"}\\n'], deny: [0, '{"decision":"deny","reason":"Make it smaller"}'],
  failed: [1, '{"decision":"allow"}'], junk: [0, 'allow'], empty: [0, ''], unexplained: [0, '{"decision":"deny"}'],
};
if (mode === 'wait') setInterval(() => {}, 1000);
else { process.stdout.write(answers[mode][1]); process.exitCode = answers[mode][0]; }
`;

/**
 * The plugin as installed with the stand-in answering `mode` (`missing`: no command at all),
 * loaded in this process as OpenCode would (`kilo`: as Kilo CLI, which sets KILO_PID to its
 * own pid), with a session (`session`: its slug and creation time, null: not found) whose
 * first request is `prompt`. Returns its hooks, what it logged, and `sent(command)`: what it
 * sent to `plandesk hook` / `plandesk record`; `agents(command)`: the agent each call named.
 */
export async function loadPluginAlone(w, mode, {
  prompt, vcs = 'git', session = { slug: 'brave-squid', created: 1765000000000 }, lookupMs = 0, kilo = false,
} = {}) {
  const out = join(w.root, `out-${mode}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(out);
  const standin = join(w.root, 'standin.cjs');
  writeFileSync(standin, STANDIN);
  const source = readFileSync(join(ROOT, 'src/source/opencode/plandesk.js'), 'utf8');
  const file = join(out, 'plandesk.mjs');
  const command = mode === 'missing' ? [join(w.root, 'no-such-plandesk')] : [process.execPath, standin, mode, out];
  writeFileSync(file, source.replace(/^const PLANDESK = .*$/m, `const PLANDESK = ${JSON.stringify(command)};`));
  const logs = [];
  const client = {
    app: { log: async ({ body }) => { logs.push(body); } },
    session: {
      get: async ({ path }) => (await sleep(lookupMs), session ? { data: { id: path.id, slug: session.slug, time: { created: session.created } } } : { error: 'no' }),
      messages: async () => ({ data: [{ info: { role: 'user' }, parts: [{ type: 'text', text: prompt }, { type: 'text', text: 'reminder', synthetic: true }] }] }),
    },
  };
  const kiloPid = process.env.KILO_PID;
  if (kilo) process.env.KILO_PID = String(process.pid);
  let module;
  try {
    module = await import(`file://${file}`);
  } finally {
    if (kiloPid === undefined) delete process.env.KILO_PID; else process.env.KILO_PID = kiloPid;
  }
  const { PlandeskPlugin, ...others } = module;
  assert.deepEqual(Object.keys(others), [], 'OpenCode wants every export to be a plugin function');
  const hooks = await PlandeskPlugin({ client, project: { id: 'p', worktree: w.ws, vcs }, worktree: w.ws, directory: w.ws });
  const lines = (name) => {
    try {
      return readFileSync(join(out, name), 'utf8').trim().split('\n');
    } catch {
      return [];
    }
  };
  const sent = (command) => lines(`${command}.jsonl`).map((l) => JSON.parse(l));
  const agents = (command) => lines(`${command}.agents`);
  const planExit = (sessionID = 'ses_1', args = {}) => hooks['tool.execute.before']({ tool: 'plan_exit', sessionID, callID: 'c1' }, { args });
  return { hooks, logs, out, sent, agents, planExit };
}
