// The Settings and keyboard-help dialogs (their markup is in index.html).
import { call, describe, inBrowser, listen, newestRead } from './api.js';
import { $, h, clear } from './dom.js';
import { state } from './state.js';
import { showError } from './banner.js';

export function openSettings() {
  const s = state.info.settings;
  $('set-notifications').checked = s.notifications;
  $('set-titles').checked = s.notificationTitles;
  $('set-login').checked = s.startAtLogin;
  $('set-reviewer').value = s.reviewerName || '';
  $('set-store').value = s.teamStore || '';
  $('settings-data').textContent = `Store: ${state.info.store || state.info.dataDir}`;
  $('settings').showModal();
  loadDefaultModel();
  loadAgents();
  loadWebhooks();
  hideSignInLink();
  loadPhoneServing();
}

/** Whether the app serves its network: the button says what a click does, the line what is. */
function showPhoneServing(serving) {
  const button = $('settings-phone-serve');
  button.textContent = serving.on ? 'Stop letting phones in' : 'Let phones on this network reach Plandesk';
  button.dataset.on = String(serving.on);
  $('settings-phone-port').value = String(serving.port);
  $('settings-phone-port').disabled = serving.on;
  let said = '';
  if (serving.error) said = serving.error;
  else if (serving.on && serving.beyondNetwork) {
    said = `Phones open Plandesk at ${serving.url} once signed in (make a sign-in link below). This address may be reachable from outside your network: anyone who reaches it sees the sign-in page, and nothing more without a link. The connection is not encrypted.`;
  } else if (serving.on) {
    said = `Phones on this Wi-Fi or network (${serving.network}) open Plandesk at ${serving.url} once signed in (make a sign-in link below). It stops while this computer is on another network. The connection is not encrypted: use this on your home or office network only.`;
  }
  const status = $('settings-phone-status');
  status.classList.toggle('warning-text', Boolean(serving.error || serving.beyondNetwork));
  status.textContent = said;
  status.hidden = !said;
}

/** A sign-in link made before the switch changed names an address that no longer serves. */
function hideSignInLink() {
  for (const id of ['settings-qr', 'settings-pair-link', 'settings-pair-here']) $(id).hidden = true;
}

async function loadPhoneServing() {
  try {
    showPhoneServing(await call('phone_serving'));
  } catch (e) {
    sayPhoneProblem(e);
  }
}

/** A refusal (a port that is not one, the store failing) is said beside the switch. */
function sayPhoneProblem(e) {
  const status = $('settings-phone-status');
  status.classList.add('warning-text');
  status.textContent = describe(e);
  status.hidden = false;
}

/** Starts or stops letting phones in, as the button says: at once (Cancel does not undo it). */
async function togglePhoneServing() {
  const button = $('settings-phone-serve');
  const on = button.dataset.on !== 'true';
  button.disabled = true;
  button.textContent = on ? 'Starting…' : 'Stopping…';
  hideSignInLink();
  try {
    showPhoneServing(await call('serve_phone', { on, port: $('settings-phone-port').value }));
  } catch (e) {
    // Where it stands now, then why the click did not do what it said.
    await loadPhoneServing();
    sayPhoneProblem(e);
  } finally {
    button.disabled = false;
  }
}

/** A sign-in link for a phone: its QR code (an image: no markup is inserted) and the link. */
async function makeSignInLink() {
  try {
    const link = await call('sign_in_link');
    $('settings-qr').src = `data:image/svg+xml;base64,${btoa(link.qrSvg)}`;
    $('settings-qr').hidden = false;
    $('settings-pair-link').textContent = `${link.url} — signs in as ${link.name}`;
    $('settings-pair-link').hidden = false;
    $('settings-pair-here').hidden = !link.onlyHere;
  } catch (e) {
    showError(e);
  }
}

const webhookReads = newestRead();

async function loadWebhooks(hooks) {
  const newest = webhookReads();
  let rows;
  try {
    rows = (hooks || await call('webhooks')).map(webhookRow);
  } catch (e) {
    rows = [h('li', { class: 'muted' }, describe(e))];
  }
  if (!rows.length) rows = [h('li', { class: 'muted' }, 'No webhooks.')];
  if (newest()) clear($('settings-webhooks')).append(...rows);
}

function webhookRow(hook) {
  const last = !hook.last ? 'Not sent yet'
    : hook.last.ok ? 'Delivered' : `Failed: ${hook.last.error || ''}`;
  const remove = h('button', { type: 'button' }, 'Remove');
  remove.addEventListener('click', async () => {
    remove.disabled = true;
    try {
      loadWebhooks(await call('remove_webhook', { url: hook.url }));
    } catch (e) {
      showError(e);
      remove.disabled = false;
    }
  });
  return h('li', {},
    h('span', { class: 'name file', title: hook.url }, hook.url),
    h('span', { class: `state ${hook.last && !hook.last.ok ? 'off' : 'on'}` }, hook.format),
    h('span', { class: `file ${hook.last && !hook.last.ok ? 'problem' : 'muted'}` }, last),
    remove);
}

async function addWebhook() {
  const url = $('webhook-url').value.trim();
  if (!url) return;
  try {
    loadWebhooks(await call('add_webhook', { webhook: { url, format: $('webhook-format').value, withPlan: false } }));
    $('webhook-url').value = '';
  } catch (e) {
    showError(e);
  }
}

const modelReads = newestRead();

/** Which model new runs use, and why (finding it asks the keyring and a local Ollama). */
async function loadDefaultModel() {
  const newest = modelReads();
  $('settings-model').textContent = 'New runs use the default model.';
  let text;
  try {
    const chosen = await call('default_model');
    text = `New runs use ${chosen.spec} (${chosen.reason}).`;
  } catch (e) {
    text = `The default model could not be found: ${describe(e)}`;
  }
  if (newest()) $('settings-model').textContent = text;
}

const agentReads = newestRead();

/** One row per agent: whether its plans come here, and a button to change that. Drawn from the
 * newest read only (Settings opened again, or an agent set up, while one was under way). */
async function loadAgents() {
  const newest = agentReads();
  let rows;
  try {
    rows = (await call('agent_setup')).map(agentRow);
  } catch (e) {
    rows = [h('li', { class: 'muted' }, e.message || String(e))];
  }
  if (newest()) clear($('settings-agents')).append(...rows);
}

function agentRow(agent) {
  const button = h('button', { type: 'button', dataset: { agent: agent.agent } }, agent.installed ? 'Disconnect' : 'Connect');
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const done = await call('install_agent', { agent: agent.agent, uninstall: agent.installed });
      $('settings-agent-note').hidden = !done.note;
      $('settings-agent-note').textContent = done.note || '';
      row.replaceWith(agentRow(done));
    } catch (e) {
      showError(e);
      button.disabled = false;
    }
  });
  const state = agent.problem ? 'Cannot connect' : agent.installed ? 'Connected' : 'Not connected';
  const row = h('li', { dataset: { agent: agent.agent } },
    h('span', { class: 'name' }, agent.name),
    h('span', { class: `state ${agent.installed ? 'on' : 'off'}` }, state),
    h('span', { class: 'file muted', title: agent.file }, agent.file),
    button);
  if (agent.problem) {
    // Its settings file is not one Plandesk can safely change: say why, and offer nothing.
    button.disabled = true;
    row.append(h('span', { class: 'problem' }, agent.problem));
  }
  return row;
}

async function saveSettings() {
  const before = state.info.settings.teamStore || '';
  const save = $('settings-save');
  save.disabled = true;
  try {
    state.info.settings = await call('save_settings', { settings: {
      notifications: $('set-notifications').checked,
      notificationTitles: $('set-titles').checked,
      startAtLogin: $('set-login').checked,
      reviewerName: $('set-reviewer').value,
      teamStore: $('set-store').value,
    } });
    if ((state.info.settings.teamStore || '') !== before) {
      $('settings-data').textContent = 'Switching stores: Plandesk starts again…';
      return;
    }
    $('settings').close();
  } catch (e) {
    showError(e);
  } finally {
    save.disabled = false;
  }
}

export function openHelp() {
  $('help').showModal();
}

/** Wires the dialogs' own buttons. */
export function initDialogs() {
  $('settings-save').addEventListener('click', saveSettings);
  $('settings-cancel').addEventListener('click', () => $('settings').close());
  $('settings-pair').addEventListener('click', makeSignInLink);
  $('settings-phone-serve').addEventListener('click', togglePhoneServing);
  $('webhook-add').addEventListener('click', addWebhook);
  // The app lets phones in by itself too (at launch, back on the network allowed): Settings,
  // if open, follows. (A browser has no Settings.)
  if (!inBrowser()) {
    listen('phone-serving', (serving) => {
      if ($('settings').open && $('settings-phone-serve').disabled === false) showPhoneServing(serving);
    });
  }
}
