// A fake of the OpenAI Chat Completions API on 127.0.0.1, enough for the agent CLIs that speak
// it (Qwen Code, Copilot CLI, Factory Droid, OpenCode, Pi): `POST …/chat/completions` (streamed
// as SSE, or one JSON body when `stream` is false) and `GET …/models`. Every request is
// recorded; what the model answers is decided by a `brain` the test gives: (body, fake) => an
// array of parts (`{text}` or `{tool: name, args}`; call ids are added here, unique across the
// server's life).
import http from 'node:http';

export async function startFakeOpenAI(brain, { model = 'fake-model' } = {}) {
  const requests = [];
  let nextId = 1;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { raw += chunk; });
    req.on('end', () => {
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch { /* recorded as {} */ }
      const url = new URL(req.url, 'http://x');
      const entry = { method: req.method, path: url.pathname, body, at: Date.now() };
      requests.push(entry);
      try {
        if (req.method === 'GET' && url.pathname.endsWith('/models')) {
          return json(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: 0, owned_by: 'fake' }] });
        }
        if (req.method === 'POST' && url.pathname.endsWith('/chat/completions')) {
          const parts = (brain(body, fake) || [{ text: 'OK' }]).map((p) =>
            p.tool ? { id: `call_fake_${String(nextId++).padStart(4, '0')}`, ...p } : p);
          entry.answer = parts;
          const n = nextId++;
          return body.stream ? stream(res, body, parts, n) : json(res, 200, completion(body, parts, n));
        }
        json(res, 404, { error: { message: `fake: no ${req.method} ${url.pathname}`, type: 'not_found' } });
      } catch (err) {
        entry.error = String(err?.stack || err);
        json(res, 500, { error: { message: String(err), type: 'server_error' } });
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake = {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    model,
    requests,
    /** The completion requests of the conversation itself (the ones that offer tools). */
    main: () => requests.filter((r) => r.path.endsWith('/chat/completions') && r.body.tools?.length),
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
  return fake;
}

function json(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const toolCalls = (parts) => parts.filter((p) => p.tool).map((p, index) => ({
  index, id: p.id, type: 'function', function: { name: p.tool, arguments: JSON.stringify(p.args ?? {}) },
}));
const finishReason = (parts) => (parts.some((p) => p.tool) ? 'tool_calls' : 'stop');
const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

function completion(body, parts, n) {
  const text = parts.filter((p) => p.text !== undefined).map((p) => p.text).join('\n');
  const calls = toolCalls(parts);
  return {
    id: `chatcmpl-fake-${n}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000),
    model: body.model || 'fake-model',
    choices: [{
      index: 0, finish_reason: finishReason(parts),
      message: { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) },
    }],
    usage,
  };
}

function stream(res, body, parts, n) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const base = { id: `chatcmpl-fake-${n}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model || 'fake-model' };
  const send = (delta, finish = null, extra = {}) =>
    res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`);
  send({ role: 'assistant', content: '' });
  for (const part of parts) {
    if (part.text !== undefined) send({ content: part.text });
  }
  toolCalls(parts).forEach((call) => send({ tool_calls: [call] }));
  send({}, finishReason(parts));
  if (body.stream_options?.include_usage) {
    res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
  }
  res.write('data: [DONE]\n\n');
  res.end();
}

/** A message's content as text (strings, or arrays of `{type: 'text', text}` parts). */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('\n');
}

/**
 * The tool results after the last assistant message: [{id, name, text}], the name from the
 * assistant's call with that id.
 */
export function toolResults(body) {
  const messages = body.messages || [];
  const last = messages.findLastIndex((m) => m.role === 'assistant');
  if (last < 0) return [];
  const calls = messages[last].tool_calls || [];
  return messages.slice(last + 1).filter((m) => m.role === 'tool').map((m) => ({
    id: m.tool_call_id,
    name: calls.find((c) => c.id === m.tool_call_id)?.function?.name,
    text: contentText(m.content),
  }));
}

/** The names of the tools the request offers. */
export const toolNames = (body) => (body.tools || []).map((t) => t.function?.name ?? t.name);

/** Everything the model was told, as one string. */
export const allText = (body) => (body.messages || []).map((m) => contentText(m.content)).join('\n');

/** One line on a recorded request, for failure messages: its tools and messages, the last
 * message, what the fake answered, and the tool results it was sent. */
export function describeRequest(r) {
  const res = toolResults(r.body).map((x) => `${x.name}: ${x.text.slice(0, 140)}`);
  const last = contentText(r.body.messages?.at(-1)?.content).slice(0, 100);
  return `[${toolNames(r.body).length} tools, ${r.body.messages?.length} msgs, last ${JSON.stringify(last)}] → ${JSON.stringify(r.answer ?? null).slice(0, 160)} | results: ${JSON.stringify(res)}`;
}
