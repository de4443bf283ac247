//! `demo`: the built-in offline model, and the first thing a new user sees. It is deterministic:
//! it looks at the workspace, writes a real plan for the prompt into the plans folder, submits
//! it, revises the same file when given feedback, and after approval sums up what comes next.

use futures::stream;
use serde_json::{json, Value};

use super::{canned_events, EventStream, LanguageModel, ModelRequest};
use crate::chunk::Usage;
use crate::message::Message;
use crate::tool::submit_plan::{split_plan, APPROVED_TEXT, TOOL_ID as SUBMIT_PLAN};

#[derive(Debug, Default, Clone, Copy)]
pub struct DemoModel;

/// What the demo says and which tools it calls in one turn.
struct Turn {
    text: String,
    calls: Vec<(&'static str, Value)>,
}

impl LanguageModel for DemoModel {
    fn spec(&self) -> String {
        "demo".into()
    }

    fn stream<'a>(&'a self, request: ModelRequest<'a>) -> EventStream<'a> {
        let turn = next_turn(&request);
        let call_no = request.turns + 1;
        let input_tokens = request.messages.iter().map(rough_tokens).sum::<u64>();
        let written = turn.text.len()
            + turn
                .calls
                .iter()
                .map(|c| c.1.to_string().len())
                .sum::<usize>();
        let usage = Usage {
            input_tokens,
            output_tokens: written as u64 / 4,
        };
        let calls = turn
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| {
                (
                    format!("demo-{call_no}-{}", i + 1),
                    name.to_owned(),
                    args.to_string(),
                )
            })
            .collect();
        let events = canned_events(&turn.text, calls, Some(usage));
        Box::pin(stream::iter(events))
    }
}

fn rough_tokens(message: &Message) -> u64 {
    let len = match message {
        Message::System { content } | Message::User { content } => content.len(),
        Message::Assistant {
            content,
            tool_calls,
        } => content.len() + tool_calls.len() * 16,
        Message::Tool { result, .. } => result.text().len(),
    };
    len as u64 / 4
}

fn next_turn(request: &ModelRequest<'_>) -> Turn {
    let messages = request.messages;
    let planning = request.tools.iter().any(|t| t.name == SUBMIT_PLAN);
    let prompt = messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("the task");
    let listing = messages.iter().rev().find_map(|m| match m {
        Message::Tool {
            tool_name, result, ..
        } if tool_name == "list_files" => Some(result.value()),
        _ => None,
    });
    let listing = listing.as_ref();
    let plans_dir = request.plans_dir.trim_end_matches('/').to_owned();
    match messages.last() {
        Some(Message::Tool { tool_name, result, .. }) if tool_name == SUBMIT_PLAN => {
            let result = &result.value();
            let content = result.get("content").and_then(Value::as_str).unwrap_or("");
            if content == APPROVED_TEXT {
                return approved_turn(result);
            }
            if result.get("isError").and_then(Value::as_bool) == Some(true) || result.get("error").is_some() {
                let why = result.get("message").and_then(Value::as_str).unwrap_or(content);
                return Turn { text: format!("The plan could not be submitted: {why}"), calls: vec![] };
            }
            match result.pointer("/submittedPlan/feedback").and_then(Value::as_str) {
                Some(feedback) if planning => revise_turn(messages, prompt, listing, &plans_dir, feedback),
                _ => Turn {
                    text: "Understood. Tell me what you would like changed and I will revise the plan.".into(),
                    calls: vec![],
                },
            }
        }
        Some(Message::Tool { tool_name, .. }) if tool_name == "list_files" && planning => {
            let plan = PlanWriter::new(prompt, listing).render(&[]);
            submit_turn(
                format!("I have looked at the workspace. Here is my plan for: {}", one_line(prompt)),
                &plan_path(messages, prompt, &plans_dir),
                plan,
            )
        }
        Some(Message::User { content }) if planning && has_plan(messages) => {
            revise_turn(messages, prompt, listing, &plans_dir, content)
        }
        Some(Message::User { .. }) if planning => Turn {
            text: "I'll start by looking at what is in the workspace.".into(),
            calls: vec![("list_files", json!({}))],
        },
        Some(Message::User { content }) => Turn {
            text: format!(
                "Noted: \"{}\". I am the offline demo model, so I don't change files; connect a real \
                 model to carry out the plan.",
                one_line(content)
            ),
            calls: vec![],
        },
        Some(Message::Tool { tool_name, result, .. }) => Turn {
            text: format!("The {tool_name} call did not work as expected: {}", one_line(result.text())),
            calls: vec![],
        },
        _ => Turn { text: "Done.".into(), calls: vec![] },
    }
}

fn has_plan(messages: &[Message]) -> bool {
    submitted_paths(messages).next().is_some()
}

fn submitted_paths(messages: &[Message]) -> impl Iterator<Item = String> + '_ {
    messages
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .filter(|c| c.tool_name == SUBMIT_PLAN)
        .filter_map(|c| {
            c.args
                .value()
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
}

fn plan_path(messages: &[Message], prompt: &str, plans_dir: &str) -> String {
    submitted_paths(messages)
        .next()
        .unwrap_or_else(|| format!("{plans_dir}/{}.md", slug(prompt)))
}

fn submit_turn(text: String, path: &str, plan: String) -> Turn {
    Turn {
        text,
        calls: vec![
            ("write_file", json!({"path": path, "content": plan})),
            (SUBMIT_PLAN, json!({"path": path})),
        ],
    }
}

/// Every piece of feedback given so far: from rejections and from the user's later messages.
fn feedback_so_far(messages: &[Message], latest: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    let mut seen_plan = false;
    for m in messages {
        match m {
            Message::Tool {
                tool_name, result, ..
            } if tool_name == SUBMIT_PLAN => {
                seen_plan = true;
                if let Some(f) = result
                    .value()
                    .pointer("/submittedPlan/feedback")
                    .and_then(Value::as_str)
                {
                    all.push(f.to_owned());
                }
            }
            Message::User { content } if seen_plan => all.push(content.clone()),
            _ => {}
        }
    }
    if all.last().map(String::as_str) != Some(latest) {
        all.push(latest.to_owned());
    }
    all
}

fn revise_turn(
    messages: &[Message],
    prompt: &str,
    listing: Option<&Value>,
    plans_dir: &str,
    feedback: &str,
) -> Turn {
    let all = feedback_so_far(messages, feedback);
    let plan = PlanWriter::new(prompt, listing).render(&all);
    submit_turn(
        format!(
            "Thanks — I revised the plan to address: {}",
            one_line(feedback)
        ),
        &plan_path(messages, prompt, plans_dir),
        plan,
    )
}

fn approved_turn(result: &Value) -> Turn {
    let plan = result
        .pointer("/submittedPlan/plan")
        .and_then(Value::as_str)
        .unwrap_or("");
    let title = result
        .pointer("/submittedPlan/title")
        .and_then(Value::as_str)
        .unwrap_or("the plan");
    let steps: Vec<&str> = plan
        .lines()
        .filter_map(|l| {
            let (number, rest) = l.split_once(". ")?;
            number.chars().all(|c| c.is_ascii_digit()).then_some(rest)
        })
        .collect();
    let first = steps
        .first()
        .map(|s| s.replace("**", ""))
        .unwrap_or_default();
    Turn {
        text: format!(
            "Plan \"{title}\" approved — switching to build mode. It has {} steps; I would start with: \
             {}. This is the offline demo model, so no files were changed: connect a real model to \
             carry the plan out.",
            steps.len(),
            first.trim_end_matches('.')
        ),
        calls: vec![],
    }
}

fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 120 {
        format!("{}…", flat.chars().take(119).collect::<String>())
    } else {
        flat
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn slug(prompt: &str) -> String {
    let mut slug = String::new();
    for word in words(prompt).iter().take(6) {
        if slug.len() + word.len() > 48 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(word);
    }
    if slug.is_empty() {
        "plan".into()
    } else {
        slug
    }
}

const STOP_WORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "add", "make", "when", "then",
    "have", "should", "would", "could", "please", "some", "our", "your", "all", "use", "using",
    "new",
];

/// The kind of change a prompt asks for, which shapes the steps.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Fix,
    Refactor,
    Docs,
    Feature,
}

struct PlanWriter<'a> {
    prompt: &'a str,
    files: Vec<String>,
    keywords: Vec<String>,
    kind: Kind,
}

impl<'a> PlanWriter<'a> {
    fn new(prompt: &'a str, listing: Option<&Value>) -> Self {
        let files: Vec<String> = listing
            .and_then(|l| l.get("entries"))
            .and_then(Value::as_array)
            .map(|entries| {
                entries
                    .iter()
                    .filter(|e| e.get("kind").and_then(Value::as_str) == Some("file"))
                    .filter_map(|e| e.get("path").and_then(Value::as_str).map(str::to_owned))
                    .filter(|p| !p.starts_with(".plandesk/"))
                    .collect()
            })
            .unwrap_or_default();
        let all = words(prompt);
        let keywords: Vec<String> = all
            .iter()
            .filter(|w| w.len() >= 4 && !STOP_WORDS.contains(&w.as_str()))
            .cloned()
            .collect();
        let has = |list: &[&str]| all.iter().any(|w| list.contains(&w.as_str()));
        let kind = if has(&["fix", "bug", "crash", "broken", "error", "fails", "failing"]) {
            Kind::Fix
        } else if has(&[
            "refactor", "clean", "cleanup", "simplify", "rename", "split", "extract",
        ]) {
            Kind::Refactor
        } else if has(&["document", "docs", "readme", "documentation"]) {
            Kind::Docs
        } else {
            Kind::Feature
        };
        Self {
            prompt,
            files,
            keywords,
            kind,
        }
    }

    fn title(&self) -> String {
        let flat = one_line(self.prompt);
        let mut title: String = flat.trim_end_matches(['.', '!', '?']).to_owned();
        if title.chars().count() > 70 {
            let cut: String = title.chars().take(70).collect();
            title = match cut.rfind(' ') {
                Some(at) => format!("{}…", &cut[..at]),
                None => format!("{cut}…"),
            };
        }
        let mut chars = title.chars();
        match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => "Plan".into(),
        }
    }

    fn relevant_files(&self) -> Vec<&str> {
        let matching: Vec<&str> = self
            .files
            .iter()
            .filter(|f| {
                let lower = f.to_lowercase();
                self.keywords.iter().any(|k| lower.contains(k.as_str()))
            })
            .map(String::as_str)
            .take(8)
            .collect();
        if !matching.is_empty() {
            return matching;
        }
        self.files.iter().map(String::as_str).take(5).collect()
    }

    fn context(&self) -> String {
        if self.files.is_empty() {
            return "The workspace is empty, so this plan starts from scratch: every file it \
                    mentions is new."
                .into();
        }
        let folders: std::collections::BTreeSet<&str> = self
            .files
            .iter()
            .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d))
            .collect();
        let mut text = format!(
            "The workspace has {} file{} in {} folder{}.",
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
            folders.len() + 1,
            if folders.is_empty() { "" } else { "s" }
        );
        let relevant = self.relevant_files();
        let matched = relevant.iter().any(|f| {
            let lower = f.to_lowercase();
            self.keywords.iter().any(|k| lower.contains(k.as_str()))
        });
        text.push_str(if matched {
            " These look related to the request and will be read first:\n"
        } else {
            " None of the file names mention the request directly; the starting points are:\n"
        });
        for file in relevant {
            text.push_str(&format!("\n- `{file}`"));
        }
        text
    }

    fn steps(&self, feedback: &[String]) -> Vec<String> {
        let subject = one_line(self.prompt)
            .trim_end_matches(['.', '!', '?'])
            .to_lowercase();
        let files = self.relevant_files();
        let where_ = files
            .first()
            .map(|f| format!(" starting with `{f}`"))
            .unwrap_or_default();
        let mut steps = match self.kind {
            Kind::Fix => vec![
                format!("**Reproduce** the problem ({subject}) with a failing test, so the fix can be shown to work."),
                format!("**Find the cause**: read the code on the failing path{where_} and note why it misbehaves."),
                "**Fix** the cause, not the symptom, with the smallest change that makes the test pass.".to_owned(),
                "**Check neighbours**: look for the same mistake in similar code and fix it there too.".to_owned(),
            ],
            Kind::Refactor => vec![
                format!("**Pin the behaviour**: make sure tests cover the code to be changed{where_}."),
                format!("**Restructure** in small steps ({subject}), running the tests after each."),
                "**Remove** what the change made dead: old helpers, unused imports, stale comments.".to_owned(),
            ],
            Kind::Docs => vec![
                format!("**Read** what exists{where_} and list what a newcomer would miss."),
                format!("**Write** the documentation ({subject}) with a runnable example for each task."),
                "**Check** every command and snippet by running it.".to_owned(),
            ],
            Kind::Feature => vec![
                format!("**Survey** the code this touches{where_}, and note the conventions to follow."),
                format!("**Design** the change ({subject}): the data it needs, where it lives, how it is reached."),
                "**Implement** it in small commits, keeping each one building and passing its tests.".to_owned(),
                "**Handle the edges**: empty input, errors, and what the user sees when something fails.".to_owned(),
            ],
        };
        for item in feedback {
            steps.push(format!("**Address review feedback**: {}", one_line(item)));
        }
        steps.push(
            "**Test** it: unit tests for the logic, one end-to-end check of the whole flow."
                .to_owned(),
        );
        steps.push(
            "**Document** the change where users and maintainers will look for it.".to_owned(),
        );
        steps
    }

    fn render(&self, feedback: &[String]) -> String {
        let mut plan = format!(
            "# {}\n\n## Goal\n\n> {}\n\n## Context\n\n{}\n\n## Steps\n\n",
            self.title(),
            one_line(self.prompt),
            self.context()
        );
        for (i, step) in self.steps(feedback).iter().enumerate() {
            plan.push_str(&format!("{}. {step}\n", i + 1));
        }
        plan.push_str("\n## Risks\n\n");
        let risks = match self.kind {
            Kind::Fix => "- The failing path may have more than one cause; the test must cover each.\n- A fix in shared code can change behaviour elsewhere.",
            Kind::Refactor => "- Behaviour that no test covers may change silently.\n- Large moves make review hard: keep commits small.",
            Kind::Docs => "- Examples go stale; they should be checked in CI.",
            Kind::Feature => "- The change may touch more modules than the survey shows.\n- New settings need sensible defaults for existing users.",
        };
        plan.push_str(risks);
        plan.push_str("\n\n## Tests\n\n- [ ] A test that fails before the change and passes after it\n- [ ] The existing test suite still passes\n- [ ] A manual check of the user-visible behaviour\n");
        if !feedback.is_empty() {
            plan.push_str("\n## Revision notes\n\n");
            for (i, item) in feedback.iter().enumerate() {
                plan.push_str(&format!("- Revision {}: {}\n", i + 2, one_line(item)));
            }
        }
        // The title line is what submit_plan shows; make sure the split agrees.
        debug_assert!(!split_plan(&plan).title.is_empty());
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_and_safe() {
        assert_eq!(
            slug("Add a dark-mode toggle to Settings!"),
            "add-a-dark-mode-toggle-to"
        );
        assert_eq!(slug("???"), "plan");
    }

    #[test]
    fn plan_reads_like_a_plan_and_feedback_changes_it() {
        let listing = json!({"entries": [
            {"path": "src/settings.rs", "kind": "file"},
            {"path": "src/main.rs", "kind": "file"},
            {"path": "src", "kind": "dir"}
        ]});
        let writer = PlanWriter::new(
            "Add a dark mode toggle to the settings page",
            Some(&listing),
        );
        let first = writer.render(&[]);
        assert!(
            first.starts_with("# Add a dark mode toggle to the settings page\n"),
            "{first}"
        );
        assert!(
            first.contains("`src/settings.rs`"),
            "the relevant file is named: {first}"
        );
        for section in [
            "## Goal",
            "## Context",
            "## Steps",
            "## Risks",
            "## Tests",
            "1. **Survey**",
        ] {
            assert!(first.contains(section), "missing {section}: {first}");
        }
        let second = writer.render(&["Keep the toggle in the header instead".to_owned()]);
        assert!(
            second.contains("**Address review feedback**: Keep the toggle in the header instead")
        );
        assert!(second.contains("## Revision notes"));
        assert_ne!(first, second);
    }
}
