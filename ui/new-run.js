// The new-run form (workspace, what to do, model) and starting a run; and the home page shown
// when runs exist but nothing waits.
import { call, describe } from './api.js';
import { $, h, clear, badge, shorten, emptyState } from './dom.js';
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
  const model = h('input', { id: 'model', type: 'text', spellcheck: 'false', list: 'model-options', 'aria-label': 'Model', 'aria-describedby': 'model-hint' });
  const options = h('datalist', { id: 'model-options' }, SUGGESTIONS.map((spec) => h('option', { value: spec })));
  const hint = h('span', { class: 'hint', id: 'model-hint' }, `Empty: the default model. ${OTHER_MODELS}`);
  const start = h('button', { id: 'start', class: 'primary', type: 'submit', key: 'Ctrl+Enter' }, 'Start run');
  const form = h('form', { class: 'form card', onsubmit: (e) => { e.preventDefault(); startRun(workspace.value, prompt.value, model.value, start); } },
    h('label', {}, 'Workspace folder',
      h('div', { class: 'row' }, workspace, h('button', { type: 'button', onclick: async () => {
        try { const dir = await call('pick_workspace'); if (dir) workspace.value = dir; } catch (e) { showError(e); }
      } }, 'Choose…'))),
    h('label', {}, 'What should the agent do?', prompt,
      h('span', { class: 'hint' }, 'It writes a plan first; nothing in the folder changes until you approve it.')),
    h('label', {}, 'Model',
      model, options, hint),
    h('div', { class: 'actions' }, start));
  clear(viewEl()).append(h('div', { class: 'page-head' }, h('div', {}, h('h1', {}, 'New run'),
    h('div', { class: 'meta-line' }, 'Pick a folder, say what you want, and review the plan before anything is built.'))), form);
  prompt.focus();
  showDefaultModel(model, options, hint);
}

const SUGGESTIONS = ['demo', 'openai:gpt-4.1', 'anthropic:claude-sonnet-4-5', 'ollama:llama3.2'];
const OTHER_MODELS = 'Also openai:MODEL, anthropic:MODEL, ollama:MODEL.';

/** The model an empty field means, once the backend has found it (it asks the keyring and a
 * local Ollama, which the form does not wait for): the field's placeholder, the first
 * suggestion, and why it was chosen. */
async function showDefaultModel(input, options, hint) {
  let chosen;
  try {
    chosen = await call('default_model');
  } catch (e) {
    hint.textContent = `Empty: the default model, which could not be found: ${describe(e)}. ${OTHER_MODELS}`;
    return;
  }
  input.placeholder = chosen.spec;
  for (const option of [...options.options]) if (option.value === chosen.spec) option.remove();
  options.prepend(h('option', { value: chosen.spec }));
  hint.textContent = `Empty: ${chosen.spec} — ${chosen.reason}. ${OTHER_MODELS}`;
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
  const start = $('new-run').hidden ? null : h('button', { class: 'primary', type: 'button', onclick: () => go('new') }, 'Start a new run');
  clear(viewEl()).append(emptyState('Nothing is waiting for you', 'Plans the agent submits show up in the inbox.', start));
  setView({ name: 'home' });
}

register('new', showNewRun);
register('home', showHome);
