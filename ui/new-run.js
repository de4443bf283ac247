// The new-run form (workspace, what to do, model) and starting a run; and the home page shown
// when runs exist but nothing waits.
import { call } from './api.js';
import { h, clear, badge, shorten, emptyState } from './dom.js';
import { state } from './state.js';
import { showError, hideBanner } from './banner.js';
import { drawnDirectly, go, latest, register, setView, viewEl } from './nav.js';
import { newLive, updateStatus } from './live.js';
import { refreshRuns } from './sidebar.js';

function showNewRun() {
  setView({ name: 'new' });
  const info = state.info || {};
  const workspace = h('input', { id: 'workspace', type: 'text', value: info.workspace || '', spellcheck: 'false', 'aria-label': 'Workspace folder' });
  const prompt = h('textarea', { id: 'prompt', rows: '5', placeholder: 'e.g. Add a --verbose flag that prints each step', 'aria-label': 'What should the agent do?' });
  const model = h('input', { id: 'model', type: 'text', spellcheck: 'false', list: 'model-options', placeholder: info.defaultModel || 'demo', 'aria-label': 'Model' });
  const suggestions = [...new Set([info.defaultModel, 'demo', 'openai:gpt-4.1', 'anthropic:claude-sonnet-4-5', 'ollama:llama3.2'].filter(Boolean))];
  const options = h('datalist', { id: 'model-options' }, suggestions.map((spec) => h('option', { value: spec })));
  const start = h('button', { id: 'start', class: 'primary', type: 'submit' }, 'Start run', h('kbd', {}, 'Ctrl+Enter'));
  const form = h('form', { class: 'form card', onsubmit: (e) => { e.preventDefault(); startRun(workspace.value, prompt.value, model.value, start); } },
    h('label', {}, 'Workspace folder',
      h('div', { class: 'row' }, workspace, h('button', { type: 'button', onclick: async () => {
        try { const dir = await call('pick_workspace'); if (dir) workspace.value = dir; } catch (e) { showError(e); }
      } }, 'Choose…'))),
    h('label', {}, 'What should the agent do?', prompt,
      h('span', { class: 'hint' }, 'It writes a plan first; nothing in the folder changes until you approve it.')),
    h('label', {}, 'Model',
      model, options,
      h('span', { class: 'hint' }, `Empty: ${info.defaultModel || 'demo'} — ${info.defaultModelReason || ''}. Also openai:MODEL, anthropic:MODEL, ollama:MODEL.`)),
    h('div', { class: 'actions' }, start));
  clear(viewEl()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'New run'),
    h('div', { class: 'meta-line' }, 'Pick a folder, say what you want, and review the plan before anything is built.'))), form);
  prompt.focus();
}

async function startRun(workspace, prompt, model, button) {
  hideBanner();
  button.disabled = true;
  const current = latest();
  const live = newLive();
  try {
    const runId = await call('start_run', { request: { workspace, prompt, model: model || null }, onEvent: live.channel });
    live.transcript.user(prompt.trim());
    live.runId = runId;
    state.live.set(runId, live);
    // Moved on meanwhile: the run goes on, and shows its stream when opened.
    if (!current()) {
      refreshRuns();
      return;
    }
    // The run is stored just before its `start` chunk: until then show it from the stream alone.
    drawnDirectly();
    setView({ name: 'run', runId, pendingKey: '' });
    clear(viewEl()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, shorten(prompt, 140)),
      h('div', { class: 'meta-line' }, badge('running')))), live.transcript.el, h('div', { class: 'run-status', 'aria-live': 'polite' }),
    h('div', { id: 'review-slot' }));
    updateStatus(live);
    if (live.started) go('run', runId, { live });
  } catch (e) {
    showError(e);
  } finally {
    button.disabled = false;
  }
}

function showHome() {
  clear(viewEl()).append(emptyState('Nothing is waiting for you', 'Plans the agent submits show up in the inbox on the left.',
    h('button', { class: 'primary', type: 'button', onclick: () => go('new') }, 'Start a new run')));
  setView({ name: 'home' });
}

register('new', showNewRun);
register('home', showHome);
