// A fake of the Anthropic Messages API on 127.0.0.1, enough for the real Claude Code CLI:
// `POST /v1/messages` (streamed as SSE, or one JSON body when `stream` is false) and
// `POST /v1/messages/count_tokens`. Every request is recorded; what the model answers is decided
// by a `brain` the test gives: (body, server) => an array of content blocks
// (`{type: 'text', text}` or `{type: 'tool_use', name, input}`; ids are added here, unique
// across the server's life, because a repeated tool_use id silently confuses Claude Code).
import http from 'node:http';

export async function startFakeAnthropic(brain) {
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
        if (url.pathname.endsWith('/count_tokens')) {
          return json(res, 200, { input_tokens: 42 });
        }
        if (req.method === 'POST' && url.pathname === '/v1/messages') {
          const blocks = (brain(body, fake) || [{ type: 'text', text: 'OK' }]).map((b) =>
            b.type === 'tool_use' ? { id: `toolu_fake_${String(nextId++).padStart(4, '0')}`, ...b } : b);
          entry.answer = blocks;
          return body.stream ? stream(res, body, blocks, nextId++) : json(res, 200, message(body, blocks, nextId++));
        }
        // Anything else Claude Code may ask for (none expected with nonessential traffic off).
        json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake: no ${url.pathname}` } });
      } catch (err) {
        entry.error = String(err?.stack || err);
        json(res, 500, { type: 'error', error: { type: 'api_error', message: String(err) } });
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake = {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    /** The Messages requests of the conversation itself (the ones that offer tools). */
    main: () => requests.filter((r) => r.path === '/v1/messages' && Array.isArray(r.body.tools) && r.body.tools.length),
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
  return fake;
}

function json(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function stopReason(blocks) {
  return blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
}

function message(body, blocks, n) {
  return {
    id: `msg_fake_${n}`, type: 'message', role: 'assistant', model: body.model || 'claude-fake',
    content: blocks, stop_reason: stopReason(blocks), stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 20 },
  };
}

function stream(res, body, blocks, n) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', { message: { ...message(body, [], n), stop_reason: null, usage: { input_tokens: 100, output_tokens: 1 } } });
  blocks.forEach((block, index) => {
    if (block.type === 'tool_use') {
      send('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    } else {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: stopReason(blocks), stop_sequence: null }, usage: { output_tokens: 20 } });
  send('message_stop', {});
  res.end();
}

/** The text of every block of a message's content (strings, text blocks, tool results). */
export function contentText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b) => {
    if (typeof b === 'string') return b;
    if (b.type === 'text') return b.text;
    if (b.type === 'tool_result') return contentText(b.content);
    return '';
  }).join('\n');
}

/**
 * The tool results of the request's last user message: [{tool_use_id, is_error, text}].
 * (Claude Code may put a `system` message after it, e.g. "## Exited Plan Mode".)
 */
export function toolResults(body) {
  const last = lastUser(body);
  if (!last || !Array.isArray(last.content)) return [];
  return last.content.filter((b) => b.type === 'tool_result')
    .map((b) => ({ tool_use_id: b.tool_use_id, is_error: !!b.is_error, text: contentText(b.content) }));
}

/** The last message of role `user`. */
export function lastUser(body) {
  return [...(body.messages || [])].reverse().find((m) => m.role === 'user');
}

/** The tool_use block (from earlier assistant turns) with this id. */
export function toolUse(body, id) {
  for (const m of body.messages || []) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    const found = m.content.find((b) => b.type === 'tool_use' && b.id === id);
    if (found) return found;
  }
  return undefined;
}

/** Everything the model was told: system text and every message, as one string. */
export function allText(body) {
  const system = typeof body.system === 'string' ? body.system : contentText(body.system);
  return [system, ...(body.messages || []).map((m) => contentText(m.content))].join('\n');
}
