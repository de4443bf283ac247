// The Settings and keyboard-help dialogs (their markup is in index.html).
import { call } from './api.js';
import { $ } from './dom.js';
import { state } from './state.js';
import { showError } from './banner.js';

export function openSettings() {
  const s = state.info.settings;
  $('set-notifications').checked = s.notifications;
  $('set-titles').checked = s.notificationTitles;
  $('settings-model').textContent = `New runs use ${state.info.defaultModel} (${state.info.defaultModelReason}).`;
  $('settings-data').textContent = `Store: ${state.info.dataDir}`;
  $('settings').showModal();
}

async function saveSettings() {
  try {
    state.info.settings = await call('save_settings', { settings: {
      notifications: $('set-notifications').checked,
      notificationTitles: $('set-titles').checked,
    } });
    $('settings').close();
  } catch (e) { showError(e); }
}

export function openHelp() {
  $('help').showModal();
}

/** Wires the dialogs' own buttons. */
export function initDialogs() {
  $('settings-save').addEventListener('click', saveSettings);
  $('settings-cancel').addEventListener('click', () => $('settings').close());
}
