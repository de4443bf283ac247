// The Debian package, installed on this machine: its files, the installed app under Xvfb opened
// on a plan by `plandesk open` and by a plandesk:// link, one process however often it is
// started, and an uninstall that leaves the user's store alone. Needs root (or sudo without a
// password) and the package built first (`./x test` packs the debug build).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ARTIFACTS, ROOT, startDriver } from '../e2e/harness.mjs';
import { Session } from '../e2e/webdriver.mjs';

const PORT = 4460;
const PACKAGE = 'plandesk';
const APP = '/usr/bin/plandesk-app';
const CLI = '/usr/bin/plandesk';
const DESKTOP = '/usr/share/applications/Plandesk.desktop';
const ICON = '/usr/share/icons/hicolor/128x128/apps/plandesk-app.png';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The newest .deb the bundler made (or $PLANDESK_DEB). */
function debFile() {
  if (process.env.PLANDESK_DEB) return process.env.PLANDESK_DEB;
  for (const profile of ['debug', 'release']) {
    const dir = join(ROOT, 'target', profile, 'bundle/deb');
    if (!existsSync(dir)) continue;
    const debs = readdirSync(dir).filter((f) => f.endsWith('.deb')).map((f) => join(dir, f));
    debs.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    if (debs.length) return debs[0];
  }
  return null;
}

function installed() {
  const status = spawnSync('dpkg-query', ['-W', '-f=${Status}', PACKAGE], { encoding: 'utf8' });
  return status.stdout.includes('install ok installed');
}

/** dpkg as root: directly, or through sudo that asks no password. */
function dpkg(...args) {
  const [cmd, argv] = process.getuid() === 0 ? ['dpkg', args] : ['sudo', ['-n', 'dpkg', ...args]];
  return execFileSync(cmd, argv, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

function canRoot() {
  return process.getuid() === 0 || spawnSync('sudo', ['-n', 'true']).status === 0;
}

/** The processes running the installed app. */
function appProcesses() {
  const found = spawnSync('pgrep', ['-x', 'plandesk-app'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  return found.filter((pid) => {
    try { return readlinkSync(`/proc/${pid}/exe`) === APP; } catch { return false; }
  });
}

const deb = debFile();
const skip = !deb ? 'no package built (./x package --debug)'
  : !canRoot() ? 'installing a package needs root or sudo -n'
    : installed() ? `a ${PACKAGE} package is already installed here; the test would replace and remove it`
      : false;

test('the package installs the app and the CLI, opens plans in one instance, and uninstalls cleanly', { skip }, async () => {
  const timings = {};
  const t0 = Date.now();
  // A person's home of its own: the app's own store and the login autostart live there.
  const root = mkdtempSync(join(tmpdir(), 'plandesk-package-'));
  const home = join(root, 'home');
  const workspace = join(root, 'ws');
  mkdirSync(join(workspace, 'src'), { recursive: true });
  mkdirSync(home);
  execFileSync('sh', ['-c', `printf 'fn main() {}\\n' > "${workspace}/src/main.rs"`]);
  const env = { ...process.env, HOME: home };
  for (const name of ['XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'PLANDESK_DATA_DIR']) delete env[name];
  const store = join(home, '.local/share/plandesk');
  const cli = (...args) => execFileSync(CLI, args, { env, cwd: workspace, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  dpkg('-i', deb);
  timings.install = Date.now() - t0;
  let driver;
  let app;
  try {
    // The files: desktop entry (valid, with the URL handler), icon, CLI on PATH.
    const files = dpkg('-L', PACKAGE).split('\n').filter(Boolean);
    for (const file of [APP, CLI, DESKTOP, ICON]) assert.ok(files.includes(file), `${file} is in the package`);
    const validate = spawnSync('desktop-file-validate', [DESKTOP], { encoding: 'utf8' });
    assert.equal(validate.status, 0, `desktop-file-validate: ${validate.stdout}${validate.stderr}`);
    assert.doesNotMatch(validate.stdout, /error:/, validate.stdout);
    const entry = readFileSync(DESKTOP, 'utf8');
    assert.match(entry, /^Exec=plandesk-app %u$/m, 'the launcher passes links on');
    assert.match(entry, /^MimeType=x-scheme-handler\/plandesk;$/m);
    assert.match(entry, /^Icon=plandesk-app$/m);
    assert.match(entry, /^Categories=Development;$/m);
    assert.match(execFileSync('file', [ICON], { encoding: 'utf8' }), /PNG image data, 128 x 128/);
    assert.equal(execFileSync('sh', ['-c', 'command -v plandesk'], { encoding: 'utf8' }).trim(), CLI);
    assert.match(cli('--version'), /^plandesk \d+\.\d+\.\d+/);
    const handler = execFileSync('xdg-mime', ['query', 'default', 'x-scheme-handler/plandesk'], { env, encoding: 'utf8' });
    assert.equal(handler.trim(), 'Plandesk.desktop', 'plandesk:// links go to the app');

    // A plan waiting on the person's own store.
    cli('run', '--model', 'demo', '--workspace', workspace, 'Add a --verbose flag that prints each step');
    const [revision] = JSON.parse(cli('--json', 'history'));
    const runId = revision.runId ?? revision.run_id;
    assert.ok(runId && revision.sha256, `a revision: ${JSON.stringify(revision)}`);

    // The installed app, as the launcher starts it (no arguments: the person's own store).
    const t1 = Date.now();
    driver = await startDriver(PORT, { HOME: home });
    app = await Session.start(PORT, APP, []);
    await app.waitFor("document.body.dataset.ready === 'true'", { what: 'the installed app to be ready' });
    timings.appReady = Date.now() - t1;
    assert.equal(await app.exec('return window.__plandesk.info.dataDir'), store, 'the app opened the user store');
    assert.equal(appProcesses().length, 1, 'one app runs');

    // First start on the user's own store: start at login is on, and its entry is valid.
    const autostart = join(home, '.config/autostart/plandesk.desktop');
    await app.waitFor('window.__plandesk.info.settings.startAtLogin', { what: 'start at login to be on' });
    assert.ok(existsSync(autostart), 'the login autostart entry is written at the first start');
    assert.match(readFileSync(autostart, 'utf8'), new RegExp(`^Exec=${APP} --hidden$`, 'm'));
    const validAutostart = spawnSync('desktop-file-validate', [autostart], { encoding: 'utf8' });
    assert.equal(validAutostart.status, 0, `${validAutostart.stdout}${validAutostart.stderr}`);

    // `plandesk open REVISION`: the running window comes forward on that plan.
    await app.click('#new-run');
    await app.waitFor("window.__plandesk.view?.name === 'new'", { what: 'the new-run view' });
    const opened = spawnSync(CLI, ['open', revision.sha256.slice(0, 12)], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(opened.status, 0, opened.stderr);
    assert.match(opened.stderr, new RegExp(`the running app shows revision ${revision.id} of run ${runId}`));
    await app.waitFor(`window.__plandesk.view?.name === 'run' && window.__plandesk.view.runId === ${JSON.stringify(runId)}`,
      { what: 'the plan opened by plandesk open' });
    await app.find('#plan-title');
    await app.screenshot(join(ARTIFACTS, 'package-open.png'));
    assert.equal(appProcesses().length, 1, 'plandesk open started no second app');

    // A plandesk:// link, through the desktop's URL handler.
    await app.click('#new-run');
    await app.waitFor("window.__plandesk.view?.name === 'new'", { what: 'the new-run view' });
    const link = spawnSync('xdg-open', [`plandesk://plan/${runId}`], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(link.status, 0, `xdg-open: ${link.stderr}`);
    await app.waitFor(`window.__plandesk.view?.name === 'run' && window.__plandesk.view.runId === ${JSON.stringify(runId)}`,
      { what: 'the plan opened by a plandesk:// link' });

    // Started again from the launcher: the new process hands over and exits.
    const again = spawnSync(APP, [], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(again.status, 0, `a second launch exits at once: ${again.stderr}`);
    await sleep(500);
    assert.equal(appProcesses().length, 1, 'still one app after a second launch');
    timings.total = Date.now() - t0;
  } finally {
    await app?.close();
    driver?.stop();
    const t2 = Date.now();
    dpkg('-r', PACKAGE);
    timings.remove = Date.now() - t2;
  }

  // Uninstalled: the package's files are gone, the person's store is not.
  assert.ok(!installed(), 'the package is removed');
  for (const file of [APP, CLI, DESKTOP, ICON]) assert.ok(!existsSync(file), `${file} is removed`);
  assert.ok(existsSync(join(store, 'plandesk.db')), 'the store stays');
  console.log(`package test timings (ms): ${JSON.stringify(timings)}`);
});
