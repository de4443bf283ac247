//! A plan's steps, as the work after its approval is held against them. The steps are the
//! plan's list items, and the sections under a heading (below the title) that have no list
//! items of their own. A step names files (paths in code spans or plain text) and commands
//! (code spans, or lines of a shell code block, that begin with a program); whether a named
//! path is a file is for whoever knows the workspace to say (see `review::progress`). Items
//! under a heading that says they are no work to do ("Context", "Risks", "Open questions": see
//! [`NOT_WORK`]) are steps too, numbered in turn (a step's number is what a mark names), but
//! marked [`Step::context`]: they are not counted as work to do.

use comrak::arena_tree::Node;
use comrak::nodes::{Ast, NodeValue};
use serde::Serialize;

/// The longest text a step keeps (its first line, for listings).
const MAX_TEXT: usize = 200;
/// The longest path or command taken from a plan.
const MAX_NAME: usize = 300;
/// At most this many steps are read from one plan.
const MAX_STEPS: usize = 500;

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Its first line in the plan (from 1).
    pub line: usize,
    /// What it says, on one line.
    pub text: String,
    /// Paths it names, as written (without a leading `./`).
    pub paths: Vec<String>,
    /// Commands it names.
    pub commands: Vec<String>,
    /// It is under a heading that says it is no work to do ("Context", "Risks"…), in a plan
    /// that has other steps.
    pub context: bool,
}

/// Headings whose sections say what the work is about, not what to do: one of these, or
/// several joined by "and", "&" or "," ("Risks and mitigations"), case and numbering aside.
const NOT_WORK: &[&str] = &[
    "alternatives",
    "alternatives considered",
    "assumptions",
    "background",
    "context",
    "goal",
    "goals",
    "mitigations",
    "motivation",
    "non-goals",
    "objective",
    "objectives",
    "open questions",
    "out of scope",
    "problem",
    "problem statement",
    "questions",
    "references",
    "risk",
    "risks",
    "trade-offs",
    "tradeoffs",
    "why",
];

/// Whether a heading's text names a section of no work to do ([`NOT_WORK`]).
fn is_not_work(heading: &str) -> bool {
    let text = heading
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
        .trim()
        .trim_end_matches(':')
        .to_lowercase();
    !text.is_empty()
        && text
            .split([',', '&'])
            .flat_map(|part| part.split(" and "))
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .all(|part| NOT_WORK.contains(&part))
}

/// The programs a code span must begin with to be taken for a command.
const PROGRAMS: &[&str] = &[
    "bash",
    "black",
    "bun",
    "bundle",
    "cargo",
    "cmake",
    "composer",
    "cp",
    "curl",
    "deno",
    "docker",
    "dotnet",
    "eslint",
    "git",
    "go",
    "gradle",
    "helm",
    "jest",
    "just",
    "kubectl",
    "make",
    "mkdir",
    "mv",
    "mvn",
    "mypy",
    "node",
    "npm",
    "npx",
    "php",
    "pip",
    "pip3",
    "pnpm",
    "poetry",
    "prettier",
    "psql",
    "pytest",
    "python",
    "python3",
    "rake",
    "rm",
    "rspec",
    "ruby",
    "ruff",
    "rustc",
    "rustup",
    "sed",
    "sh",
    "sqlite3",
    "swift",
    "terraform",
    "tox",
    "tsc",
    "uv",
    "vitest",
    "yarn",
];

/// File name endings taken for a file's without a `/` in the path.
const EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "cpp", "cs", "css", "env", "go", "h", "hpp", "html", "ini", "java", "js",
    "json", "jsx", "kt", "lock", "md", "mjs", "php", "py", "rb", "rs", "scss", "sh", "sql",
    "svelte", "swift", "toml", "ts", "tsx", "txt", "vue", "xml", "yaml", "yml",
];

/// The plan's steps, in order.
pub fn steps(markdown: &str) -> Vec<Step> {
    let arena = comrak::Arena::new();
    let mut options = comrak::Options::default();
    options.extension.tasklist = true;
    options.extension.table = true;
    options.extension.strikethrough = true;
    let root = comrak::parse_document(&arena, markdown, &options);
    let mut steps = Vec::new();
    // The headings the block at hand is under (level, no work to do).
    let mut sections: Vec<(u8, bool)> = Vec::new();
    for block in root.children() {
        if let NodeValue::Heading(heading) = &block.data.borrow().value {
            sections.retain(|(level, _)| *level < heading.level);
            sections.push((heading.level, is_not_work(&text_of(block))));
        }
        let context = sections.iter().any(|(_, not_work)| *not_work);
        steps_in(block, context, &mut steps);
    }
    // A plan all of whose steps are under such headings has them as its work all the same.
    if steps.iter().all(|s| s.context) {
        steps.iter_mut().for_each(|s| s.context = false);
    }
    steps
}

/// The words of a block, its code spans' included.
fn text_of<'a>(node: Block<'a>) -> String {
    node.descendants()
        .filter_map(|n| match &n.data.borrow().value {
            NodeValue::Text(text) => Some(text.to_string()),
            NodeValue::Code(code) => Some(code.literal.clone()),
            _ => None,
        })
        .collect()
}

/// The steps in a top-level block, added to `steps` (`context`: under a heading of no work).
fn steps_in<'a>(block: Block<'a>, context: bool, steps: &mut Vec<Step>) {
    for node in block.descendants() {
        if steps.len() >= MAX_STEPS {
            break;
        }
        let value = node.data.borrow().value.clone();
        match value {
            NodeValue::Item(_) | NodeValue::TaskItem(_) => {
                let parts: Vec<_> = node
                    .children()
                    .filter(|c| !matches!(c.data.borrow().value, NodeValue::List(_)))
                    .collect();
                steps.push(Step {
                    context,
                    ..step(node, &parts)
                });
            }
            NodeValue::Heading(heading) if heading.level >= 2 => {
                let section: Vec<_> =
                    std::iter::successors(node.next_sibling(), |n| n.next_sibling())
                        .take_while(|n| match &n.data.borrow().value {
                            NodeValue::Heading(next) => next.level > heading.level,
                            _ => true,
                        })
                        .collect();
                let has_items = section.iter().any(|n| {
                    n.descendants().any(|d| {
                        matches!(
                            d.data.borrow().value,
                            NodeValue::Item(_) | NodeValue::TaskItem(_)
                        )
                    })
                });
                // Sub-headings are steps of their own; a section that names no file and no
                // command (context, risks) is prose, not a step.
                let has_subsections = section
                    .iter()
                    .any(|n| matches!(n.data.borrow().value, NodeValue::Heading(_)));
                if !has_items && !has_subsections {
                    let mut parts = vec![node];
                    parts.extend(section.iter().copied());
                    let found = Step {
                        context,
                        ..step(node, &parts)
                    };
                    if !found.paths.is_empty() || !found.commands.is_empty() {
                        steps.push(found);
                    }
                }
            }
            _ => {}
        }
    }
}

type Block<'a> = &'a Node<'a, std::cell::RefCell<Ast>>;

/// The step `node` begins, read from `parts` (its blocks, nested lists left out).
fn step<'a>(node: Block<'a>, parts: &[Block<'a>]) -> Step {
    let mut text = String::new();
    let mut paths = Vec::new();
    let mut commands = Vec::new();
    for part in parts {
        for inner in part.descendants() {
            match &inner.data.borrow().value {
                NodeValue::Text(words) => {
                    text.push_str(words);
                    paths.extend(words.split_whitespace().filter_map(plain_path));
                }
                NodeValue::Code(code) => {
                    text.push('`');
                    text.push_str(&code.literal);
                    text.push('`');
                    let literal = code.literal.trim();
                    if let Some(command) = command(literal) {
                        commands.push(command);
                    } else if let Some(path) = path(literal) {
                        paths.push(path);
                    }
                }
                NodeValue::CodeBlock(block) if is_shell(&block.info) => {
                    commands.extend(
                        block
                            .literal
                            .lines()
                            .filter_map(|line| command(line.trim().trim_start_matches("$ "))),
                    );
                }
                NodeValue::SoftBreak | NodeValue::LineBreak => text.push(' '),
                NodeValue::Paragraph if !text.is_empty() => text.push(' '),
                _ => {}
            }
        }
    }
    dedup(&mut paths);
    dedup(&mut commands);
    Step {
        context: false,
        line: node.data.borrow().sourcepos.start.line,
        text: crate::text::short(
            text.split_whitespace().collect::<Vec<_>>().join(" ").trim(),
            MAX_TEXT,
        ),
        paths,
        commands,
    }
}

fn dedup(names: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    names.retain(|name| seen.insert(name.clone()));
}

fn is_shell(info: &str) -> bool {
    let lang = info.split_whitespace().next().unwrap_or("");
    matches!(lang, "" | "sh" | "bash" | "shell" | "console" | "zsh")
}

/// `text` as a command, if it begins with a known program (or `./`); whitespace made single.
pub fn command(text: &str) -> Option<String> {
    let text = text.trim();
    let first = text.split_whitespace().next()?;
    let known = PROGRAMS.contains(&first) || (first.starts_with("./") && first.len() > 2);
    (known && text.len() <= MAX_NAME && !text.chars().any(char::is_control))
        .then(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `text` (a code span) as a path, if it looks like one: one word, not a URL, with a `/` or a
/// known file name ending.
fn path(text: &str) -> Option<String> {
    let text = without_position(text.trim_start_matches("./"));
    let fits = !text.is_empty()
        && text.len() <= MAX_NAME
        && !text.contains("://")
        && !text.starts_with('-')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    if !fits || text.split('/').any(|part| part == "..") {
        return None;
    }
    let name = text.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let known_ending = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext));
    (text.contains('/') && text.len() > 1 || known_ending).then(|| text.to_owned())
}

/// `src/a.rs:42` or `src/a.rs:42:7` without its line and column.
fn without_position(text: &str) -> &str {
    let mut text = text;
    for _ in 0..2 {
        match text.rsplit_once(':') {
            Some((head, tail))
                if !head.is_empty()
                    && !tail.is_empty()
                    && tail.bytes().all(|b| b.is_ascii_digit()) =>
            {
                text = head;
            }
            _ => break,
        }
    }
    text
}

/// A word of plain text as a path: as [`path`], without the punctuation around it.
fn plain_path(word: &str) -> Option<String> {
    let word = word
        .trim_start_matches(['(', '[', '"', '\'', '*', '_'])
        .trim_end_matches([')', ']', '"', '\'', ',', ';', ':', '.', '!', '?', '*', '_']);
    path(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_items_and_bare_sections_are_steps_with_their_files_and_commands() {
        let plan = "# Add a cache\n\nIntro naming `src/ignored.rs`.\n\n## Steps\n\n\
                    1. Add `src/cache.rs` with an LRU.\n   - Wire it into src/lib.rs (the `Store`).\n\
                    2. Run `cargo test -p store` and `./x check`.\n\n\
                    ## Docs\n\nUpdate README.md, e.g. the layout.\n\n```sh\n$ npm run build\n```\n";
        let steps = steps(plan);
        let summary: Vec<(&str, Vec<&str>, Vec<&str>)> = steps
            .iter()
            .map(|s| {
                (
                    s.text.as_str(),
                    s.paths.iter().map(String::as_str).collect(),
                    s.commands.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "Add `src/cache.rs` with an LRU.",
                    vec!["src/cache.rs"],
                    vec![]
                ),
                (
                    "Wire it into src/lib.rs (the `Store`).",
                    vec!["src/lib.rs"],
                    vec![]
                ),
                (
                    "Run `cargo test -p store` and `./x check`.",
                    vec![],
                    vec!["cargo test -p store", "./x check"]
                ),
                (
                    "Docs Update README.md, e.g. the layout.",
                    vec!["README.md"],
                    vec!["npm run build"]
                ),
            ]
        );
        assert_eq!(steps[0].line, 7);
    }

    #[test]
    fn what_is_not_a_path_or_a_command_is_left_out() {
        for word in [
            "https://example.com/a.rs",
            "e.g.",
            "v1.2",
            "--flag",
            "../etc/passwd",
            "a b.rs",
            "/",
        ] {
            assert_eq!(path(word), None, "{word}");
        }
        assert_eq!(path("./src/a.rs").as_deref(), Some("src/a.rs"));
        assert_eq!(path("src/a.rs:42:7").as_deref(), Some("src/a.rs"));
        let plan = "# T\n\n## Context\n\nWhy we do it.\n\n## Steps\n\n### One\n\nEdit `a.rs`.\n\n### Two\n\nRun `cargo test`.\n";
        let texts: Vec<String> = steps(plan).into_iter().map(|s| s.text).collect();
        assert_eq!(
            texts,
            ["One Edit `a.rs`.", "Two Run `cargo test`."],
            "no prose, no parent section"
        );
        assert_eq!(command("Store"), None);
        assert_eq!(command("cargo  test").as_deref(), Some("cargo test"));
        assert!(steps("# Only a title\n\nNo steps here.").is_empty());
    }

    /// Items under "Context", "Risks and mitigations" and the like (their sub-headings too) are
    /// kept in turn, so that a step's number stays what a mark names, but are not work to do;
    /// a heading merely starting with such a word ("Summary of changes") is.
    #[test]
    fn items_under_headings_of_no_work_are_context() {
        let plan = "# Add a cache\n\n## Context\n\n- `README.md`\n- `src/main.rs`\n\n\
                    ## 1. Steps\n\n1. Add `src/cache.rs`.\n2. Run `cargo test`.\n\n\
                    ## Risks and mitigations:\n\n### Data\n\n- Old rows stay.\n\n\
                    ## Changes to make\n\n- Update `README.md`.\n\n\
                    ## Open Questions\n\n- TTL?\n";
        let listed = steps(plan);
        let found: Vec<(&str, bool)> = listed
            .iter()
            .map(|s| (s.text.as_str(), s.context))
            .collect();
        assert_eq!(
            found,
            [
                ("`README.md`", true),
                ("`src/main.rs`", true),
                ("Add `src/cache.rs`.", false),
                ("Run `cargo test`.", false),
                ("Old rows stay.", true),
                ("Update `README.md`.", false),
                ("TTL?", true),
            ]
        );
        // All of a plan's steps under such headings are its work all the same.
        assert!(steps("# T\n\n## Goals\n\n- Fast\n- Small\n")
            .iter()
            .all(|s| !s.context));
        assert!(is_not_work("Context & background"));
        assert!(is_not_work("Context, goals, and non-goals"));
        assert!(!is_not_work("Overview"), "an overview may list the changes");
        assert!(!is_not_work("Summary of changes"));
        assert!(!is_not_work(""));
    }
}
