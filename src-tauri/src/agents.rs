//! Settings → Agents: whether each outside agent hands its plans to Plandesk, and one click to
//! set it up or take it out (the same merge `plandesk install` does, for the `plandesk` CLI
//! installed beside this app).

use plandesk::source::install::{self, Places, Target};
use serde::Serialize;
use tauri::State;

use crate::ipc::IpcError;
use crate::AppState;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSetup {
    pub agent: &'static str,
    pub name: &'static str,
    pub installed: bool,
    /// The settings file it lives in.
    pub file: String,
    /// What the person still has to do (e.g. trust the hook in Codex).
    pub note: Option<String>,
    /// Why it cannot be set up from here (its settings file is not JSON, or holds a `plandesk`
    /// entry Plandesk did not write); the other agents are listed all the same.
    pub problem: Option<String>,
}

fn places(state: &AppState) -> Result<Places, IpcError> {
    let app = std::env::current_exe()
        .map_err(|e| IpcError::new("install", format!("Cannot find this app's binary: {e}")))?;
    let cli = app.with_file_name("plandesk");
    if !cli.exists() {
        return Err(IpcError::new(
            "install",
            format!(
                "The plandesk command is not installed beside the app ({}).",
                cli.display()
            ),
        ));
    }
    let mut places = Places::from_env(cli, Some(state.data_dir.clone()))
        .map_err(|e| IpcError::new("install", e.to_string()))?;
    if let Some(workspace) = &state.workspace {
        places.project = workspace.clone();
    }
    Ok(places)
}

fn setup(target: Target, places: &Places) -> AgentSetup {
    let name = if target == Target::Mcp {
        "MCP clients (this workspace's .mcp.json)"
    } else {
        target.source().agent_name()
    };
    let (installed, file, problem) = match install::plan(target, false, places) {
        Ok(change) => (
            !change.changes_anything(),
            change.file.display().to_string(),
            None,
        ),
        Err(err) => (
            false,
            err.file()
                .map(|f| f.display().to_string())
                .unwrap_or_default(),
            Some(err.to_string()),
        ),
    };
    AgentSetup {
        agent: target.id(),
        name,
        installed,
        file,
        note: None,
        problem,
    }
}

#[tauri::command]
pub async fn agent_setup(state: State<'_, AppState>) -> Result<Vec<AgentSetup>, IpcError> {
    let places = places(&state)?;
    Ok(Target::ALL
        .into_iter()
        .map(|target| setup(target, &places))
        .collect())
}

#[tauri::command]
pub async fn install_agent(
    state: State<'_, AppState>,
    agent: String,
    uninstall: bool,
) -> Result<AgentSetup, IpcError> {
    let target = Target::from_id(&agent)
        .ok_or_else(|| IpcError::invalid(format!("Unknown agent {agent}.")))?;
    let places = places(&state)?;
    let change = install::plan(target, uninstall, &places)
        .map_err(|e| IpcError::new("install", e.to_string()))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    install::apply(&change, now).map_err(|e| IpcError::new("install", e.to_string()))?;
    let mut result = setup(target, &places);
    // OpenCode's and Kilo's checks start the agent (seconds): off the async workers.
    let checked = {
        let change = change.clone();
        tauri::async_runtime::spawn_blocking(move || install::check(target, &change))
            .await
            .ok()
            .flatten()
    };
    result.note = match (change.note, checked) {
        (Some(note), Some(checked)) => Some(format!("{checked} {note}")),
        (note, checked) => checked.or(note),
    };
    Ok(result)
}
