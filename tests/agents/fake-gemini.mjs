// A fake of the Gemini API on 127.0.0.1, enough for the real Gemini CLI:
// `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (SSE), `:generateContent` and
// `:countTokens`. Every request is recorded; what the model answers is decided by a `brain` the
// test gives: (body, server) => an array of parts (`{text}` or `{functionCall: {name, args}}`).
import http from 'node:http';

export async function startFakeGemini(brain) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => { raw += chunk; });
    req.on('end', () => {
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch { /* recorded as {} */ }
      const url = new URL(req.url, 'http://x');
      const method = url.pathname.split(':').pop();
      const entry = { method, path: url.pathname, body, at: Date.now() };
      requests.push(entry);
      try {
        if (method === 'countTokens') return json(res, 200, { totalTokens: 42 });
        if (method === 'streamGenerateContent' || method === 'generateContent') {
          const parts = brain(body, fake) || [{ text: 'OK' }];
          entry.answer = parts;
          const reply = {
            candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
            usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 },
          };
          if (method === 'generateContent') return json(res, 200, reply);
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          res.write(`data: ${JSON.stringify(reply)}\n\n`);
          return res.end();
        }
        json(res, 404, { error: { code: 404, message: `fake: no ${url.pathname}`, status: 'NOT_FOUND' } });
      } catch (err) {
        entry.error = String(err?.stack || err);
        json(res, 500, { error: { code: 500, message: String(err), status: 'INTERNAL' } });
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake = {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    /** The requests of the conversation itself (the ones that offer tools). */
    main: () => requests.filter((r) => Array.isArray(r.body.tools) && r.body.tools.length),
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
  return fake;
}

function json(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The function responses in the request's last user turn: [{name, text}]. */
export function functionResponses(body) {
  const turns = (body.contents || []).filter((c) => c.role !== 'model');
  const last = turns[turns.length - 1];
  return (last?.parts || []).filter((p) => p.functionResponse)
    .map((p) => ({ name: p.functionResponse.name, text: JSON.stringify(p.functionResponse.response ?? {}) }));
}

/** The declared tool with this name, if offered. */
export function declaration(body, name) {
  return (body.tools || []).flatMap((t) => t.functionDeclarations || []).find((f) => f.name === name);
}
