//! `plandesk record AGENT`: an agent's after-tool hook. It records what the agent did after its
//! plan was approved and never stands in the agent's way: it prints nothing, always exits 0, and
//! gives up (saying so on stderr) if the store does not take the record within a moment.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use plandesk::config::StoreLocation;
use plandesk::review::SourceKind;
use plandesk::source::{self, after};
use plandesk::Engine;

/// The longest a record may take; then the hook exits (0) without it.
const LIMIT: Duration = Duration::from_secs(3);

/// The agents whose after-tool hooks are read.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code (PostToolUse, PostToolUseFailure, Stop)
    ClaudeCode,
    /// Codex (PostToolUse, Stop)
    Codex,
    /// Gemini CLI (AfterTool, AfterAgent)
    Gemini,
    /// Factory Droid (PostToolUse, Stop)
    Droid,
    /// Qwen Code (PostToolUse, PostToolUseFailure, Stop)
    QwenCode,
    /// Kimi Code (PostToolUse, PostToolUseFailure, Stop)
    KimiCode,
    /// Copilot CLI (postToolUse, agentStop)
    Copilot,
    /// OpenCode (Plandesk's plugin: tool.execute.after, session.idle)
    #[value(name = "opencode")]
    OpenCode,
    /// Kilo CLI (the same plugin)
    Kilo,
    /// Pi (Plandesk's extension: tool_result, agent_end)
    Pi,
}

pub async fn record(agent: Agent, data_dir: &Path, store: Option<&str>) -> ExitCode {
    std::thread::spawn(|| {
        std::thread::sleep(LIMIT);
        eprintln!("plandesk record: the store did not answer within {LIMIT:?}; nothing recorded");
        std::process::exit(0);
    });
    if let Err(err) = record_one(agent, data_dir, store).await {
        eprintln!(
            "plandesk record: {}; nothing recorded",
            plandesk::text::terminal_safe(&err)
        );
    }
    ExitCode::SUCCESS
}

async fn record_one(agent: Agent, data_dir: &Path, store: Option<&str>) -> Result<(), String> {
    let input = source::read_stdin(source::MAX_HOOK_INPUT)?;
    let reports = match agent {
        Agent::ClaudeCode => after::claude(&input).map(|r| r.into_iter().collect()),
        Agent::Gemini => after::gemini(&input).map(|r| r.into_iter().collect()),
        Agent::Droid => after::droid(&input).map(|r| r.into_iter().collect()),
        Agent::QwenCode => after::qwen(&input).map(|r| r.into_iter().collect()),
        Agent::KimiCode => {
            let home = source::kimi::home(&|name: &str| std::env::var_os(name));
            source::kimi::report(&input, home.as_deref()).map(|r| r.into_iter().collect())
        }
        Agent::Copilot => after::copilot(&input).map(|r| r.into_iter().collect()),
        Agent::OpenCode => {
            after::plugin(&input, SourceKind::OpenCode).map(Option::unwrap_or_default)
        }
        Agent::Kilo => after::plugin(&input, SourceKind::Kilo).map(Option::unwrap_or_default),
        Agent::Pi => after::plugin(&input, SourceKind::Pi).map(Option::unwrap_or_default),
        Agent::Codex => after::codex(&input).map(Option::unwrap_or_default),
    }
    .map_err(|e| e.to_string())?;
    if reports.is_empty() {
        return Ok(());
    }
    let store = StoreLocation::choose(store, data_dir).map_err(|e| e.to_string())?;
    let engine = Engine::open_at(&store, "record")
        .await
        .map_err(|e| e.to_string())?;
    let review = engine.review();
    for report in &reports {
        if report.answered {
            // The session went on: a plan of it still waiting here was answered in the agent.
            review
                .answered_in_agent(&report.source)
                .await
                .map_err(|e| e.to_string())?;
        }
        if let Some(work) = report.work(engine.now_millis()) {
            review.record_work(&work).await.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
