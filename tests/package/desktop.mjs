// What a desktop sees of an installed app, without a desktop: its X windows (xdotool, xprop),
// the close button a window manager would press (wm-close.py), and its tray item as a tray host
// reads it over D-Bus (the StatusNotifierItem that libayatana-appindicator exports, and its
// com.canonical.dbusmenu menu). Needs DISPLAY and DBUS_SESSION_BUS_ADDRESS (`./x test` runs
// the package test under xvfb-run and dbus-run-session).
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const HERE = import.meta.dirname;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function run(cmd, args) {
  const out = spawnSync(cmd, args, { encoding: 'utf8', timeout: 10000 });
  if (out.error) throw new Error(`${cmd} ${args.join(' ')}: ${out.error.message}`);
  return out;
}

/** The visible top-level windows of `pid` whose class is `wmClass`. */
export function visibleWindows(pid, wmClass) {
  const out = run('xdotool', ['search', '--onlyvisible', '--pid', String(pid), '--class', wmClass]);
  // xdotool exits 1 when nothing matches.
  return out.stdout.split('\n').filter(Boolean);
}

/** Polls until `pid` shows (or, with `visible` false, no longer shows) a window. */
export async function waitForWindow(pid, wmClass, { visible = true, timeout = 20000 } = {}) {
  const until = Date.now() + timeout;
  for (;;) {
    const windows = visibleWindows(pid, wmClass);
    if (visible ? windows.length > 0 : windows.length === 0) return windows;
    if (Date.now() > until) {
      throw new Error(`process ${pid} ${visible ? 'showed no' : 'still showed a'} window of class ${wmClass} after ${timeout} ms`);
    }
    await sleep(100);
  }
}

/** An X property of a window, as xprop prints its value. */
export function windowProperty(window, name) {
  const out = run('xprop', ['-id', window, name]);
  if (out.status !== 0) throw new Error(`xprop ${name} of ${window}: ${out.stderr}`);
  return out.stdout.replace(/^[^=]*=\s*/, '').trim();
}

/** Asks `window` to close as a window manager's close button does. */
export function closeWindow(window) {
  execFileSync('python3', [join(HERE, 'wm-close.py'), window], { encoding: 'utf8' });
}

function gdbus(dest, path, method, ...args) {
  const out = run('gdbus', ['call', '--session', '--dest', dest, '--object-path', path, '--method', method, '--', ...args]);
  if (out.status !== 0) throw new Error(`${method} on ${dest} ${path}: ${out.stderr.trim()}`);
  return out.stdout;
}

const BUS = ['org.freedesktop.DBus', '/org/freedesktop/DBus'];
const ITEMS = '/org/ayatana/NotificationItem';

/** The tray item `pid` exports: its bus name and object path, or null. */
export function findTrayItem(pid) {
  const names = [...gdbus(...BUS, 'org.freedesktop.DBus.ListNames').matchAll(/'(:[0-9.]+)'/g)].map((m) => m[1]);
  for (const name of names) {
    let owner;
    try {
      owner = gdbus(...BUS, 'org.freedesktop.DBus.GetConnectionUnixProcessID', name).match(/uint32 (\d+)/)?.[1];
    } catch { continue; /* gone meanwhile */ }
    if (owner !== String(pid)) continue;
    let xml;
    try {
      xml = gdbus(name, ITEMS, 'org.freedesktop.DBus.Introspectable.Introspect');
    } catch { continue; /* another of its connections */ }
    const node = xml.match(/<node name=\\?"([^"\\]+)\\?"/);
    if (node) return { name, path: `${ITEMS}/${node[1]}` };
  }
  return null;
}

/** Polls for `pid`'s tray item. */
export async function waitForTrayItem(pid, timeout = 20000) {
  const until = Date.now() + timeout;
  for (;;) {
    const item = findTrayItem(pid);
    if (item) return item;
    if (Date.now() > until) throw new Error(`process ${pid} exported no tray item (${ITEMS}/*) on the session bus`);
    await sleep(200);
  }
}

/** A string property of the tray item (e.g. XAyatanaLabel, the text beside the icon). */
export function trayProperty(item, property) {
  const out = gdbus(item.name, item.path, 'org.freedesktop.DBus.Properties.Get', 'org.kde.StatusNotifierItem', property);
  const value = out.match(/<'((?:[^'\\]|\\.)*)'>/);
  if (!value) throw new Error(`tray property ${property}: unexpected answer ${out}`);
  return value[1];
}

/** The tray menu's entries: [{id, label}]. */
export function trayMenu(item) {
  const out = gdbus(item.name, `${item.path}/Menu`, 'com.canonical.dbusmenu.GetLayout', '0', '-1', '[]');
  return [...out.matchAll(/\((\d+), \{'label': <'((?:[^'\\]|\\.)*)'>/g)].map((m) => ({ id: Number(m[1]), label: m[2] }));
}

/** Clicks the tray menu entry labelled `label`, as a tray host does. */
export function clickTrayMenu(item, label) {
  const menu = trayMenu(item);
  const entry = menu.find((e) => e.label === label);
  if (!entry) throw new Error(`no "${label}" in the tray menu: ${JSON.stringify(menu)}`);
  gdbus(item.name, `${item.path}/Menu`, 'com.canonical.dbusmenu.Event', String(entry.id), 'clicked', '<int32 0>', '0');
}
