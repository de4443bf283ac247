// A small W3C WebDriver client (tauri-driver speaks the protocol; Node 20 has fetch).
import { writeFile } from 'node:fs/promises';

const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Session {
  constructor(base, id) {
    this.base = base;
    this.id = id;
  }

  static async start(port, application, args = []) {
    const base = `http://127.0.0.1:${port}`;
    const res = await fetch(`${base}/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ capabilities: { alwaysMatch: { 'tauri:options': { application, args } } } }),
    });
    const body = await res.json();
    if (!res.ok) throw new Error(`no WebDriver session: ${JSON.stringify(body)}`);
    return new Session(base, body.value.sessionId);
  }

  async cmd(method, path, body) {
    const res = await fetch(`${this.base}/session/${this.id}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60000),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const err = new Error(`${method} ${path}: ${json.value?.error}: ${json.value?.message}`);
      err.webdriver = json.value?.error;
      throw err;
    }
    return json.value;
  }

  /** Runs `script` (a function body) in the page with `args`. */
  exec(script, ...args) {
    return this.cmd('POST', '/execute/sync', { script, args });
  }

  /** Polls `check` (a page-side expression) until it is truthy; returns its value. */
  async waitFor(expression, { timeout = 20000, what = expression } = {}) {
    const until = Date.now() + timeout;
    let last;
    while (Date.now() < until) {
      try {
        last = await this.exec(`return (${expression});`);
        if (last) return last;
      } catch (e) {
        last = e.message;
      }
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
  }

  async find(css, timeout) {
    // The view may be drawn again between the check and the lookup: look again, a few times.
    for (let attempt = 0; ; attempt += 1) {
      await this.waitFor(`document.querySelector(${JSON.stringify(css)})`, { timeout, what: css });
      try {
        const found = await this.cmd('POST', '/element', { using: 'css selector', value: css });
        return found[ELEMENT];
      } catch (e) {
        if (attempt >= 5 || !/no such element/.test(e.message)) throw e;
        await sleep(50);
      }
    }
  }

  async click(css) {
    const el = await this.find(css);
    await this.waitFor(`!document.querySelector(${JSON.stringify(css)}).disabled`, { what: `${css} enabled` });
    await this.cmd('POST', `/element/${el}/click`, {});
  }

  /** Types into an element; WebDriver key codes (e.g. \uE009 Control) are allowed. */
  async type(css, text) {
    const el = await this.find(css);
    await this.cmd('POST', `/element/${el}/value`, { text });
  }

  /** Presses keys on whatever has focus. */
  async keys(text) {
    const actions = [];
    for (const ch of text) actions.push({ type: 'keyDown', value: ch }, { type: 'keyUp', value: ch });
    await this.cmd('POST', '/actions', { actions: [{ type: 'key', id: 'keyboard', actions }] });
  }

  text(css) {
    return this.exec(`const el = document.querySelector(arguments[0]); return el ? el.innerText : null;`, css);
  }

  async screenshot(path) {
    // WebKitWebDriver grabs the frame the page presents next: on a page that has nothing to
    // draw, that waited for whatever changed the page next (measured: 2 to 10 s a screenshot,
    // 92 of the 153 s the app's tests took). An animation of a box that draws nothing presents
    // a frame every few milliseconds while the screenshot is taken. It also lets the page paint
    // what the DOM already says before the frame is grabbed.
    await this.cmd('POST', '/execute/async', {
      script: `const done = arguments[0];
        const box = document.createElement('div');
        box.id = 'webdriver-frame';
        box.style.cssText = 'position: fixed; left: 0; top: 0; width: 1px; height: 1px; pointer-events: none';
        box.animate([{ opacity: 0.5 }, { opacity: 1 }], { duration: 100, iterations: Infinity });
        document.body.append(box);
        requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 50)));`,
      args: [],
    });
    try {
      const png = await this.cmd('GET', '/screenshot');
      await writeFile(path, Buffer.from(png, 'base64'));
    } finally {
      await this.exec("document.getElementById('webdriver-frame')?.remove(); return true;");
    }
  }

  async title() {
    return this.cmd('GET', '/title');
  }

  async close() {
    try { await this.cmd('DELETE', ''); } catch { /* the app may already be gone */ }
  }
}
