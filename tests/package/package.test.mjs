// The Debian package, installed on this machine with dpkg: its files; the installed app under
// Xvfb started on a plan by `plandesk open`, by a plandesk:// link and by the launcher; one
// process however often it is started; the window closing into the tray and the tray's count
// and menu; start at login; and an uninstall that leaves the person's store alone.
//
// Needs root (or sudo without a password), DISPLAY and a session bus (`./x test` runs it under
// xvfb-run and dbus-run-session), and the package: $PLANDESK_DEB (`./x test` packs the debug
// build) or the newest one in target/*/bundle/deb (`./x package --debug`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ARTIFACTS, ROOT, startDriver } from '../e2e/harness.mjs';
import { Session } from '../e2e/webdriver.mjs';
import {
  clickTrayMenu, closeWindow, trayMenu, trayProperty, visibleWindows, waitForTrayItem, waitForWindow, windowProperty,
} from './desktop.mjs';

const PORT = 4470;
const PACKAGE = 'plandesk';
const APP = '/usr/bin/plandesk-app';
const CLI = '/usr/bin/plandesk';
const DESKTOP = '/usr/share/applications/Plandesk.desktop';
const ICON = '/usr/share/icons/hicolor/128x128/apps/plandesk-app.png';
const WM_CLASS = 'plandesk-app';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** $PLANDESK_DEB, else the newest .deb the bundler made. */
function debFile() {
  if (process.env.PLANDESK_DEB) return process.env.PLANDESK_DEB;
  const debs = [];
  for (const profile of ['debug', 'release']) {
    const dir = join(ROOT, 'target', profile, 'bundle/deb');
    if (existsSync(dir)) debs.push(...readdirSync(dir).filter((f) => f.endsWith('.deb')).map((f) => join(dir, f)));
  }
  debs.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return debs[0] ?? null;
}

function installed() {
  const status = spawnSync('dpkg-query', ['-W', '-f=${Status}', PACKAGE], { encoding: 'utf8' });
  return status.stdout.includes('install ok installed');
}

/** dpkg as root: directly, or through sudo that asks no password. */
function dpkg(...args) {
  const [cmd, argv] = process.getuid() === 0 ? ['dpkg', args] : ['sudo', ['-n', 'dpkg', ...args]];
  const out = spawnSync(cmd, argv, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (out.status !== 0) throw new Error(`dpkg ${args.join(' ')} failed (${out.status}): ${out.stderr}${out.stdout}`);
  return out.stdout;
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

/** Polls until exactly `count` installed apps run; returns their pids. */
async function waitForProcesses(count, what, timeout = 15000) {
  const until = Date.now() + timeout;
  for (;;) {
    const pids = appProcesses();
    if (pids.length === count) return pids;
    if (Date.now() > until) throw new Error(`expected ${count} app process(es) ${what}, found ${pids.length}: ${pids.join(' ')}`);
    await sleep(100);
  }
}

/** SHA-256 of every file in a folder (names sorted): what "untouched" means for a store. */
function folderDigest(dir) {
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (!statSync(path).isFile()) continue;
    hash.update(name).update('\0').update(readFileSync(path)).update('\0');
  }
  return hash.digest('hex');
}

const TIMEOUT = 240000;
/** Set once this test installed the package: only then does it remove it when it fails. */
let ours = false;

test('the package installs the app and the CLI, opens plans in one instance, lives in the tray, and uninstalls cleanly', { timeout: TIMEOUT }, async () => {
  const deb = debFile();
  assert.ok(deb && existsSync(deb), `no package to install (${deb ?? 'none found'}): build one with ./x package --debug`);
  assert.ok(canRoot(), 'installing a package needs root or sudo -n');
  assert.ok(!installed(), `a ${PACKAGE} package is already installed on this machine; the test installs and removes its own: remove it first (dpkg -r ${PACKAGE})`);
  assert.deepEqual(appProcesses(), [], `${APP} already runs`);
  assert.ok(process.env.DISPLAY && process.env.DBUS_SESSION_BUS_ADDRESS, 'needs a display and a session bus: run it under xvfb-run and dbus-run-session (./x test does)');

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
  for (const name of ['XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'PLANDESK_DATA_DIR', 'PLANDESK_STORE']) delete env[name];
  const store = join(home, '.local/share/plandesk');
  const autostart = join(home, '.config/autostart/plandesk.desktop');
  const cli = (...args) => execFileSync(CLI, args, { env, cwd: workspace, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

  ours = true;
  dpkg('-i', deb);
  timings.install = Date.now() - t0;
  let driver;
  let app;
  let started;
  try {
    // The files: desktop entry (valid, with the URL handler), icon, CLI on PATH.
    const files = dpkg('-L', PACKAGE).split('\n').filter(Boolean);
    for (const file of [APP, CLI, DESKTOP, ICON]) assert.ok(files.includes(file), `${file} is in the package`);
    const validate = spawnSync('desktop-file-validate', [DESKTOP], { encoding: 'utf8' });
    assert.equal(validate.status, 0, `desktop-file-validate ${DESKTOP}: ${validate.stdout}${validate.stderr}`);
    assert.equal(validate.stdout.trim(), '', `desktop-file-validate has remarks: ${validate.stdout}`);
    const entry = readFileSync(DESKTOP, 'utf8');
    assert.match(entry, /^Exec=plandesk-app %u$/m, 'the launcher passes links on');
    assert.match(entry, /^MimeType=x-scheme-handler\/plandesk;$/m);
    assert.match(entry, /^Icon=plandesk-app$/m);
    assert.match(entry, /^Categories=Development;$/m);
    assert.match(entry, new RegExp(`^StartupWMClass=${WM_CLASS}$`, 'm'));
    assert.match(execFileSync('file', [ICON], { encoding: 'utf8' }), /PNG image data, 128 x 128/);
    assert.equal(execFileSync('sh', ['-c', 'command -v plandesk'], { env, encoding: 'utf8' }).trim(), CLI, 'the CLI is on PATH');
    assert.match(cli('--version'), /^plandesk \d+\.\d+\.\d+/);
    const handler = execFileSync('xdg-mime', ['query', 'default', 'x-scheme-handler/plandesk'], { env, encoding: 'utf8' });
    assert.equal(handler.trim(), 'Plandesk.desktop', 'plandesk:// links go to the app');

    // A plan waiting on the person's own store.
    cli('run', '--model', 'demo', '--workspace', workspace, 'Add a --verbose flag that prints each step');
    const [revision] = JSON.parse(cli('--json', 'history'));
    const runId = revision.runId;
    assert.ok(runId && revision.sha256, `a revision: ${JSON.stringify(revision)}`);

    // `plandesk open` with no app running starts the installed one on that plan.
    const t1 = Date.now();
    const first = spawnSync(CLI, ['open', String(revision.id)], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(first.status, 0, `plandesk open: ${first.stderr}`);
    assert.match(first.stderr, new RegExp(`started the app on revision ${revision.id} of run ${runId}`));
    [started] = await waitForProcesses(1, 'after plandesk open');
    const [window] = await waitForWindow(started, WM_CLASS);
    timings.openStarts = Date.now() - t1;
    assert.match(windowProperty(window, 'WM_CLASS'), new RegExp(`"${WM_CLASS}"`), 'the window matches StartupWMClass');
    assert.equal(windowProperty(window, '_NET_WM_PID'), String(started));
    await sleep(1500); // let it paint the plan
    execFileSync('import', ['-window', 'root', join(ARTIFACTS, 'package-started-by-open.png')]);
    // First start on the person's own store: start at login is on, and its entry is valid.
    assert.ok(existsSync(autostart), `the login autostart entry ${autostart} is written at the first start`);
    assert.match(readFileSync(autostart, 'utf8'), new RegExp(`^Exec=${APP} --hidden$`, 'm'));
    const validAutostart = spawnSync('desktop-file-validate', [autostart], { encoding: 'utf8' });
    assert.equal(validAutostart.status, 0, `desktop-file-validate ${autostart}: ${validAutostart.stdout}${validAutostart.stderr}`);
    process.kill(Number(started), 'SIGTERM');
    await waitForProcesses(0, 'after SIGTERM');
    started = null;

    // The installed app as the launcher starts it for a link (Exec=plandesk-app %u).
    const t2 = Date.now();
    driver = await startDriver(PORT, { HOME: home });
    app = await Session.start(PORT, APP, [`plandesk://plan/${runId}`]);
    await app.waitFor("document.body.dataset.ready === 'true'", { what: 'the installed app to be ready' });
    timings.appReady = Date.now() - t2;
    const onPlan = `window.__plandesk.view?.name === 'run' && window.__plandesk.view.runId === ${JSON.stringify(runId)}`;
    await app.waitFor(onPlan, { what: 'the plan named by the link the app was started with' });
    assert.equal(await app.exec('return window.__plandesk.info.dataDir'), store, 'the app opened the person\'s store');
    assert.equal(await app.exec('return window.__plandesk.info.settings.startAtLogin'), true, 'start at login is on');
    const [pid] = await waitForProcesses(1, 'under WebDriver');

    // `plandesk open REVISION`: the running window comes forward on that plan, no second app.
    await app.click('#new-run');
    await app.waitFor("window.__plandesk.view?.name === 'new'", { what: 'the new-run view' });
    const t3 = Date.now();
    const opened = spawnSync(CLI, ['open', revision.sha256.slice(0, 12)], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(opened.status, 0, `plandesk open: ${opened.stderr}`);
    assert.match(opened.stderr, new RegExp(`the running app shows revision ${revision.id} of run ${runId}`));
    await app.waitFor(onPlan, { what: 'the plan opened by plandesk open' });
    timings.openHandsOver = Date.now() - t3;
    await app.find('#plan-title');
    await app.screenshot(join(ARTIFACTS, 'package-open.png'));
    assert.deepEqual(appProcesses(), [pid], 'plandesk open started no second app');

    // A plandesk:// link, through the desktop's URL handler.
    await app.click('#new-run');
    await app.waitFor("window.__plandesk.view?.name === 'new'", { what: 'the new-run view' });
    const link = spawnSync('xdg-open', [`plandesk://plan/${runId}`], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(link.status, 0, `xdg-open: ${link.stderr}`);
    await app.waitFor(onPlan, { what: 'the plan opened by a plandesk:// link' });
    assert.deepEqual(await waitForProcesses(1, 'after the link'), [pid], 'the link started no second app');

    // The tray: the waiting count beside the icon, and a menu.
    const tray = await waitForTrayItem(pid);
    assert.equal(trayProperty(tray, 'XAyatanaLabel'), '1', 'the tray shows one plan waiting');
    assert.deepEqual(trayMenu(tray).map((e) => e.label), ['Open Plandesk', 'Quit Plandesk']);

    // Closing the window keeps the app in the tray (start at login is on).
    const [shown] = visibleWindows(pid, WM_CLASS);
    assert.ok(shown, 'the window is shown');
    await app.click('#new-run');
    await app.waitFor("window.__plandesk.view?.name === 'new'", { what: 'the new-run view' });
    closeWindow(shown);
    await waitForWindow(pid, WM_CLASS, { visible: false });
    await sleep(300);
    assert.deepEqual(appProcesses(), [pid], 'the closed window left the app running');
    // The tray's "Open Plandesk" brings it back on the inbox's plan.
    clickTrayMenu(tray, 'Open Plandesk');
    await waitForWindow(pid, WM_CLASS);
    await app.waitFor(onPlan, { what: 'the inbox\'s plan after "Open Plandesk"' });
    await app.waitFor("document.activeElement?.id === 'inbox'", { what: 'the inbox to have the focus' });

    // Started again from the launcher while it runs: the new process hands over and exits.
    closeWindow(visibleWindows(pid, WM_CLASS)[0]);
    await waitForWindow(pid, WM_CLASS, { visible: false });
    const t4 = Date.now();
    const again = spawnSync(APP, [], { env, encoding: 'utf8', timeout: 30000 });
    timings.secondLaunch = Date.now() - t4;
    assert.equal(again.status, 0, `a second launch exits at once: ${again.stderr}`);
    await waitForWindow(pid, WM_CLASS);
    assert.deepEqual(await waitForProcesses(1, 'after a second launch'), [pid], 'still one app after a second launch');
    // The login autostart while it already runs changes nothing.
    const hidden = spawnSync(APP, ['--hidden'], { env, encoding: 'utf8', timeout: 30000 });
    assert.equal(hidden.status, 0, `a second, hidden launch exits at once: ${hidden.stderr}`);
    assert.deepEqual(appProcesses(), [pid]);

    // Settings turn start at login off (the entry goes) and on again (it is back).
    const setLogin = async (on) => {
      await app.click('#settings-btn');
      await app.waitFor("document.getElementById('settings').open", { what: 'the settings dialog' });
      if (await app.exec("return document.getElementById('set-login').checked") !== on) await app.click('#set-login');
      await app.click('#settings-save');
      await app.waitFor(`!document.getElementById('settings').open && window.__plandesk.info.settings.startAtLogin === ${on}`,
        { what: `start at login ${on ? 'on' : 'off'}` });
    };
    await setLogin(false);
    assert.ok(!existsSync(autostart), 'turning start at login off removes the autostart entry');
    await setLogin(true);
    assert.match(readFileSync(autostart, 'utf8'), new RegExp(`^Exec=${APP} --hidden$`, 'm'), 'turning it on writes it again');

    // "Quit Plandesk" in the tray ends the app.
    clickTrayMenu(tray, 'Quit Plandesk');
    await waitForProcesses(0, 'after "Quit Plandesk"');
    timings.total = Date.now() - t0;
  } finally {
    await app?.close();
    driver?.stop();
    for (const pid of appProcesses()) {
      try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
    }
  }

  // Uninstalled: the package's files are gone, the person's store is untouched.
  const before = folderDigest(store);
  const t5 = Date.now();
  dpkg('-r', PACKAGE);
  timings.remove = Date.now() - t5;
  ours = false;
  assert.ok(!installed(), 'the package is removed');
  for (const file of [APP, CLI, DESKTOP, ICON]) assert.ok(!existsSync(file), `${file} is removed`);
  assert.ok(existsSync(join(store, 'plandesk.db')), 'the store stays');
  assert.equal(folderDigest(store), before, 'removing the package changed nothing in the store');
  console.log(`package test timings (ms): ${JSON.stringify(timings)}`);
});

// If anything above failed before `dpkg -r`, the package it installed must not stay behind.
test.after(() => {
  if (ours && installed()) {
    try { dpkg('-r', PACKAGE); } catch (e) { console.error(e.message); }
  }
});
