//! Output for people: plans printed in full, listings as aligned tables (`table`), and each
//! time the command that comes next (a run's chunks as a transcript: `stream`). Everything a model, a plan or an
//! outside agent wrote is untrusted: it passes through `safe` (control characters, escape
//! sequences and invisible characters shown as visible escapes) before it reaches the terminal,
//! and ids pasted into suggested commands are shell-quoted.

use std::io::Write;

/// `println!` that ignores a closed stdout (`plandesk history | head`), instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

// After `say!`, which it uses.
mod stream;
pub mod table;

use std::borrow::Cow;

use plandesk::clock::{Clock, SystemClock};
use plandesk::engine::RunView;
use plandesk::plan::{RowKind, SideBySide};
use plandesk::review::{
    AuditCheck, AuditRow, Comment, CommentState, ReviewItem, Revision, RevisionView, SourceKind,
};
use plandesk::text::{self, shell_quote, terminal_safe};

use stream::args_summary;
pub use stream::StreamPrinter;
use table::Table;

/// `value` as one line of JSON on stdout, every character a terminal would act on or hide
/// escaped (`\u202e`, not the character): it may hold what an agent wrote.
pub fn json_line<T: ?Sized + serde::Serialize>(value: &T) -> serde_json::Result<()> {
    say!("{}", text::visible_json(value)?);
    Ok(())
}

/// A listing: one JSON document for scripts, else `human`'s table for people.
pub fn listing<T: serde::Serialize>(
    json: bool,
    items: &[T],
    human: fn(&[T]),
) -> anyhow::Result<std::process::ExitCode> {
    if json {
        json_line(items)?;
    } else {
        human(items);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// A table, each line after `indent`.
fn print_table(table: &Table, indent: &str) {
    for line in table.lines(indent) {
        say!("{line}");
    }
}

/// Untrusted text, made safe for a terminal.
fn safe(text: &str) -> Cow<'_, str> {
    terminal_safe(text)
}

/// A one-line summary of untrusted text, safe for a terminal.
fn short(text: &str, max: usize) -> String {
    terminal_safe(&text::short(text, max)).into_owned()
}

/// An id or path as an argument of a suggested command.
pub fn arg(text: &str) -> Cow<'_, str> {
    shell_quote(text)
}

fn age(since: i64) -> String {
    let secs = (SystemClock.now() - since).max(0) / 1000;
    match secs {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

pub fn pending(items: &[ReviewItem]) {
    if items.is_empty() {
        say!("Nothing is waiting for you.");
        return;
    }
    let mut table = Table::new(&["AGE", "RUN", "FROM", "KIND", "REV", "WHAT"]);
    for item in items {
        let from = match item.source.kind {
            SourceKind::Engine => "plandesk",
            other => other.as_str(),
        };
        let (rev, what) = match &item.revision {
            Some(r) => (
                r.revision_no.to_string(),
                if r.title.is_empty() {
                    r.path.clone()
                } else {
                    r.title.clone()
                },
            ),
            None => (
                "-".into(),
                format!("{} {}", item.tool_name, args_summary(&item.args)),
            ),
        };
        table.row([
            age(item.since),
            safe(&item.run_id).into_owned(),
            from.to_owned(),
            item.kind.as_str().to_owned(),
            rev,
            short(&what, 60),
        ]);
    }
    print_table(&table, "");
    say!("\nApprove with `plandesk approve RUN`, reject with `plandesk reject RUN --feedback \"…\"`.");
}

pub fn runs(items: &[RunView]) {
    if items.is_empty() {
        say!("No runs yet. Start one with: plandesk run \"what the agent should do\"");
        return;
    }
    let mut table = Table::new(&["RUN", "STATUS", "MODE", "MODEL", "UPDATED", "PROMPT"]);
    for run in items {
        let model = run.model.split('/').next_back().unwrap_or(&run.model);
        table.row([
            safe(&run.id).into_owned(),
            if run.interrupted {
                "interrupted".to_owned()
            } else {
                run.status.to_string()
            },
            safe(&run.mode).into_owned(),
            short(model, 10),
            age(run.updated_at),
            short(&run.prompt, 50),
        ]);
    }
    print_table(&table, "");
}

pub fn history(revisions: &[Revision]) {
    if revisions.is_empty() {
        say!("No plans have been submitted yet.");
        return;
    }
    // A table per run, under its id.
    for run in revisions.chunk_by(|a, b| a.run_id == b.run_id) {
        say!("run {}", safe(&run[0].run_id));
        let mut table = Table::new(&[]);
        for rev in run {
            let decision = match &rev.decision {
                Some(d) => match d.feedback.as_deref() {
                    Some(f) if !f.is_empty() => format!("{}: \"{}\"", d.action, short(f, 60)),
                    _ => d.action.to_string(),
                },
                None => rev.status.as_str().into(),
            };
            let title = if rev.title.is_empty() {
                "(untitled)"
            } else {
                &rev.title
            };
            table.row([
                format!("#{}", rev.id),
                format!("rev {}", rev.revision_no),
                rev.sha256[..12].to_owned(),
                safe(&rev.path).into_owned(),
                short(title, 50),
                format!("— {decision}"),
            ]);
        }
        print_table(&table, "  ");
    }
    say!("\nShow one with `plandesk show ID`; compare two with `plandesk diff ID ID`.");
}

/// A revision as the agent reads it (the whole source, made safe for the terminal), with a
/// note on anything a rendered view would not show.
pub fn revision(view: &RevisionView) {
    let rev = &view.revision;
    let title = if rev.title.is_empty() {
        "(untitled plan)"
    } else {
        rev.title.as_str()
    };
    say!("{}", safe(title));
    say!(
        "{} · revision {} · run {} · sha256 {}",
        safe(&rev.path),
        rev.revision_no,
        safe(&rev.run_id),
        rev.sha256
    );
    match &rev.decision {
        Some(d) => say!(
            "decision: {}{}",
            d.action,
            d.feedback
                .as_deref()
                .map(|f| format!(" — \"{}\"", safe(f)))
                .unwrap_or_default()
        ),
        None => say!("decision: {}", rev.status.as_str()),
    }
    let hidden = view.hidden.len() + view.hidden_omitted;
    if hidden > 0 {
        say!("note: {hidden} thing(s) in this plan would not show in a rendered view:");
        for finding in &view.hidden {
            say!(
                "  line {}: {} — {}",
                finding.line,
                safe(&finding.detail),
                short(&finding.excerpt, 80)
            );
        }
        if view.hidden_omitted > 0 {
            say!("  … and {} more", view.hidden_omitted);
        }
    }
    say!();
    say!("{}", safe(&rev.body));
}

pub fn diff(a: &Revision, b: &Revision, diff: &SideBySide) {
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(160)
        .max(60);
    let half = (width - 15) / 2;
    say!(
        "#{} rev {} ({})  →  #{} rev {} ({})",
        a.id,
        a.revision_no,
        &a.sha256[..8],
        b.id,
        b.revision_no,
        &b.sha256[..8]
    );
    if let Some(feedback) = a.decision.as_ref().and_then(|d| d.feedback.as_deref()) {
        say!(
            "feedback on #{} that led to #{}: \"{}\"",
            a.id,
            b.id,
            short(feedback, width - 30)
        );
    }
    say!(
        "{} added, {} removed, {} changed; changed words are [-removed-] and {{+added+}}\n",
        diff.added,
        diff.removed,
        diff.changed
    );
    if diff.coarse {
        say!("(a large change: compared line by line, without marking words)\n");
    }
    let cell = |line: &Option<plandesk::plan::DiffLine>, removed: bool| -> (String, String) {
        match line {
            None => (String::new(), String::new()),
            Some(l) => {
                let text: String = l
                    .segments
                    .iter()
                    .map(|s| match (s.changed, removed) {
                        (false, _) => safe(&s.text).into_owned(),
                        (true, true) => format!("[-{}-]", safe(&s.text)),
                        (true, false) => format!("{{+{}+}}", safe(&s.text)),
                    })
                    .collect();
                (l.number.to_string(), text)
            }
        }
    };
    for row in &diff.rows {
        let mark = match row.kind {
            RowKind::Equal => ' ',
            RowKind::Changed => '~',
            RowKind::Removed => '-',
            RowKind::Added => '+',
        };
        let (ln, lt) = cell(&row.left, true);
        let (rn, rt) = cell(&row.right, false);
        let lt: String = lt.chars().take(half).collect();
        let rt: String = rt.chars().take(half).collect();
        say!("{mark} {ln:>4} {lt:<half$} │ {rn:>4} {rt}");
    }
}

/// The audit trail: one line per entry, or JSON lines (one entry a line; `--export` writes an
/// export, which `--verify --file` checks).
pub fn audit(entries: &[AuditRow], json: bool) {
    if json {
        for entry in entries {
            let _ = json_line(entry);
        }
        return;
    }
    if entries.is_empty() {
        say!("The audit trail is empty.");
        return;
    }
    // A comment resolved or reopened is named by what its `commented` entry recorded.
    let comments: std::collections::HashMap<i64, String> = entries
        .iter()
        .filter(|e| e.kind.as_str() == "commented")
        .filter_map(|e| Some((e.data["commentId"].as_i64()?, comment_words(&e.data))))
        .collect();
    let mut table = Table::new(&[]);
    for e in entries {
        let sha = e
            .revision_sha
            .as_deref()
            .map_or("-", |s| &s[..s.len().min(12)]);
        let what = match e.kind.as_str() {
            "decided" => format!(
                "{}{}",
                e.data["action"].as_str().unwrap_or("?"),
                e.data["feedback"]
                    .as_str()
                    .map(|f| format!(": \"{}\"", short(f, 60)))
                    .unwrap_or_default()
            ),
            "submitted" => short(e.data["title"].as_str().unwrap_or(""), 60),
            "commented" => comment_words(&e.data),
            // By its id too: `plandesk resolve` takes it.
            "comment-resolved" | "comment-reopened" => {
                let id = e.data["commentId"].as_i64().unwrap_or_default();
                match comments.get(&id) {
                    Some(words) => format!("comment #{id} on {words}"),
                    None => format!("comment #{id}"),
                }
            }
            "mode-switched" => format!(
                "{} -> {}",
                safe(e.data["from"].as_str().unwrap_or("?")),
                safe(e.data["to"].as_str().unwrap_or("?"))
            ),
            _ => short(&e.data.to_string(), 60),
        };
        table.row([
            format!("#{}", e.id),
            age(e.at),
            short(&e.actor, 16),
            safe(&e.process).into_owned(),
            safe(&e.kind).into_owned(),
            sha.to_owned(),
            what,
        ]);
    }
    print_table(&table, "");
}

/// A comment's lines and words, as its `commented` entry's data records them.
fn comment_words(data: &serde_json::Value) -> String {
    let line = |i: usize| data["lines"][i].as_i64().unwrap_or_default();
    let lines = match (line(0), line(1)) {
        (start, end) if start == end => format!("line {start}"),
        (start, end) => format!("lines {start}-{end}"),
    };
    format!(
        "{lines}: \"{}\"",
        short(data["text"].as_str().unwrap_or(""), 50)
    )
}

/// The result of `audit --verify` (of the store, or of an export): what was checked and found,
/// and what could not be told; exit 1 when an entry was found changed or removed.
pub fn audit_check(check: &AuditCheck, json: bool) -> std::process::ExitCode {
    if json {
        let _ = json_line(check);
    } else {
        // It may quote what a file held (an export's unreadable line).
        say!("{}", safe(&check.summary));
    }
    if !check.holds {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// A line of our own (a hint, what happened), after what was asked for. It may quote what an
/// agent sent (a plan's path), so it is made safe too.
pub fn next(text: &str) {
    say!("{}", safe(text));
}

/// Comments, each with its lines quoted and where it stands.
pub fn comments(comments: &[Comment]) {
    for c in comments {
        let lines = |l: plandesk::review::Lines| l.label().to_lowercase();
        let state = match c.state {
            CommentState::Open => "open",
            CommentState::Resolved => "resolved",
            CommentState::Addressed => "addressed",
            CommentState::NotAddressed => "not addressed",
        };
        let place = match (c.state, c.now) {
            (CommentState::Open, _) => lines(c.lines),
            (_, Some(now)) if now != c.lines => {
                format!(
                    "{} of revision {}, now {}",
                    lines(c.lines),
                    c.revision_no,
                    lines(now)
                )
            }
            (_, Some(_)) => format!("{} of revision {}", lines(c.lines), c.revision_no),
            (_, None) => format!(
                "{} of revision {}, since removed",
                lines(c.lines),
                c.revision_no
            ),
        };
        say!(
            "#{:<4} {:<14} {} · {} · {}",
            c.id,
            state,
            place,
            safe(&c.author),
            age(c.created_at)
        );
        for (number, line) in (c.lines.start..).zip(c.quote.lines()) {
            say!("      > {number} | {}", safe(line));
        }
        for line in c.text.lines() {
            say!("      {}", safe(line));
        }
    }
}

/// `plandesk token list`: names and dates, never secrets.
/// The webhooks, with how each one's last delivery went.
pub fn webhooks(hooks: &[plandesk::webhook::Listed]) {
    if hooks.is_empty() {
        say!("No webhooks. Add one with: plandesk webhook add URL [--format json|ntfy|slack]");
        return;
    }
    let mut table = Table::new(&["URL", "FORMAT", "PLAN", "LAST"]);
    for hook in hooks {
        let last = match &hook.last {
            None => "not sent yet".to_owned(),
            Some(d) if d.ok => format!("delivered {}", age(d.at)),
            Some(d) => format!(
                "failed {}: {}",
                age(d.at),
                short(d.error.as_deref().unwrap_or(""), 60)
            ),
        };
        let format = serde_json::to_value(hook.webhook.format)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        table.row([
            short(&hook.webhook.url, 60),
            format,
            if hook.webhook.with_plan { "yes" } else { "no" }.to_owned(),
            last,
        ]);
    }
    print_table(&table, "");
}

/// Browsers signed in to the web review, and sign-in links not used yet.
pub fn sessions(sessions: &[plandesk::token::TokenRow], now: plandesk::clock::Millis) {
    if sessions.is_empty() {
        say!("No browser is signed in. Sign one in with: plandesk pair");
        return;
    }
    let mut table = Table::new(&["NAME", "KIND", "STATUS", "CREATED"]);
    for session in sessions {
        let status = match (session.revoked_at, session.expires_at) {
            (Some(at), _) => format!("ended {}", age(at)),
            (None, Some(until)) if until <= now => "expired".to_owned(),
            (None, _) => "active".to_owned(),
        };
        let kind = match session.kind {
            plandesk::token::TokenKind::Pairing => "sign-in link",
            _ => "session",
        };
        table.row([
            safe(&session.name).into_owned(),
            kind.to_owned(),
            status,
            age(session.created_at),
        ]);
    }
    print_table(&table, "");
}

pub fn tokens(tokens: &[plandesk::token::TokenRow]) {
    if tokens.is_empty() {
        say!("No tokens yet. Create one with: plandesk token create NAME");
        return;
    }
    let mut table = Table::new(&["NAME", "STATUS", "CREATED", "BY"]);
    for token in tokens {
        let status = match token.revoked_at {
            Some(at) => format!("revoked {}", age(at)),
            None => "active".to_owned(),
        };
        table.row([
            safe(&token.name).into_owned(),
            status,
            age(token.created_at),
            short(&token.created_by, 30),
        ]);
    }
    print_table(&table, "");
}
