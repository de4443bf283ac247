//! Plandesk's small vocabularies (statuses, kinds, actions), which every layer speaks: each an
//! enum that is a string only in the database and on the wire, declared with `vocabulary!`,
//! which other modules use for their own.

/// Declares a string-backed enum: `as_str` for the database, `parse` for reading it back, and
/// serde with the same names.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value a stored string names, if any.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// A run's status as listings show it.
    RunStatus {
        Running = "running",
        Suspended = "suspended",
        /// Waiting for the user's next message after a rejection without feedback.
        Waiting = "waiting",
        Finished = "finished",
        Failed = "failed",
    }
}

vocabulary! {
    /// What an open review item asks of a person.
    ItemKind {
        /// A plan submitted with `submit_plan` (or by an outside agent).
        Plan = "plan",
        /// An approval-gated tool call.
        Approval = "approval",
        /// Another tool that suspended for the host.
        Suspended = "suspended",
    }
}

vocabulary! {
    /// What a person (or the rules) decided on an item.
    Action {
        Approved = "approved",
        Rejected = "rejected",
        /// An approval-gated tool call that was declined.
        Declined = "declined",
        /// Resume data that did not fit the tool's schema: recorded, answered with an error.
        Invalid = "invalid",
        /// The outside agent stopped waiting (its hook was killed or gave up).
        Abandoned = "abandoned",
        /// No decision was made before the source's deadline: answered as a denial.
        Expired = "expired",
        /// The agent went on without Plandesk's answer (its own dialog answered the plan).
        AnsweredInAgent = "answered-in-agent",
    }
}

vocabulary! {
    /// Where a run's plans come from.
    SourceKind {
        /// A run of Plandesk's own engine.
        Engine = "engine",
        ClaudeCode = "claude-code",
        Codex = "codex",
        Gemini = "gemini",
        /// Factory's Droid CLI.
        Droid = "droid",
        QwenCode = "qwen-code",
        /// Moonshot AI's Kimi Code CLI.
        KimiCode = "kimi-code",
        /// GitHub Copilot CLI.
        Copilot = "copilot",
        /// OpenCode, through Plandesk's plugin.
        OpenCode = "opencode",
        /// Kilo CLI (OpenCode's fork), through the same plugin.
        Kilo = "kilo",
        /// Pi, through Plandesk's extension.
        Pi = "pi",
        /// Any MCP client calling `plandesk mcp`'s `submit_plan`.
        Mcp = "mcp",
    }
}

vocabulary! {
    /// The kinds of entries in a run's append-only event log.
    EventKind {
        RunStarted = "run-started",
        PlanSubmitted = "plan-submitted",
        Suspended = "suspended",
        Decided = "decided",
        Finished = "finished",
        Waiting = "waiting",
        MaxSteps = "max-steps",
        Failed = "failed",
        Retry = "retry",
        Message = "message",
    }
}

vocabulary! {
    /// The kinds of entries in the audit trail.
    AuditKind {
        /// A plan (revision) was submitted for review.
        Submitted = "submitted",
        /// A decision was recorded, with the exact text the agent was answered (a plan in it
        /// that is the decided revision's named by the entry's revision hash: `answerPlan`).
        Decided = "decided",
        Commented = "commented",
        CommentResolved = "comment-resolved",
        CommentReopened = "comment-reopened",
        /// A reviewer changed the plan: a revision of their own.
        Edited = "edited",
        /// A run switched mode (plan -> build on approval).
        ModeSwitched = "mode-switched",
        /// An outside agent's hook gave the decision to its agent: the exact text it received.
        Answered = "answered",
        /// A bearer token for `plandesk serve` was created (its name; never the secret).
        TokenCreated = "token-created",
        /// A bearer token was revoked: requests carrying it are refused from then on.
        TokenRevoked = "token-revoked",
        /// A person marked a step of an approved plan done or not applicable by hand.
        StepMarked = "step-marked",
    }
}

vocabulary! {
    /// What a token of `plandesk serve` lets its holder do.
    TokenKind {
        /// An agent's: submit plans (`Authorization: Bearer pdt_…`).
        Agent = "agent",
        /// A one-time sign-in link of `plandesk pair`: exchanged once, within minutes, for a
        /// session.
        Pairing = "pairing",
        /// A reviewer's browser session (a cookie): read the inbox and decide.
        Session = "session",
    }
}

impl SourceKind {
    /// The agent's name as people know it.
    pub fn agent_name(self) -> &'static str {
        match self {
            SourceKind::Engine => "Plandesk",
            SourceKind::ClaudeCode => "Claude Code",
            SourceKind::Codex => "Codex",
            SourceKind::Gemini => "Gemini CLI",
            SourceKind::Droid => "Factory Droid",
            SourceKind::QwenCode => "Qwen Code",
            SourceKind::KimiCode => "Kimi Code",
            SourceKind::Copilot => "Copilot CLI",
            SourceKind::OpenCode => "OpenCode",
            SourceKind::Kilo => "Kilo CLI",
            SourceKind::Pi => "Pi",
            SourceKind::Mcp => "an MCP client",
        }
    }

    /// Whether a note given with an approval reaches the agent's model: its answer to an
    /// approval carries it (Plandesk's own runs: in the tool's result; Claude Code: in the plan
    /// handed back; an MCP client: in the result; OpenCode, Kilo CLI and Pi: in the message
    /// their plugin or extension hands on). The others' answer to an approval carries no
    /// text: the note stays in Plandesk's record only. Each source's answer is held to this by
    /// a test (`source::tests`).
    pub fn hears_approval_notes(self) -> bool {
        match self {
            SourceKind::Engine
            | SourceKind::ClaudeCode
            | SourceKind::Mcp
            | SourceKind::OpenCode
            | SourceKind::Kilo
            | SourceKind::Pi => true,
            SourceKind::Codex
            | SourceKind::Gemini
            | SourceKind::Droid
            | SourceKind::QwenCode
            | SourceKind::KimiCode
            | SourceKind::Copilot => false,
        }
    }
}

impl TokenKind {
    /// What a person calls one.
    pub fn noun(self) -> &'static str {
        match self {
            TokenKind::Agent => "token",
            TokenKind::Pairing => "sign-in link",
            TokenKind::Session => "session",
        }
    }

    pub(crate) fn noun_capitalised(self) -> &'static str {
        match self {
            TokenKind::Agent => "A token",
            TokenKind::Pairing => "A sign-in link",
            TokenKind::Session => "A session",
        }
    }

    /// The command that lists them.
    pub fn list_command(self) -> &'static str {
        match self {
            TokenKind::Agent => "plandesk token list",
            TokenKind::Pairing | TokenKind::Session => "plandesk session list",
        }
    }
}
