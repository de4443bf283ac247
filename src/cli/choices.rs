//! The command line's fixed choices as clap ValueEnums (clap refuses anything else with its
//! own error listing them, and completes them), each converted to the library's own type.

use clap::ValueEnum;
use plandesk::secret::KeyProvider;
use plandesk::source::install::Target;

/// The mode a run starts in (`plandesk::mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Read the workspace and write a plan; no other file is written
    Plan,
    /// Carry the plan out: file writes are allowed (each approved unless --auto-approve)
    Build,
}

impl Mode {
    /// The library's name for it (`plandesk::mode`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Plan => plandesk::mode::PLAN,
            Mode::Build => plandesk::mode::BUILD,
        }
    }
}

/// What `plandesk install` sets up: an agent's hook, or the MCP server entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InstallTarget {
    /// Claude Code's PermissionRequest hook on ExitPlanMode
    #[value(alias = "claude")]
    ClaudeCode,
    /// Codex's Stop hook
    Codex,
    /// Gemini CLI's BeforeTool hook on exit_plan_mode
    #[value(alias = "gemini-cli")]
    Gemini,
    /// Factory Droid's PreToolUse hook on ExitSpecMode
    Droid,
    /// Qwen Code's PermissionRequest hook on exit_plan_mode
    #[value(alias = "qwen")]
    QwenCode,
    /// Kimi Code's PreToolUse hook on ExitPlanMode, in its config.toml
    #[value(alias = "kimi")]
    KimiCode,
    /// Copilot CLI's preToolUse hook on exit_plan_mode
    Copilot,
    /// OpenCode: Plandesk's plugin in its plugins folder
    #[value(name = "opencode")]
    OpenCode,
    /// Kilo CLI: the same plugin in its plugins folder
    Kilo,
    /// Pi: Plandesk's extension (plan mode, submit_plan) in its extensions folder
    Pi,
    /// An MCP server entry in the project's .mcp.json
    Mcp,
}

impl From<InstallTarget> for Target {
    fn from(target: InstallTarget) -> Self {
        match target {
            InstallTarget::ClaudeCode => Target::ClaudeCode,
            InstallTarget::Codex => Target::Codex,
            InstallTarget::Gemini => Target::Gemini,
            InstallTarget::Droid => Target::Droid,
            InstallTarget::QwenCode => Target::QwenCode,
            InstallTarget::KimiCode => Target::KimiCode,
            InstallTarget::Copilot => Target::Copilot,
            InstallTarget::OpenCode => Target::OpenCode,
            InstallTarget::Kilo => Target::Kilo,
            InstallTarget::Pi => Target::Pi,
            InstallTarget::Mcp => Target::Mcp,
        }
    }
}

/// A provider whose API key the OS keyring may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Provider {
    #[value(name = "openai")]
    OpenAi,
    Anthropic,
}

impl From<Provider> for KeyProvider {
    fn from(provider: Provider) -> Self {
        match provider {
            Provider::OpenAi => KeyProvider::OpenAi,
            Provider::Anthropic => KeyProvider::Anthropic,
        }
    }
}

/// How a person marks a step of an approved plan by hand (`plandesk mark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StepMark {
    /// Done, though no file or command shows it
    Done,
    /// Not applicable
    #[value(name = "n/a", alias = "not-applicable")]
    NotApplicable,
    /// Back to what the work shows
    Clear,
}

impl From<StepMark> for plandesk::review::StepMark {
    fn from(mark: StepMark) -> Self {
        match mark {
            StepMark::Done => Self::Done,
            StepMark::NotApplicable => Self::NotApplicable,
            StepMark::Clear => Self::Clear,
        }
    }
}
