//! Modes (Mastra's AgentController): each mode has its own instructions and tools; approving a
//! plan switches the run to the mode the current one transitions to.

use std::collections::HashSet;
use std::sync::Arc;

use crate::model::ToolSpec;
use crate::tool::{ListFiles, ReadFile, SubmitPlan, Tool, ToolSet, WriteFile, WriteScope};

pub const PLAN: &str = "plan";
pub const BUILD: &str = "build";

/// One mode of an agent. Give `tools` to replace the agent's tools, `additional_tools` to add to
/// them, never both.
#[derive(Debug, Clone, Default)]
pub struct Mode {
    pub id: String,
    pub name: String,
    pub instructions: Option<String>,
    pub tools: Option<ToolSet>,
    pub additional_tools: Option<ToolSet>,
    pub transitions_to: Option<String>,
    pub default: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    #[error("an agent controller needs at least one mode")]
    NoModes,
    #[error("mode id `{0}` is used by more than one mode")]
    DuplicateId(String),
    #[error("mode `{0}` transitions to itself")]
    TransitionToSelf(String),
    #[error("mode `{from}` transitions to unknown mode `{to}`")]
    UnknownTransition { from: String, to: String },
    #[error("mode `{0}` sets both `tools` and `additionalTools`; give one")]
    BothToolLists(String),
    #[error("unknown mode `{0}`")]
    UnknownMode(String),
}

/// A validated set of modes over the agent's base tools.
#[derive(Debug, Clone)]
pub struct AgentController {
    modes: Vec<Mode>,
    /// Each mode's tools (in the order of `modes`), and what the model is told of them: made
    /// once, not at every model call.
    tools: Vec<(ToolSet, Vec<ToolSpec>)>,
}

impl AgentController {
    pub fn new(base_tools: ToolSet, modes: Vec<Mode>) -> Result<Self, ModeError> {
        if modes.is_empty() {
            return Err(ModeError::NoModes);
        }
        let mut seen = HashSet::new();
        for mode in &modes {
            if !seen.insert(mode.id.as_str()) {
                return Err(ModeError::DuplicateId(mode.id.clone()));
            }
        }
        for mode in &modes {
            if mode.tools.is_some() && mode.additional_tools.is_some() {
                return Err(ModeError::BothToolLists(mode.id.clone()));
            }
            if let Some(to) = &mode.transitions_to {
                if to == &mode.id {
                    return Err(ModeError::TransitionToSelf(mode.id.clone()));
                }
                if !seen.contains(to.as_str()) {
                    return Err(ModeError::UnknownTransition {
                        from: mode.id.clone(),
                        to: to.clone(),
                    });
                }
            }
        }
        let tools = modes
            .iter()
            .map(|mode| {
                let set = match (&mode.tools, &mode.additional_tools) {
                    (Some(tools), _) => tools.clone(),
                    (None, Some(extra)) => base_tools.merged(extra),
                    (None, None) => base_tools.clone(),
                };
                let specs = set
                    .iter()
                    .map(|t| ToolSpec {
                        name: t.name().into(),
                        description: t.description(),
                        input_schema: t.input_schema(),
                    })
                    .collect();
                (set, specs)
            })
            .collect();
        Ok(Self { modes, tools })
    }

    pub fn mode(&self, id: &str) -> Result<&Mode, ModeError> {
        Ok(&self.modes[self.index(id)?])
    }

    fn index(&self, id: &str) -> Result<usize, ModeError> {
        self.modes
            .iter()
            .position(|m| m.id == id)
            .ok_or_else(|| ModeError::UnknownMode(id.to_owned()))
    }

    pub fn modes(&self) -> &[Mode] {
        &self.modes
    }

    /// The default mode: the one marked default, else the first.
    pub fn default_mode(&self) -> &Mode {
        self.modes
            .iter()
            .find(|m| m.default)
            .unwrap_or(&self.modes[0])
    }

    /// The tools a model sees in `mode`.
    pub fn tools(&self, mode: &str) -> Result<&ToolSet, ModeError> {
        Ok(&self.tools[self.index(mode)?].0)
    }

    /// What the model is told of `mode`'s tools.
    pub fn specs(&self, mode: &str) -> Result<&[ToolSpec], ModeError> {
        Ok(&self.tools[self.index(mode)?].1)
    }

    /// Where a run goes when a plan made in `mode` is approved: its `transitionsTo`, else the
    /// default mode, else the first.
    pub fn after_approval(&self, mode: &str) -> Result<&str, ModeError> {
        let current = self.mode(mode)?;
        Ok(match &current.transitions_to {
            Some(to) => to,
            None => &self.default_mode().id,
        })
    }
}

/// Plandesk's two modes: `plan` (read the workspace, write only plans, submit them) and `build`
/// (the default; read and write the workspace, writes approved by a person).
pub fn builtin() -> AgentController {
    let read: Vec<Arc<dyn Tool>> = vec![Arc::new(ReadFile), Arc::new(ListFiles)];
    let mut plan_tools = read.clone();
    plan_tools.push(Arc::new(WriteFile {
        scope: WriteScope::PlansOnly,
    }));
    plan_tools.push(Arc::new(SubmitPlan));
    let modes = vec![
        Mode {
            id: PLAN.into(),
            name: "Plan".into(),
            instructions: Some(
                "You are in plan mode. Explore the workspace with read_file and list_files, write an \
                 implementation plan as Markdown into the plans folder with write_file, then submit \
                 it with submit_plan. Do not change any other file. If the user asks for changes, \
                 revise the same plan file and submit it again."
                    .into(),
            ),
            tools: Some(ToolSet::new(plan_tools)),
            transitions_to: Some(BUILD.into()),
            ..Mode::default()
        },
        Mode {
            id: BUILD.into(),
            name: "Build".into(),
            instructions: Some(
                "You are in build mode. Implement the approved plan step by step, then summarise \
                 what you changed."
                    .into(),
            ),
            additional_tools: Some(ToolSet::new(vec![Arc::new(WriteFile {
                scope: WriteScope::Workspace,
            })])),
            default: true,
            ..Mode::default()
        },
    ];
    match AgentController::new(ToolSet::new(read), modes) {
        Ok(controller) => controller,
        // The built-in modes are fixed; a failure here is a programming error caught by the tests.
        Err(err) => unreachable!("built-in modes are invalid: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(id: &str) -> Mode {
        Mode {
            id: id.into(),
            name: id.into(),
            ..Mode::default()
        }
    }

    #[test]
    fn construction_errors_are_specific() {
        let base = ToolSet::default();
        assert_eq!(
            AgentController::new(base.clone(), vec![]).unwrap_err(),
            ModeError::NoModes
        );
        assert_eq!(
            AgentController::new(base.clone(), vec![mode("a"), mode("a")]).unwrap_err(),
            ModeError::DuplicateId("a".into())
        );
        let selfish = Mode {
            transitions_to: Some("a".into()),
            ..mode("a")
        };
        assert_eq!(
            AgentController::new(base.clone(), vec![selfish]).unwrap_err(),
            ModeError::TransitionToSelf("a".into())
        );
        let lost = Mode {
            transitions_to: Some("zzz".into()),
            ..mode("a")
        };
        assert_eq!(
            AgentController::new(base.clone(), vec![lost]).unwrap_err(),
            ModeError::UnknownTransition {
                from: "a".into(),
                to: "zzz".into()
            }
        );
        let both = Mode {
            tools: Some(ToolSet::default()),
            additional_tools: Some(ToolSet::default()),
            ..mode("a")
        };
        assert_eq!(
            AgentController::new(base, vec![both]).unwrap_err(),
            ModeError::BothToolLists("a".into())
        );
    }

    #[test]
    fn approval_goes_to_transition_then_default_then_first() {
        let base = ToolSet::default();
        let c = AgentController::new(
            base.clone(),
            vec![
                mode("x"),
                Mode {
                    default: true,
                    ..mode("y")
                },
                Mode {
                    transitions_to: Some("x".into()),
                    ..mode("z")
                },
            ],
        )
        .unwrap();
        assert_eq!(c.after_approval("z").unwrap(), "x");
        assert_eq!(
            c.after_approval("x").unwrap(),
            "y",
            "no transition: the default mode"
        );
        let c = AgentController::new(base, vec![mode("p"), mode("q")]).unwrap();
        assert_eq!(
            c.after_approval("q").unwrap(),
            "p",
            "no default: the first mode"
        );
    }

    #[test]
    fn builtin_modes_have_the_documented_tools() {
        let c = builtin();
        assert_eq!(
            c.tools(PLAN).unwrap().names(),
            vec!["read_file", "list_files", "write_file", "submit_plan"]
        );
        assert_eq!(
            c.tools(BUILD).unwrap().names(),
            vec!["read_file", "list_files", "write_file"]
        );
        assert_eq!(c.after_approval(PLAN).unwrap(), BUILD);
        assert_eq!(c.default_mode().id, BUILD);
    }
}
