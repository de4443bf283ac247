// Starts tauri-driver (and a notification daemon), gives each test its own store and workspace.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Session } from './webdriver.mjs';

export const ROOT = resolve(import.meta.dirname, '../..');
export const APP = process.env.PLANDESK_APP || join(ROOT, 'target/debug/plandesk-app');
export const CLI = join(ROOT, 'target/debug/plandesk');
export const ARTIFACTS = join(ROOT, 'target/e2e-artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function driverPath() {
  const home = process.env.CARGO_HOME || join(process.env.HOME, '.cargo');
  return join(home, 'bin/tauri-driver');
}

/** tauri-driver on `port` (WebKitWebDriver on port + 1), with `env` added. */
export async function startDriver(port, env = {}) {
  // Its own process group: stopping it takes WebKitWebDriver and any app it launched along.
  const child = spawn(driverPath(), ['--port', String(port), '--native-port', String(port + 1)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  for (let i = 0; i < 100; i += 1) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/status`);
      if (res.ok) return { stop: () => stopGroup(child) };
    } catch { /* not up yet */ }
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  stopGroup(child);
  throw new Error(`tauri-driver did not start: ${stderr}`);
}

/** Kills a detached child's whole process group and lets go of its pipes, so Node can exit. */
function stopGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
  child.stderr?.destroy();
  child.unref();
}

/** A store and a small workspace of its own. */
export function fixture() {
  const root = mkdtempSync(join(tmpdir(), 'plandesk-e2e-'));
  const data = join(root, 'data');
  const workspace = join(root, 'ws');
  mkdirSync(join(workspace, 'src'), { recursive: true });
  writeFileSync(join(workspace, 'src/main.rs'), 'fn main() {\n    println!("hello");\n}\n');
  writeFileSync(join(workspace, 'README.md'), '# Demo project\n');
  return { root, data, workspace };
}

/** The app (`app`: its binary, by default the one under test) on the fixture's store. */
export async function openApp(port, fx, app = APP) {
  const session = await Session.start(port, app, ['--data-dir', fx.data, '--workspace', fx.workspace]);
  await session.waitFor("document.body.dataset.ready === 'true'", { what: 'the app to be ready' });
  return session;
}

/** Runs the CLI against the test's store; returns stdout. */
export function cli(fx, args, env = {}) {
  return execFileSync(CLI, ['--data-dir', fx.data, ...args], {
    cwd: fx.workspace,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
}

/** Kills the app of this fixture with SIGKILL, as a crash or `kill -9` would. */
export function killApp(fx) {
  execFileSync('pkill', ['-KILL', '-f', `plandesk-app --data-dir ${fx.data}`]);
}

/** Watches the session bus for Notify calls; `text()` is what it has seen so far. */
export function watchNotifications() {
  const monitor = spawn('dbus-monitor', ['--session',
    "type='method_call',interface='org.freedesktop.Notifications',member='Notify'"], { stdio: ['ignore', 'pipe', 'ignore'] });
  let seen = '';
  monitor.stdout.on('data', (d) => { seen += d; });
  return { text: () => seen, stop: () => { monitor.kill('SIGKILL'); monitor.stdout.destroy(); } };
}

/** A notification daemon on the test display, so notifications are really shown. */
export function startNotificationDaemon() {
  const daemon = spawn('dunst', [], { stdio: 'ignore', detached: true });
  daemon.on('error', () => {});
  return { stop: () => stopGroup(daemon) };
}

export const CTRL_ENTER = '\uE009\uE007\uE000';
