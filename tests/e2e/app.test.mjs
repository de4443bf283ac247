// End-to-end: the real app binary in a real window (Xvfb), driven through WebDriver.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import {
  APP, ARTIFACTS, CTRL_ENTER, cli, fixture, killApp, openApp, startDriver, startNotificationDaemon, watchNotifications,
} from './harness.mjs';
import { Session } from './webdriver.mjs';

const PORT = 4444;
let driver;
let daemon;

before(async () => {
  daemon = startNotificationDaemon();
  driver = await startDriver(PORT);
});

after(() => {
  driver?.stop();
  daemon?.stop();
});

async function startDemoRun(app, prompt) {
  await app.click('#new-run');
  await app.type('#prompt', prompt);
  await app.click('#start');
  await app.find('#plan-title');
}

test('a demo run: plan, reject with feedback, revised plan with the diff, approve, finish', async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    await startDemoRun(app, 'Add a --verbose flag that prints each step');
    assert.equal(await app.text('#plan-revision'), 'Revision 1');
    assert.match(await app.text('#plan-path'), /^\.plandesk\/plans\/.+\.md$/);
    const plan = await app.text('#plan');
    assert.match(plan, /Steps/, 'the plan is rendered');
    await app.waitFor("document.querySelector('#inbox-count').textContent === '1'", { what: 'inbox count 1' });
    // No comment yet: the plan has the card's width, and the bar above it says how to comment.
    assert.equal(await app.exec("return document.querySelector('.review-main aside.comments').offsetWidth"), 0);
    assert.equal(await app.exec("const m = document.querySelector('.review-main'); return m.querySelector('.review-plan').offsetWidth === m.clientWidth"), true);
    assert.ok(await app.exec("return document.querySelector('#comment-hint').offsetWidth > 0"), 'the hint shows in the bar');
    assert.match(await app.text('#comment-hint'), /^Select lines of the plan/);
    await app.screenshot(join(ARTIFACTS, 'review.png'));

    await app.type('#feedback', 'Also log to a file under logs/');
    await app.click('#reject');
    await app.waitFor("document.querySelector('#plan-revision')?.textContent === 'Revision 2'", { what: 'revision 2' });
    assert.match(await app.text('#plan'), /logs\//, 'the revision took the feedback');

    await app.click('#compare');
    await app.find('table.diff');
    const between = await app.text('#between');
    assert.match(between, /Revision 1 was rejected: “Also log to a file under logs\/”/);
    const marked = await app.exec("return document.querySelectorAll('table.diff td.ins mark, table.diff td.ins').length");
    assert.ok(marked > 0, 'added lines are highlighted');
    await app.screenshot(join(ARTIFACTS, 'diff.png'));

    // The revision compared waits: approved from the comparison.
    assert.match(await app.text('#approve'), /^Approve revision 2/);
    await app.keys('a');
    await app.waitFor("document.querySelector('.page-head .badge')?.textContent === 'finished'", { what: 'the run to finish' });
    assert.equal(await app.exec("return document.querySelector('#review-slot').children.length"), 0, 'nothing left to review');
    await app.waitFor("document.querySelector('#inbox-count').textContent === '0'");
    // The demo plan's Context (its files) and Risks are not steps to do: only its Steps are.
    await app.find('#progress-steps');
    assert.match(await app.text('#progress-steps li:first-child .step-text'), /^Survey /);
    assert.match(await app.text('#progress-context summary'), /^Not counted as steps: \d+ list items under headings such as Context or Risks$/);
    await app.click('#progress-context summary');
    assert.match(await app.text('#progress-context ul'), /src\/main\.rs/, 'unfolded: what they are');
    await app.exec("document.getElementById('progress-context').scrollIntoView(); return true;");
    await app.screenshot(join(ARTIFACTS, 'progress-context.png'));
    await app.screenshot(join(ARTIFACTS, 'approved.png'));
    const history = JSON.parse(cli(fx, ['--json', 'history']));
    assert.deepEqual(history.map((r) => r.decision?.action), ['rejected', 'approved']);
  } finally {
    await app.close();
  }
});

test('reject without feedback, then tell it what to change in the next message', async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    await startDemoRun(app, 'Refactor the greeting');
    await app.keys('r');
    assert.equal(await app.exec('return document.activeElement.id'), 'feedback', 'r focuses the feedback box');
    await app.type('#feedback', CTRL_ENTER);
    await app.find('#message');
    await app.waitFor("document.activeElement && document.activeElement.id === 'message'", { what: 'the message box to have focus' });
    await app.type('#message', `Split it into two functions${CTRL_ENTER}`);
    await app.waitFor("document.querySelector('#plan-revision')?.textContent === 'Revision 2'", { what: 'a revised plan' });
    const transcript = await app.exec("return document.querySelector('.transcript').textContent");
    assert.match(transcript, /Split it into two functions/, 'the message is part of the run');
  } finally {
    await app.close();
  }
});

test('killed with a plan pending, restarted: the plan is in the inbox and approving it resumes the run', async () => {
  const fx = fixture();
  let app = await openApp(PORT, fx);
  await startDemoRun(app, 'Document the CLI');
  killApp(fx);
  await app.close();
  app = await openApp(PORT, fx);
  try {
    await app.waitFor("document.querySelector('#inbox-count').textContent === '1'", { what: 'the pending plan in the inbox' });
    await app.keys('j');
    await app.find('#plan-title');
    await app.click('#approve');
    await app.waitFor("document.querySelector('.page-head .badge')?.textContent === 'finished'", { what: 'the resumed run to finish' });
    const runs = JSON.parse(cli(fx, ['--json', 'runs']));
    assert.equal(runs[0].status, 'finished');
  } finally {
    await app.close();
  }
});

test('a plan submitted by the CLI appears in the running app, with a desktop notification', async () => {
  const fx = fixture();
  const app = await openApp(PORT, fx);
  const monitor = watchNotifications();
  try {
    await app.waitFor("document.querySelector('#inbox-count').textContent === '0'");
    cli(fx, ['run', '--model', 'demo', '--workspace', fx.workspace, 'Add a health check endpoint']);
    await app.waitFor("document.querySelector('#inbox-count').textContent === '1'", { what: 'the CLI plan in the inbox' });
    assert.match(await app.title(), /Plandesk — 1 waiting/);
    const windows = execFileSync('xwininfo', ['-root', '-tree'], { encoding: 'utf8' });
    assert.match(windows, /"Plandesk — 1 waiting"/, 'the native window title carries the count');
    const title = await app.text('#inbox li .title');
    await app.screenshot(join(ARTIFACTS, 'inbox.png'));
    const started = Date.now();
    while (!monitor.text().includes(`Plan \\"${title}\\" requires approval`) && !monitor.text().includes(`Plan "${title}" requires approval`) && Date.now() - started < 10000) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(monitor.text(), /requires approval/, `a Notify call on the session bus: ${monitor.text().slice(0, 400)}`);
    assert.ok(monitor.text().includes(title), 'the notification names the plan');
    // Clicking the notification (its default action, invoked through dunst) opens that plan.
    assert.equal(await app.exec('return document.querySelector("#plan-title")'), null, 'the plan is not open yet');
    execFileSync('dunstctl', ['action', '0']);
    await app.waitFor("document.querySelector('#plan-title')?.textContent === " + JSON.stringify(title), { what: 'the plan opened by the click' });
  } finally {
    monitor.stop();
    await app.close();
  }
});

test('a plan of more invisible characters than are marked shows its source, cut and saying so', async () => {
  const fx = fixture();
  // 30,000 zero-width spaces between two words: each would be a boxed marker in the page.
  const plan = `# Quiet plan\n\nStart${'\u200b'.repeat(30000)}end\n`;
  const script = join(fx.root, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [
    { toolCalls: [
      { toolName: 'write_file', args: { path: '.plandesk/plans/quiet.md', content: plan } },
      { toolName: 'submit_plan', args: { path: '.plandesk/plans/quiet.md' } },
    ] },
  ] }));
  cli(fx, ['run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'Plan something']);
  const app = await openApp(PORT, fx);
  try {
    await app.find('#plan-title');
    await app.waitFor("document.querySelector('#plan .render-fallback')", { what: 'the fallback message' });
    assert.match(await app.text('#plan .render-fallback'), /more than 20,000 invisible characters; here is its source, each of them shown/);
    const shown = await app.exec(`const p = document.querySelector('#plan');
      return { marked: p.querySelectorAll('span.invisible').length, cut: p.querySelector('.render-cut')?.textContent,
               rest: p.querySelector('code').textContent.includes('⟨U+200B ×10,000⟩end') };`);
    assert.deepEqual(shown, { marked: 20000, rest: true,
      cut: '(past the first 20,000 invisible characters, each run of them is shown as one: ⟨U+XXXX ×count⟩)' });
    assert.match(await app.text('#hidden-warning'), /ZERO WIDTH SPACE/, 'the warning above the plan names them');
    await app.exec("document.querySelector('#plan .render-cut').scrollIntoView({ block: 'center' }); return true;");
    await app.screenshot(join(ARTIFACTS, 'source-cut.png'));
  } finally {
    await app.close();
  }
});

test('hostile plan markdown shows as text and runs nothing', async () => {
  const fx = fixture();
  const hostile = [
    '# Totally safe plan',
    '',
    '[//]: # "secret instruction"',
    '',
    '<script>window.__pwned = "script"</script>',
    '<img src="x" onerror="window.__pwned = \'img\'">',
    '[click me](javascript:window.__pwned="link")',
    '<iframe src="https://example.com"></iframe>',
    '<a href="https://example.com" onclick="window.__pwned=\'onclick\'">docs</a>',
    '',
    '1. Step\u200b one',
  ].join('\n');
  writeFileSync(join(fx.workspace, 'hostile.md'), hostile);
  const script = join(fx.root, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [
    { toolCalls: [
      { toolName: 'write_file', args: { path: '.plandesk/plans/hostile.md', content: hostile } },
      { toolName: 'submit_plan', args: { path: '.plandesk/plans/hostile.md' } },
    ] },
  ] }));
  cli(fx, ['run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'Plan something']);
  const app = await openApp(PORT, fx);
  try {
    await app.find('#plan-title');
    const counts = await app.exec(`const p = document.querySelector('#plan');
      return { script: p.querySelectorAll('script').length, img: p.querySelectorAll('img').length,
               iframe: p.querySelectorAll('iframe').length, handlers: p.querySelectorAll('[onclick],[onerror]').length,
               js: [...p.querySelectorAll('a')].filter((a) => (a.getAttribute('href') || '').startsWith('javascript')).length,
               pwned: window.__pwned ?? null };`);
    assert.deepEqual(counts, { script: 0, img: 0, iframe: 0, handlers: 0, js: 0, pwned: null });
    assert.match(await app.text('#plan'), /<script>window.__pwned = "script"<\/script>/, 'the attempt is visible as text');
    await app.exec("document.querySelectorAll('#plan a').forEach((a) => a.click()); return true;");
    assert.equal(await app.exec('return window.__pwned ?? null'), null, 'clicking links ran nothing');
    assert.equal(await app.exec('return location.protocol'), 'tauri:', 'the window never left the app');
    // What the rendering drops (a markdown comment, a zero-width space) is flagged above the plan,
    // and the exact source shows it.
    const warning = await app.text('#hidden-warning');
    assert.match(warning, /This plan holds \d+ things? the rendered view does not show/);
    assert.match(warning, /Line 3[\s\S]*\[\/\/\]: # "secret instruction"/, 'the hidden comment, with its line');
    assert.match(warning, /ZERO WIDTH SPACE/);
    assert.equal(await app.exec("return document.querySelectorAll('#plan span.invisible').length"), 1, 'the character is marked in place');
    await app.screenshot(join(ARTIFACTS, 'hidden-warning.png'));
    await app.click('#hidden-show-source');
    await app.waitFor("!document.querySelector('#plan-source').hidden && document.querySelector('#plan').hidden", { what: 'the source view' });
    const source = await app.text('#plan-source');
    assert.match(source, /\[\/\/\]: # "secret instruction"/, 'the source view shows the hidden comment');
    assert.match(source, /<script>window.__pwned = "script"<\/script>/, 'and the raw HTML, as text');
    const inSource = await app.exec(`const s = document.querySelector('#plan-source');
      return { marked: s.querySelectorAll('span.invisible').length, active: s.querySelectorAll('script,img,iframe,a,[onclick],[onerror]').length };`);
    assert.deepEqual(inSource, { marked: 1, active: 0 });
    // The lines the warning names are the source's lines of those numbers (each in the gutter).
    const lines = await app.exec(`const lines = [...document.querySelectorAll('#plan-source .line')];
      return { count: lines.length, numbered: getComputedStyle(lines[0], '::before').content,
        3: lines[2].textContent, 11: lines[10].innerHTML.includes('U+200B'),
        text: document.querySelector('#plan-source code').innerText };`);
    // What copying takes: the source, line for line, without the numbers.
    const text = hostile.replace('\u200b', '⟨U+200B⟩');
    assert.deepEqual(lines, { count: hostile.split('\n').length, numbered: 'counter(line)', 3: '[//]: # "secret instruction"\n', 11: true, text });
    assert.equal(await app.exec('return window.__pwned ?? null'), null);
    await app.screenshot(join(ARTIFACTS, 'source-view.png'));
    await app.keys('s');
    await app.waitFor("!document.querySelector('#plan').hidden", { what: 's to switch back to the rendered plan' });
    // The page may call the app's own commands and nothing else (capabilities/main.json).
    const denied = await app.cmd('POST', '/execute/async', { script: `const done = arguments[arguments.length - 1];
      const tryIt = (cmd, args) => window.__TAURI__.core.invoke(cmd, args).then(() => 'allowed', (e) => 'denied: ' + String(e));
      Promise.all([tryIt('plugin:dialog|open', {}), tryIt('plugin:opener|open_url', { url: 'https://example.com' }),
                   tryIt('plugin:window|set_title', { label: 'main', value: 'x' })]).then(done);`, args: [] });
    for (const answer of denied) assert.match(answer, /^denied/, `only the app's commands are allowed: ${denied}`);
  } finally {
    await app.close();
  }
});

test('with no GPU to paint with, the window paints without GL; a rendering switch of its own is left alone', async () => {
  const gpu = existsSync('/dev/dri') && readdirSync('/dev/dri').some((name) => name.startsWith('renderD'));
  /** WebKit's rendering switches as the web process of the app on `fx` sees them. */
  const switches = (fx) => {
    const [app] = execFileSync('pgrep', ['-f', `plandesk-app --data-dir ${fx.data}`], { encoding: 'utf8' }).trim().split('\n');
    const web = execFileSync('pgrep', ['-P', app], { encoding: 'utf8' }).trim().split('\n')
      .find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('WebKitWebProcess'));
    assert.ok(web, 'the app has a web process');
    return readFileSync(`/proc/${web}/environ`, 'utf8').split('\0').filter((l) => /^WEBKIT_(DISABLE_DMABUF_RENDERER|DISABLE_COMPOSITING_MODE|SKIA_ENABLE_CPU_RENDERING)=/.test(l));
  };
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    assert.deepEqual(switches(fx), gpu ? [] : ['WEBKIT_DISABLE_DMABUF_RENDERER=1'], gpu ? 'a GPU: WebKit chooses' : 'no GPU: no GL');
  } finally {
    await app.close();
  }
  const own = await startDriver(PORT + 4, { WEBKIT_SKIA_ENABLE_CPU_RENDERING: '1' });
  const fx2 = fixture();
  const app2 = await openApp(PORT + 4, fx2);
  try {
    assert.deepEqual(switches(fx2), ['WEBKIT_SKIA_ENABLE_CPU_RENDERING=1'], "the person's own choice stands alone");
  } finally {
    await app2.close();
    own.stop();
  }
});

test('the window is mapped once its page has loaded; a --hidden launch maps none, even later', async () => {
  /** How the app's windows (named Plandesk) are mapped on the display. */
  const mapStates = () => execFileSync('xwininfo', ['-root', '-tree'], { encoding: 'utf8' }).split('\n')
    .filter((line) => line.includes('"Plandesk'))
    .map((line) => /Map State: (\w+)/.exec(execFileSync('xwininfo', ['-id', line.trim().split(' ')[0]], { encoding: 'utf8' }))[1]);
  const fx = fixture();
  const app = await openApp(PORT, fx);
  try {
    // Built hidden, shown once the page has loaded (mapped earlier, WebKit may hold the main
    // thread for up to 500 ms waiting for a first paint: `./x bench app`'s cold start shows it).
    await app.waitFor("document.visibilityState === 'visible'", { what: 'the page to be visible' });
    assert.ok(mapStates().includes('IsViewable'), `the window is on screen: ${mapStates()}`);
    await app.screenshot(join(ARTIFACTS, 'launched.png'));
  } finally {
    await app.close();
  }
  const fx2 = fixture();
  const hidden = await Session.start(PORT, APP, ['--data-dir', fx2.data, '--workspace', fx2.workspace, '--hidden']);
  try {
    await hidden.waitFor("document.readyState === 'complete'", { what: 'the page to load' });
    // Past the time after which a launch shows a window whose page never reported loading.
    await new Promise((r) => setTimeout(r, 3500));
    assert.deepEqual(mapStates().filter((state) => state === 'IsViewable'), [], 'nothing of a hidden launch is on screen');
    assert.equal(await hidden.exec('return document.visibilityState'), 'hidden');
  } finally {
    await hidden.close();
  }
});

test('dark mode follows the system theme', async () => {
  const fx = fixture();
  const dark = await startDriver(PORT + 2, { GTK_THEME: 'Adwaita:dark' });
  const app = await openApp(PORT + 2, fx);
  try {
    await startDemoRun(app, 'Add a dark mode toggle');
    await app.waitFor("document.querySelector('#inbox-count').textContent === '1'", { what: 'the plan in the inbox' });
    const bg = await app.exec('return getComputedStyle(document.body).backgroundColor');
    assert.equal(bg, 'rgb(20, 22, 28)', 'the dark palette is in use');
    await app.screenshot(join(ARTIFACTS, 'dark-mode.png'));
  } finally {
    await app.close();
    dark.stop();
  }
});

test('after approval a file write asks first; declining it with a reason; a failed model call offers retry', async () => {
  const fx = fixture();
  const script = join(fx.root, 'script.json');
  const planText = '# Add a greeting\n\n1. Write src/greet.rs\n';
  // Long enough to reach the inbox as a preview: the card to approve shows all of it.
  const greeting = `pub fn greet() {}\n${'// greeting line\n'.repeat(1500)}// the last line\n`;
  writeFileSync(script, JSON.stringify({ turns: [
    { toolCalls: [
      { toolName: 'write_file', args: { path: '.plandesk/plans/greet.md', content: planText } },
      { toolName: 'submit_plan', args: { path: '.plandesk/plans/greet.md' } },
    ] },
    { text: 'Writing the file.', toolCalls: [{ toolName: 'write_file', args: { path: 'src/greet.rs', content: greeting } }] },
  ] }));
  cli(fx, ['run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'Add a greeting']);
  const app = await openApp(PORT, fx);
  try {
    await app.find('#plan-title');
    await app.click('#approve');
    await app.waitFor("document.querySelector('.review h2')?.textContent === 'The agent wants to write src/greet.rs'", { what: 'the approval card' });
    assert.match(await app.text('.review'), /src\/greet\.rs[\s\S]*pub fn greet\(\) \{\}[\s\S]*\/\/ the last line/, 'path and all of the content are shown');
    assert.match(await app.text('#inbox'), /write_file src\/greet\.rs/, 'the inbox names the file');
    assert.match(await app.text('.review .meta-line'), /^write_file\s+\d+ lines\s/, 'the tool and how much it writes');
    await app.exec("document.querySelector('.approval-content').scrollTop = 1e9");
    await app.screenshot(join(ARTIFACTS, 'approval.png'));
    await app.type('#feedback', 'Not in this change');
    await app.click('#reject');
    // The script has no third turn: the next model call fails, and the app offers a retry.
    await app.waitFor("!document.querySelector('#banner').hidden", { what: 'the error banner' });
    assert.match(await app.text('#banner-text'), /The model failed: .*no turn left/);
    assert.equal(await app.text('#banner-action'), 'Retry');
    assert.equal(existsSync(join(fx.workspace, 'src/greet.rs')), false, 'the declined write never ran');
    const events = cli(fx, ['--json', 'history']);
    assert.match(events, /approved/);
  } finally {
    await app.close();
  }
});

test('a run whose deciding process died says it was interrupted; Continue finishes it', async () => {
  const fx = fixture();
  cli(fx, ['run', '--model', 'demo', '--workspace', fx.workspace, 'Add a changelog']);
  const [run] = JSON.parse(cli(fx, ['--json', 'runs']));
  assert.equal(run.status, 'suspended', 'the demo plan waits for a decision');
  // The CLI records the approval, then aborts before the run goes on (tests/engine/crash.rs).
  assert.throws(() => cli(fx, ['approve', run.id], { PLANDESK_CRASH_AT: 'after-decision' }),
    'the deciding process dies right after recording the decision');
  const app = await openApp(PORT, fx);
  try {
    await app.waitFor("document.querySelector('#inbox-count').textContent === '0'", { what: 'nothing pending' });
    await app.click(`#runs li[data-run-id="${run.id}"]`);
    await app.find('#retry');
    assert.equal(await app.text('#retry'), 'Continue');
    assert.match(await app.text('#interrupted'), /This run was interrupted\. Your decision was saved/);
    assert.equal(await app.exec("return document.querySelector('.page-head .badge').textContent"), 'interrupted');
    assert.equal(await app.exec(`return document.querySelector('#runs li[data-run-id="${run.id}"] .badge').textContent`), 'interrupted',
      'the runs list says what the run says');
    assert.equal(await app.exec("return document.querySelector('#progress .badge').textContent"), 'agent stopped', 'and so does its progress');
    await app.screenshot(join(ARTIFACTS, 'continue.png'));
    await app.click('#retry');
    await app.waitFor("document.querySelector('.page-head .badge')?.textContent === 'finished'", { what: 'the continued run to finish' });
    assert.match(await app.text('.transcript'), /Plan ".+" approved — switching to build mode/, 'the summary after approval');
    assert.equal(await app.exec("return document.querySelector('#retry')"), null, 'nothing left to continue');
    const after = JSON.parse(cli(fx, ['--json', 'runs']));
    assert.equal(after[0].status, 'finished');
    await app.screenshot(join(ARTIFACTS, 'continued.png'));
  } finally {
    await app.close();
  }
});
