// End-to-end, in the real window: select lines of a plan and comment (c), reject, and see on the
// revised plan which comments were addressed; compare with the comments beside the lines; edit
// the plan (e) beside its live preview and approve the edit; the audit trail of it all.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS, CTRL_ENTER, cli, fixture, openApp, startDriver } from './harness.mjs';

const PORT = 4464;
let driver;

before(async () => { driver = await startDriver(PORT); });
after(() => driver?.stop());

const PLAN = '.plandesk/plans/cache.md';
const FIRST = '# Add a cache\n\nUse an LRU cache in front of the store.\n\n1. Measure\n2. Cache\n';
const REVISED = '# Add a cache\n\nUse a TTL cache in front of the store.\n\n1. Measure\n2. Cache\n';

/** A scripted run waiting on FIRST; rejected, it writes REVISED and submits again. */
function revisingRun(fx) {
  const script = join(fx.root, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [
    { toolCalls: [
      { toolName: 'write_file', args: { path: PLAN, content: FIRST } },
      { toolName: 'submit_plan', args: { path: PLAN } },
    ] },
    { toolCalls: [
      { toolName: 'write_file', args: { path: PLAN, content: REVISED } },
      { toolName: 'submit_plan', args: { path: PLAN } },
    ] },
    { text: 'Building.' },
  ] }));
  const out = cli(fx, ['--json', 'run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'Add a cache']);
  return JSON.parse(out.split('\n')[0]).runId;
}

const states = (app) => app.exec(`return [...document.querySelectorAll('#comments li')].map((li) => li.dataset.state)`);

test('comment on selected lines, reject, see them addressed on the revision; compare shows them; edit and approve', async () => {
  const fx = fixture();
  const run = revisingRun(fx);
  const app = await openApp(PORT, fx);
  try {
    await app.find('#plan [data-sourcepos^="3:"]');
    // Click a paragraph: its line is selected; c opens the comment box on it.
    await app.click('#plan [data-sourcepos^="3:"]');
    assert.equal(await app.text('#selected-lines'), 'Line 3 selected');
    await app.keys('c');
    await app.find('#comment-text');
    await app.type('#comment-text', `Use a TTL, not LRU${CTRL_ENTER}`);
    await app.waitFor("document.querySelectorAll('#comments li').length === 1", { what: 'the first comment' });
    // Two list items, by click and shift-click.
    await app.click('#plan li[data-sourcepos^="5:"]');
    await app.exec(`document.querySelector('#plan li[data-sourcepos^="6:"]').dispatchEvent(new MouseEvent('click', { bubbles: true, shiftKey: true })); return true;`);
    assert.equal(await app.text('#selected-lines'), 'Lines 5–6 selected');
    await app.click('#comment');
    await app.type('#comment-text', 'Measure what, exactly?');
    await app.click('#comment-save');
    await app.waitFor("document.querySelectorAll('#comments li').length === 2", { what: 'the second comment' });
    assert.deepEqual(await states(app), ['open', 'open']);
    assert.match(await app.text('#comments'), /3 │ Use an LRU cache in front of the store\./, 'the comment quotes its line');
    assert.equal(await app.exec("return document.querySelectorAll('#plan .commented').length"), 3, 'commented blocks are marked');
    assert.match(await app.text('#decide-hint'), /2 open comments go with a rejection/);
    await app.screenshot(join(ARTIFACTS, 'comments.png'));

    // Reject with no feedback: the comments are the feedback, and the model revises.
    await app.click('#reject');
    await app.waitFor("document.querySelector('#plan-revision')?.textContent === 'Revision 2'", { what: 'revision 2', timeout: 30000 });
    await app.waitFor("document.querySelectorAll('#comments li').length === 2", { what: 'the comments on revision 2' });
    assert.deepEqual(await states(app), ['addressed', 'not-addressed'], 'line 3 changed, lines 5-6 did not');
    await app.screenshot(join(ARTIFACTS, 'comments-addressed.png'));
    const history = JSON.parse(cli(fx, ['--json', 'history', run]));
    assert.match(history[0].decision.feedback, /Line 3:\n> 3 \| Use an LRU cache in front of the store\.\nUse a TTL, not LRU/);

    // Resolve the one not addressed.
    await app.click('#comments li[data-state="not-addressed"] button.resolve');
    await app.waitFor(`document.querySelector('#comments li:nth-child(2)')?.dataset.state === 'resolved'`, { what: 'the comment resolved' });

    // Compare: the comments beside the lines they are on now.
    await app.click('#compare');
    await app.find('.diff tr.comment-row');
    assert.equal(await app.exec("return document.querySelectorAll('.diff tr.comment-row').length"), 2);
    assert.match(await app.text('.diff'), /addressed[\s\S]*Use a TTL, not LRU/i);
    await app.screenshot(join(ARTIFACTS, 'compare-comments.png'));
    await app.exec("[...document.querySelectorAll('button')].find((b) => b.textContent === 'Back to the run').click(); return true;");

    // Edit (e): the editor with a live preview; saving makes revision 3, by the reviewer.
    await app.find('#edit');
    await app.keys('e');
    await app.find('#plan-editor');
    await app.exec(`const t = document.querySelector('#plan-editor');
      t.value = t.value.replace('1. Measure', '1. Measure p99 latency first');
      t.dispatchEvent(new Event('input', { bubbles: true })); return true;`);
    await app.waitFor("document.querySelector('#plan-preview').textContent.includes('p99 latency')", { what: 'the live preview' });
    await app.screenshot(join(ARTIFACTS, 'editor.png'));
    await app.click('#edit-save');
    await app.waitFor("document.querySelector('#plan-revision')?.textContent === 'Revision 3'", { what: 'the edited revision' });
    assert.match(await app.text('#plan-author'), /^Edited by /);
    await app.click('#approve');
    await app.waitFor("document.querySelector('#inbox-count').textContent === '0'", { what: 'the approval', timeout: 30000 });

    const audit = cli(fx, ['--json', 'audit', run]).trim().split('\n').map((l) => JSON.parse(l));
    const kinds = audit.map((e) => e.kind);
    for (const kind of ['commented', 'comment-resolved', 'edited', 'decided']) assert.ok(kinds.includes(kind), `${kind} in ${kinds}`);
    const approved = audit.filter((e) => e.kind === 'decided').at(-1);
    const answer = JSON.parse(approved.data.answer);
    assert.match(answer.content, /changed the plan before approving it/);
    assert.match(answer.content, /-1\. Measure\n\+1\. Measure p99 latency first/);
    assert.equal(approved.process, 'app');
    assert.match(cli(fx, ['audit', '--verify']), /chain intact/);

    // History → Audit trail.
    await app.click('#history-btn');
    await app.click('#open-audit');
    await app.find('#audit-table');
    assert.match(await app.text('#audit-chain'), /chain intact\. None was changed or removed/);
    const resolved = await app.text('#audit-table tr[data-kind="comment-resolved"] td.detail');
    assert.match(resolved, /^the comment on lines 5–6: “/, 'a resolved comment is named by its lines and words, not its id');
    await app.screenshot(join(ARTIFACTS, 'audit.png'));
  } finally {
    await app.close();
  }
});

test('a refused decision is answered once, by the command: the run stays as it was and its stream says nothing', async () => {
  const fx = fixture();
  revisingRun(fx);
  const app = await openApp(PORT, fx);
  try {
    await app.find('#plan-title');
    // What Approve sends, naming a revision that is not the one waiting.
    await app.exec(`const { invoke, Channel } = window.__TAURI__.core;
      const channel = new Channel();
      window.__heard = [];
      channel.onmessage = (m) => window.__heard.push(m);
      const item = window.__plandesk.inbox[0];
      invoke('decide', { request: { runId: item.runId, toolCallId: item.toolCallId, approve: true, revision: '0'.repeat(64) }, onEvent: channel })
        .then(() => { window.__answer = { ok: true }; }, (e) => { window.__answer = e; });
      return true;`);
    await app.waitFor('window.__answer', { what: 'the answer to the decision' });
    const answer = await app.exec('return window.__answer');
    assert.equal(answer.code, 'stale-revision', JSON.stringify(answer));
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(await app.exec('return window.__heard'), [], 'the stream says nothing more');
    const [item] = JSON.parse(cli(fx, ['--json', 'pending']));
    assert.equal(item.revision.revisionNo, 1, 'the plan still waits');
    assert.equal(item.revision.decision, null, 'undecided');
    // The plan on screen is still the one to decide: Approve works (in build mode, the script's
    // next write waits for approval).
    await app.click('#approve');
    await app.waitFor("document.querySelector('#review-slot h2')?.textContent === 'The agent wants to write .plandesk/plans/cache.md'", { what: 'the next step', timeout: 30000 });
  } finally {
    await app.close();
  }
});

test('a 200 KB plan in the real window: only the pages near the screen are built; scrolled to its end, its last step is there to select; approved, it comes back in a result shown by its start', async () => {
  const fx = fixture();
  let plan = '# Migrate the store\n\n';
  for (let i = 0; plan.length < 200 * 1024; i += 1) {
    plan += `## Step ${i}\n\nMove table \`t${i}\` to the new layout.\n\n- check ${i}: row counts match\n\n| table | rows |\n|---|---|\n| t${i} | ${i * 1000} |\n\n`;
  }
  const steps = plan.split('## Step ').length - 1;
  const script = join(fx.root, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [
    { toolCalls: [{ toolName: 'write_file', args: { path: PLAN, content: plan } }, { toolName: 'submit_plan', args: { path: PLAN } }] },
    { text: 'Building.' },
  ] }));
  cli(fx, ['--json', 'run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'Migrate the store']);
  const app = await openApp(PORT, fx);
  try {
    await app.find('#plan [data-sourcepos]');
    const built = () => app.exec(`return { pages: document.querySelectorAll('#plan .plan-page').length,
      filled: [...document.querySelectorAll('#plan .plan-page')].filter((p) => p.firstChild).length,
      elements: document.querySelectorAll('#plan *').length }`);
    await app.waitFor("document.querySelectorAll('#plan .plan-page').length > 20", { what: 'a box per page' });
    const first = await built();
    assert.ok(first.pages > 20 && first.filled <= 6 && first.elements < 3000, JSON.stringify(first));
    await app.exec("const v = document.getElementById('view'); v.scrollTop = v.scrollHeight; return true;");
    const last = `Step ${steps - 1}`;
    await app.waitFor(`[...document.querySelectorAll('#plan h2')].some((h) => h.textContent === '${last}')`, { what: 'the last step' });
    await app.waitFor("!document.querySelector('#plan .plan-page').firstChild", { what: 'the first page emptied' });
    const end = await built();
    assert.ok(end.filled <= 6 && end.elements < 3000, JSON.stringify(end));
    await app.exec(`[...document.querySelectorAll('#plan h2')].find((h) => h.textContent === '${last}').click(); return true;`);
    assert.match(await app.text('#selected-lines'), /^Line \d+ selected$/);
    // Kept at the very top of the view, however far down: no strip of the plan shows above it.
    assert.equal(await app.exec("return Math.round(document.querySelector('.select-bar').getBoundingClientRect().top - document.getElementById('view').getBoundingClientRect().top)"), 0);
    await app.screenshot(join(ARTIFACTS, 'long-plan.png'));
    // The way here, folded below the plan: the 200 KB write shows its start, and all of it when opened.
    const write = "[...document.querySelectorAll('details.tool')].find((d) => d.querySelector('.name').textContent === 'write_file')";
    await app.exec(`document.querySelector('.transcript-fold').open = true; ${write}.scrollIntoView(); return true;`);
    assert.match(await app.exec(`return ${write}.querySelector('.preview-note').textContent`), /^The start of 2\d\d KB: all of it shows when this is opened\.$/);
    assert.ok(await app.exec(`return ${write}.querySelector('pre').textContent.length`) < 2000, 'a preview');
    await app.exec(`${write}.querySelector('summary').click(); return true;`);
    await app.waitFor(`!${write}.querySelector('.preview-note')`, { what: 'the whole write' });
    assert.equal(await app.exec(`return JSON.parse(${write}.querySelector('pre').textContent).content`), plan);
    await app.screenshot(join(ARTIFACTS, 'long-tool-call.png'));
    // Approved, the run goes on: its plan comes back in submit_plan's result, which the run's
    // view shows by its start (as the stream brought it, or read back once it ended), and whole when opened.
    await app.click('#approve');
    const result = "[...document.querySelectorAll('details.tool.result')].find((d) => d.querySelector('.name').textContent === 'submit_plan →')";
    await app.waitFor(`${result}?.querySelector('.preview-note')`, { what: "submit_plan's result" });
    assert.match(await app.exec(`return ${result}.querySelector('.preview-note').textContent`), /^The start of 2\d\d KB: all of it shows when this is opened\.$/);
    assert.match(await app.exec(`return ${result}.querySelector('.arg').textContent`), /^Plan approved\./);
    await app.exec(`${result}.scrollIntoView(); ${result}.querySelector('summary').click(); return true;`);
    await app.waitFor(`!${result}.querySelector('.preview-note')`, { what: 'the whole result' });
    const shown = JSON.parse(await app.exec(`return ${result}.querySelector('pre').textContent`));
    assert.equal(shown.submittedPlan.plan, plan.replace(/^# Migrate the store\n+/, '').trimEnd());
    await app.screenshot(join(ARTIFACTS, 'long-tool-result.png'));
  } finally {
    await app.close();
  }
});

test('History in the real window reads a page at a time from the store: the next page as its end scrolls into view, a status from its own pages', async () => {
  const fx = fixture();
  // One turn submitting 130 plans: 130 revisions, all pending.
  const calls = [];
  for (let i = 1; i <= 130; i += 1) {
    calls.push({ toolName: 'write_file', args: { path: `.plandesk/plans/p${i}.md`, content: `# Plan ${i}\n\nStep ${i}.\n` } });
    calls.push({ toolName: 'submit_plan', args: { path: `.plandesk/plans/p${i}.md` } });
  }
  const script = join(fx.root, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [{ toolCalls: calls }, { text: 'Building.' }] }));
  cli(fx, ['run', '--model', `scripted:${script}`, '--workspace', fx.workspace, 'Many plans']);
  const app = await openApp(PORT, fx);
  const rows = "document.querySelectorAll('#history-rows .row-item').length";
  const titles = () => app.exec("return [...document.querySelectorAll('#history-rows .row-item strong')].map((s) => s.textContent)");
  try {
    await app.waitFor("document.querySelector('#inbox-count').textContent === '130'", { what: 'the 130 plans in the inbox' });
    await app.keys('h');
    await app.waitFor(`${rows} === 100`, { what: 'the first page' });
    assert.match(await app.text('#history-rows .list-more'), /More/);
    await app.screenshot(join(ARTIFACTS, 'history-first-page.png'));
    await app.exec("document.querySelector('#history-rows .list-more').scrollIntoView(); return true;");
    await app.waitFor(`${rows} === 130`, { what: 'the second page' });
    assert.equal(await app.text('#history-rows .list-more'), '', 'the end');
    assert.deepEqual(await titles(), Array.from({ length: 130 }, (_, i) => `Plan ${130 - i}`), 'newest first, each once');
    // Approved: none yet; pending: all of them again, from the first page.
    await app.exec("const s = document.querySelector('#history-status'); s.value = 'approved'; s.dispatchEvent(new Event('change')); return true;");
    await app.waitFor("document.querySelector('#history-rows .empty') !== null", { what: 'nothing approved' });
    await app.exec("const s = document.querySelector('#history-status'); s.value = 'pending'; s.dispatchEvent(new Event('change')); return true;");
    await app.waitFor(`${rows} >= 100`, { what: 'the first page of pending' });
    assert.equal((await titles())[0], 'Plan 130');
    await app.screenshot(join(ARTIFACTS, 'history-pending.png'));
  } finally {
    await app.close();
  }
});
