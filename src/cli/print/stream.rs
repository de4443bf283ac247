//! A run's chunks as they arrive: JSON lines for scripts, or a transcript for people (text as
//! it streams, a line per tool call and result), then what waits and the command that comes
//! next. Everything a model or a plan wrote passes through `safe` or `short`.

use std::io::Write;

use plandesk::chunk::{Chunk, ChunkKind};
use plandesk::review::{ItemKind, ReviewItem, SourceKind};
use plandesk::{Report, RunStatus};
use serde_json::Value;

use super::{arg, safe, short};

/// Prints a run's chunks as they arrive: JSON lines, or a transcript.
#[derive(Debug)]
pub struct StreamPrinter {
    json: bool,
    in_text: bool,
    /// Said on stderr once the run has started (so a refused run prints only its refusal).
    preface: Option<String>,
}

impl StreamPrinter {
    pub fn new(json: bool) -> Self {
        Self {
            json,
            in_text: false,
            preface: None,
        }
    }

    /// A line for stderr when the stream's first chunk arrives.
    pub fn preface(&mut self, line: String) {
        self.preface = Some(line);
    }

    pub fn sink(&mut self) -> impl FnMut(Chunk) + Send + '_ {
        move |chunk| self.print(&chunk)
    }

    fn print(&mut self, chunk: &Chunk) {
        if let Some(line) = self.preface.take() {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
        let mut out = std::io::stdout().lock();
        if self.json {
            if let Ok(line) = plandesk::text::visible_json(chunk) {
                let _ = writeln!(out, "{line}");
            }
            return;
        }
        let _ = match &chunk.kind {
            ChunkKind::TextDelta(t) => {
                self.in_text = true;
                write!(out, "{}", safe(&t.text))
            }
            ChunkKind::TextEnd(_) if self.in_text => {
                self.in_text = false;
                writeln!(out)
            }
            ChunkKind::ToolCall(call) => {
                writeln!(
                    out,
                    "→ {} {}",
                    safe(&call.tool_name),
                    args_summary(&call.args)
                )
            }
            ChunkKind::ToolResult(r) => {
                writeln!(
                    out,
                    "  ✓ {}: {}",
                    safe(&r.tool_name),
                    result_summary(&r.result)
                )
            }
            ChunkKind::ToolError(e) => {
                writeln!(out, "  ✗ {}: {}", safe(&e.tool_name), short(&e.error, 200))
            }
            ChunkKind::ToolOutputDenied(d) => {
                writeln!(
                    out,
                    "  ✗ {} declined: {}",
                    safe(&d.tool_name),
                    short(&d.reason, 200)
                )
            }
            ChunkKind::ToolCallSuspended(s) => {
                writeln!(out, "⏸ {} is waiting for your review", safe(&s.tool_name))
            }
            ChunkKind::ToolCallApproval(a) => {
                writeln!(out, "⏸ {} needs your approval", safe(&a.tool_name))
            }
            ChunkKind::Error(e) => writeln!(
                std::io::stderr(),
                "error [{}]: {}",
                safe(&e.error.code),
                safe(&e.error.message)
            ),
            _ => Ok(()),
        };
        let _ = out.flush();
    }

    /// After the stream: the plan or approval that waits, and what to run next.
    pub fn finish(&self, report: &Report) {
        if self.json {
            return;
        }
        let run = arg(&report.run_id);
        if report.source.kind != SourceKind::Engine {
            say!(
                "Decision recorded: {} has it now.",
                report.source.kind.agent_name()
            );
            if let Some(item) = &report.pending {
                say!();
                pending_detail(item);
            }
            return;
        }
        match report.status {
            RunStatus::Suspended => {
                if let Some(item) = &report.pending {
                    say!();
                    pending_detail(item);
                }
            }
            RunStatus::Waiting => say!(
                "\nThe run waits for your next message: plandesk send {run} \"what to change\""
            ),
            RunStatus::Finished => say!(
                "\nRun {run} finished (mode: {}). Continue it with: plandesk send {run} \"…\"",
                report.mode
            ),
            RunStatus::Failed => eprintln!("\nRun {run} failed. Retry with: plandesk resume {run}"),
            RunStatus::Running => say!("\nRun {run} is still running."),
        }
    }
}

/// A tool call's arguments on one line: a path (and a content's size), else the JSON, cut.
pub(super) fn args_summary(args: &Value) -> String {
    match (
        args.get("path").and_then(Value::as_str),
        args.get("content").and_then(Value::as_str),
    ) {
        (Some(path), Some(content)) => format!("{} ({} bytes)", short(path, 120), content.len()),
        (Some(path), None) => short(path, 160),
        _ => short(&args.to_string(), 160),
    }
}

fn result_summary(result: &Value) -> String {
    if let Some(entries) = result.get("entries").and_then(Value::as_array) {
        return format!("{} entries", entries.len());
    }
    if let Some(content) = result.get("content").and_then(Value::as_str) {
        return short(content, 200);
    }
    if let Some(message) = result.get("message").and_then(Value::as_str) {
        return short(message, 200);
    }
    if let Some(bytes) = result.get("bytesWritten") {
        return format!("wrote {bytes} bytes");
    }
    short(&result.to_string(), 200)
}

fn pending_detail(item: &ReviewItem) {
    let run = arg(&item.run_id);
    let call = arg(&item.tool_call_id);
    let rule = "─".repeat(72);
    match (&item.kind, &item.revision) {
        (ItemKind::Plan, Some(rev)) => {
            say!("{rule}");
            let title = if rev.title.is_empty() {
                "(untitled plan)"
            } else {
                rev.title.as_str()
            };
            say!("PLAN  {}", safe(title));
            say!(
                "      {}  ·  revision {}  ·  {}",
                safe(&rev.path),
                rev.revision_no,
                &rev.sha256[..12]
            );
            say!("{rule}");
            say!("{}", safe(&rev.body));
            say!("{rule}");
            say!(
                "Approve: plandesk approve {run} --revision {}",
                &rev.sha256[..12]
            );
            say!(
                "Reject:  plandesk reject {run} --revision {} --feedback \"what to change\"",
                &rev.sha256[..12]
            );
            say!("         (without --feedback the run waits for your next message)");
        }
        _ => {
            say!(
                "APPROVAL  {} {}",
                safe(&item.tool_name),
                args_summary(&item.args)
            );
            // What is approved is shown whole: every line of it, numbered.
            match item.args.get("content").and_then(Value::as_str) {
                Some(content) => {
                    say!("{rule}");
                    for (number, line) in content.lines().enumerate() {
                        say!("{:>5} │ {}", number + 1, safe(line));
                    }
                    say!("{rule}");
                }
                None => say!("{}", safe(&item.args.to_string())),
            }
            say!("Approve: plandesk approve {run} --tool-call-id {call}");
            say!("Decline: plandesk reject {run} --tool-call-id {call} --feedback \"why\"");
        }
    }
}
