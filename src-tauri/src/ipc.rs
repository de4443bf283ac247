//! What crosses the IPC boundary: command arguments, results, events and errors, as serde types
//! converted to and from the engine's own at the edge.

use plandesk::engine::RunView;
use plandesk::message::Json;
use plandesk::plan::SideBySide;
use plandesk::review::{
    Comparison as ReviewComparison, ReviewError, ReviewItem, Revision, RevisionStatus,
};
use plandesk::store::{Source, StoreError};
use plandesk::{Chunk, EngineError, Report};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An error the UI can branch on (`code`) and show (`message`).
#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct IpcError {
    pub code: String,
    pub message: String,
}

impl IpcError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid-input", message)
    }
}

impl From<EngineError> for IpcError {
    fn from(err: EngineError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<plandesk::desktop::OpenError> for IpcError {
    fn from(err: plandesk::desktop::OpenError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<StoreError> for IpcError {
    fn from(err: StoreError) -> Self {
        EngineError::from(err).into()
    }
}

impl From<ReviewError> for IpcError {
    fn from(err: ReviewError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

impl From<plandesk::model::ModelError> for IpcError {
    fn from(err: plandesk::model::ModelError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

/// What a run's channel carries: its chunks as they happen, then how the stream ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", content = "data", rename_all = "camelCase")]
pub enum RunEvent {
    Chunk(LiveChunk),
    /// The stream ended; where the run stands (what waits in it, `run_detail` says: a plan
    /// here would be a second copy of what the window is about to fetch).
    Ended(RunEnd),
    /// The engine refused to go on (busy, nothing to continue, a store failure).
    Refused(IpcError),
    /// The person cancelled the run; it keeps its last saved state.
    Cancelled {
        run_id: String,
    },
}

/// A chunk as the window gets it: the engine's chunk, its long values cut to previews the way
/// `run_detail` sends a transcript (the window never shows more of them, folded in a line, and
/// a 200 KB plan in a `tool-result` would otherwise cross the IPC whole, at the moment a person
/// waits for the run to go on). `tool_call` reads a value whole when its line is opened: a
/// tool's result is stored before its chunk is sent, a model's tool call once the model's turn
/// is over (the window waits for that). Hosts other than the window (the CLI, MCP) get the
/// engine's chunks as they are. A chunk stays under the 8 KB Tauri sends with its message
/// unless a step's output lists many long calls (the window then fetches it, as before).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveChunk {
    #[serde(flatten)]
    pub chunk: Chunk,
    /// The whole `args`' length in bytes, when the payload's `args` is a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_full_bytes: Option<usize>,
    /// The whole `result` (a `tool-result`) or `error` (a `tool-error`)'s length in bytes,
    /// when it is a preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_full_bytes: Option<usize>,
}

impl From<Chunk> for LiveChunk {
    fn from(mut chunk: Chunk) -> Self {
        use plandesk::chunk::ChunkKind as K;
        let (mut args_full_bytes, mut result_full_bytes) = (None, None);
        match &mut chunk.kind {
            K::ToolCall(call) => args_full_bytes = shorten(&mut call.args),
            K::ToolResult(p) => {
                args_full_bytes = shorten(&mut p.args);
                result_full_bytes = shorten(&mut p.result);
            }
            K::ToolError(p) => {
                args_full_bytes = shorten(&mut p.args);
                result_full_bytes = shorten_text(&mut p.error);
            }
            K::ToolCallSuspended(p) => {
                args_full_bytes = shorten(&mut p.args);
                // The plan itself: the window reads its revision.
                shorten(&mut p.suspend_payload);
            }
            K::ToolCallApproval(p) => args_full_bytes = shorten(&mut p.args),
            K::ToolOutputDenied(p) => args_full_bytes = shorten(&mut p.args),
            // A step's output repeats what streamed in it; the window does not show it.
            K::StepFinish(p) => shorten_output(&mut p.output),
            K::Finish(p) => shorten_output(&mut p.output),
            K::Start(_)
            | K::StepStart(_)
            | K::TextStart(_)
            | K::TextDelta(_)
            | K::TextEnd(_)
            | K::Error(_) => {}
        }
        Self {
            chunk,
            args_full_bytes,
            result_full_bytes,
        }
    }
}

/// A step's output, when long, as a bounded preview: the window never shows it (it repeats
/// what streamed in the step), and a step may make many calls that, each short enough to go
/// whole, add up. Its text and its calls' arguments share one budget; at most
/// `PREVIEW_ITEMS` calls are listed.
fn shorten_output(output: &mut plandesk::chunk::StepOutput) {
    let calls: usize = output.tool_calls.iter().map(|c| json_len(&c.args)).sum();
    if output.text.len() + calls <= FULL_UP_TO {
        return;
    }
    let mut budget = PREVIEW_BUDGET;
    budget -= cut_text(&mut output.text, budget);
    output.tool_calls.truncate(PREVIEW_ITEMS);
    for call in &mut output.tool_calls {
        cut(&mut call.args, &mut budget);
    }
}

/// Where a run stands when its stream ends.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    pub run_id: String,
    pub status: plandesk::RunStatus,
    pub mode: String,
    pub error: Option<plandesk::chunk::ChunkError>,
    /// The plan revision the run stopped on, if it did.
    pub revision_id: Option<i64>,
    /// The run as its view shows it next, when it stopped on a plan (and the window did not
    /// show another run): the window draws the review from this, without asking for the run
    /// and the revision after the stream ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<Box<ReviewHandOff>>,
}

/// What the review of a run that just stopped on a plan is drawn from: the run, and the plan's
/// revision with the pages its first screen fills ([`FIRST_SCREEN_BYTES`]).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewHandOff {
    pub detail: RunDetail,
    pub revision: RevisionView,
}

impl From<Report> for RunEnd {
    fn from(report: Report) -> Self {
        Self {
            run_id: report.run_id,
            status: report.status,
            mode: report.mode,
            error: report.error,
            revision_id: report
                .pending
                .and_then(|item| item.revision.map(|revision| revision.id)),
            review: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRequest {
    pub workspace: String,
    pub prompt: String,
    /// `None` or empty: the default model.
    pub model: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecideRequest {
    pub run_id: String,
    pub tool_call_id: String,
    pub approve: bool,
    pub feedback: Option<String>,
    /// Notes that go with an approval (the agent reads them after the approval text).
    #[serde(default)]
    pub note: Option<String>,
    /// The sha256 of the plan revision on screen; the decision is refused if it changed.
    pub revision: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryFilter {
    /// A revision status (`pending`, `approved`, …), or `all` (the same as none).
    pub status: Option<String>,
    pub query: Option<String>,
}

impl TryFrom<HistoryFilter> for plandesk::review::HistoryFilter {
    type Error = IpcError;

    fn try_from(filter: HistoryFilter) -> Result<Self, IpcError> {
        let status = match filter.status.as_deref() {
            None | Some("all") => None,
            Some(name) => Some(RevisionStatus::parse(name).ok_or_else(|| {
                let known: Vec<&str> = RevisionStatus::ALL.iter().map(|s| s.as_str()).collect();
                IpcError::invalid(format!(
                    "There is no revision status {:?}: the history lists all revisions, or \
                     those {}.",
                    name.chars().take(40).collect::<String>(),
                    known.join(", ")
                ))
            })?),
        };
        Ok(Self {
            run_id: None,
            status,
            query: filter.query,
        })
    }
}

/// A page of the history, newest first, and whether older revisions follow it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryPage {
    pub revisions: Vec<RevisionSummary>,
    pub more: bool,
}

/// The app's settings; stored in the store's settings table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub notifications: bool,
    /// Whether notifications name the plan (off: "A plan requires approval").
    pub notification_titles: bool,
    /// Start at login hidden in the tray, and hide to the tray when the window is closed.
    pub start_at_login: bool,
    /// The name the audit trail records for decisions, comments and edits made here (empty:
    /// the OS user).
    #[serde(default)]
    pub reviewer_name: String,
    /// The team's PostgreSQL store saved for this data folder (empty: this computer's SQLite
    /// file). Not in the store itself: it says which store to open.
    #[serde(default)]
    pub team_store: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            notifications: true,
            notification_titles: true,
            // Settled at the first start (on for the user's own store): see `autostart`.
            start_at_login: false,
            reviewer_name: String::new(),
            team_store: String::new(),
        }
    }
}

/// One entry of the inbox: a pending plan or approval.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    pub run_id: String,
    pub tool_call_id: String,
    /// `plan`, `approval`, `suspended`.
    pub kind: plandesk::store::ItemKind,
    pub tool_name: String,
    pub args: Value,
    /// The whole arguments' length in bytes when `args` is a [`preview`] (in the inbox's list;
    /// the run's detail, which a review is drawn from, has them whole).
    pub args_full_bytes: Option<usize>,
    pub since: i64,
    pub prompt: String,
    pub workspace: String,
    pub source: Source,
    pub title: Option<String>,
    pub path: Option<String>,
    pub revision_id: Option<i64>,
    pub revision_no: Option<i64>,
    pub sha256: Option<String>,
}

/// An item with its arguments whole, as a review is drawn from (a run's detail); a list of
/// items uses [`InboxItem::listed`].
impl From<&ReviewItem> for InboxItem {
    fn from(item: &ReviewItem) -> Self {
        Self::with_args(item, item.args.clone(), None)
    }
}

impl InboxItem {
    /// An item for the inbox's list: long arguments as a [`preview`] (a pending approval of a
    /// 200 KB write would otherwise go whole to the window with every change to the inbox).
    pub fn listed(item: &ReviewItem) -> Self {
        let (args, full) = preview_value(&item.args);
        Self::with_args(item, args, full)
    }

    fn with_args(item: &ReviewItem, args: Value, args_full_bytes: Option<usize>) -> Self {
        let revision = item.revision.as_ref();
        Self {
            run_id: item.run_id.clone(),
            tool_call_id: item.tool_call_id.clone(),
            kind: item.kind,
            tool_name: item.tool_name.clone(),
            args,
            args_full_bytes,
            since: item.since,
            prompt: item.prompt.clone(),
            workspace: item.workspace.clone(),
            source: item.source.clone(),
            title: revision.map(|r| r.title.clone()),
            path: revision.map(|r| r.path.clone()),
            revision_id: revision.map(|r| r.id),
            revision_no: revision.map(|r| r.revision_no),
            sha256: revision.map(|r| r.sha256.clone()),
        }
    }
}

/// A revision without its text, for lists.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionSummary {
    pub id: i64,
    pub run_id: String,
    pub tool_call_id: String,
    pub path: String,
    pub title: String,
    pub revision_no: i64,
    pub sha256: String,
    pub submitted_at: i64,
    /// The review core's status: `pending`, `approved`, `rejected`, `superseded`.
    pub status: RevisionStatus,
    pub feedback: Option<String>,
    pub decided_at: Option<i64>,
    /// Who decided, when known (a team's reviewers share one history).
    pub decided_by: Option<String>,
    pub prompt: String,
    /// The reviewer who wrote it by editing the agent's plan; `None`: the agent.
    pub author: Option<String>,
}

impl From<&Revision> for RevisionSummary {
    fn from(revision: &Revision) -> Self {
        let decision = revision.decision.as_ref();
        Self {
            id: revision.id,
            run_id: revision.run_id.clone(),
            tool_call_id: revision.tool_call_id.clone(),
            path: revision.path.clone(),
            title: revision.title.clone(),
            revision_no: revision.revision_no,
            sha256: revision.sha256.clone(),
            submitted_at: revision.submitted_at,
            status: revision.status,
            feedback: decision.and_then(|d| d.feedback.clone()),
            decided_at: decision.map(|d| d.decided_at),
            decided_by: decision.and_then(|d| d.decided_by.clone()),
            prompt: revision.prompt.clone(),
            author: revision.author.clone(),
        }
    }
}

/// HTML sent with a revision: its first pages, more than a screen of any plan. The rest comes
/// with `revision_pages`, after the plan is on screen.
pub const FIRST_BYTES: usize = 16 * 1024;

/// HTML a review fills when it appears (the window's `FIRST_BYTES`, plan.js): what a review
/// handed over with the end of a stream carries. With a short transcript, that message stays
/// under the 8 KB Tauri sends with its notice; a larger one (a long run) is fetched, slower.
pub const FIRST_SCREEN_BYTES: usize = 4 * 1024;

/// A revision to review: the summary and its plan's sanitised HTML in pages of whole blocks
/// (joined, the whole plan, title heading and body), the first of them (at least the byte
/// budget it is built with, [`FIRST_BYTES`] or [`FIRST_SCREEN_BYTES`], when the plan has that
/// much). Its text is [`RevisionSource`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionView {
    #[serde(flatten)]
    pub summary: RevisionSummary,
    pub pages: Vec<String>,
    /// The length of every page's HTML, the pages not sent included (the window sizes their
    /// places from it).
    pub page_bytes: Vec<usize>,
    pub fallback: Option<plandesk::plan::render::Fallback>,
    /// What the agent gets that the rendered view hides (the UI flags the plan).
    pub hidden: Vec<plandesk::plan::render::HiddenContent>,
    pub hidden_omitted: usize,
    /// How many revisions this plan thread has so far.
    pub revisions_in_thread: i64,
}

/// A revision's exact text: what the agent acts on, and the same as HTML for a source view
/// (escaped, every invisible character marked).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionSource {
    pub markdown: String,
    pub source_html: String,
}

/// A plan's HTML in pages, as a review shows it ([`plandesk::review::PAGE_BYTES`]).
pub fn plan_pages(html: &str) -> Vec<&str> {
    plandesk::plan::render::pages(html, plandesk::review::PAGE_BYTES)
}

/// The pages sent with a revision: enough for `first_bytes`.
fn first_pages<'a>(pages: &[&'a str], first_bytes: usize) -> Vec<&'a str> {
    let mut bytes = 0;
    pages
        .iter()
        .take_while(|page| {
            let more = bytes < first_bytes;
            bytes += page.len();
            more
        })
        .copied()
        .collect()
}

impl RevisionView {
    /// `revision` to review, from its kept rendering (nothing of the whole plan is copied but
    /// the first pages, enough for `first_bytes`), in a plan thread of `revisions_in_thread`.
    pub fn of(
        revision: &plandesk::review::Revision,
        rendering: &plandesk::review::RenderedPlan,
        revisions_in_thread: i64,
        first_bytes: usize,
    ) -> Self {
        let all = rendering.pages();
        let rendered = &rendering.rendered;
        Self {
            summary: revision.into(),
            pages: first_pages(&all, first_bytes)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            page_bytes: all.iter().map(|page| page.len()).collect(),
            fallback: rendered.fallback.clone(),
            hidden: rendered.hidden.clone(),
            hidden_omitted: rendered.hidden_omitted,
            revisions_in_thread,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub left: RevisionSummary,
    pub right: RevisionSummary,
    pub diff: SideBySide,
    /// The decisions between the two revisions, oldest first.
    pub between: Vec<plandesk::review::FeedbackStep>,
    /// The comments to show beside the newer revision (where their lines are in it).
    pub comments: Vec<plandesk::review::Comment>,
}

impl From<ReviewComparison> for Comparison {
    fn from(c: ReviewComparison) -> Self {
        Self {
            left: (&c.left).into(),
            right: (&c.right).into(),
            diff: c.diff,
            between: c.between,
            comments: Vec::new(),
        }
    }
}

/// One line of a run's transcript as stored (the live view builds the same from chunks).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TranscriptItem {
    User {
        text: String,
    },
    Assistant {
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        tool_call_id: String,
        tool_name: String,
        /// The stored JSON as it is, or its [`preview`] when it is long.
        args: Json,
        /// The whole arguments' length in bytes, when `args` is a preview (`tool_call` has them).
        full_bytes: Option<usize>,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        /// As `args` above.
        result: Json,
        full_bytes: Option<usize>,
    },
}

/// A tool call's arguments and result in full (`tool_call`), for a transcript line whose
/// preview was opened. `result` is none while the call waits.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCallFull {
    pub args: Json,
    pub result: Option<Json>,
}

/// Tool arguments or results longer than this reach the window as a [`preview`]: a 200 KB
/// `write_file` would otherwise ride along, folded away, with every read of its run.
pub const FULL_UP_TO: usize = 8 * 1024;
/// How much of a long value its preview keeps: characters in all, per string, and items per
/// list or object.
const PREVIEW_BUDGET: usize = 4 * 1024;
const PREVIEW_STRING: usize = 600;
const PREVIEW_ITEMS: usize = 20;

/// `json` as it is when it is short (and `None`); else a preview of it and its length in bytes.
/// The preview is the same value with long strings, lists and objects cut short (still JSON of
/// the same shape, so a `path` argument still names the file); never longer than the value.
pub fn preview(json: &Json) -> (Json, Option<usize>) {
    let full = json.text().len();
    match shortened(full, || json.value()) {
        Some(value) => (Json::new(&value), Some(full)),
        None => (json.clone(), None),
    }
}

/// [`preview`] of a value already parsed (its length is that of its compact JSON text).
pub fn preview_value(value: &Value) -> (Value, Option<usize>) {
    let mut value = value.clone();
    let full = shorten(&mut value);
    (value, full)
}

/// Cuts `value` to its [`preview`] in place, if it is too long to go as it is; its whole
/// length in bytes then.
fn shorten(value: &mut Value) -> Option<usize> {
    let full = json_len(value);
    let cut_to = shortened(full, || std::mem::take(value))?;
    *value = cut_to;
    Some(full)
}

/// The length of `value`'s compact JSON text, counted as it is written out, not kept.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A Value always serializes (its map keys are strings).
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Cuts a text longer than [`FULL_UP_TO`] bytes to its first [`PREVIEW_BUDGET`] bytes (on a
/// character), in place; its whole length in bytes then.
fn shorten_text(text: &mut String) -> Option<usize> {
    let full = text.len();
    if full <= FULL_UP_TO {
        return None;
    }
    cut_text(text, PREVIEW_BUDGET);
    Some(full)
}

/// Cuts `text` to at most `max` bytes, on a character; the bytes it keeps.
fn cut_text(text: &mut String, max: usize) -> usize {
    let mut at = max.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    at
}

/// The preview of a value `full` bytes long, if it is too long to go as it is.
fn shortened(full: usize, value: impl FnOnce() -> Value) -> Option<Value> {
    (full > FULL_UP_TO).then(|| {
        let mut value = value();
        let mut budget = PREVIEW_BUDGET;
        cut(&mut value, &mut budget);
        value
    })
}

/// Cuts `value` to what `budget` (characters) allows, spending it in document order: every
/// value costs at least 2, so a preview holds a bounded number of values whatever the shape.
fn cut(value: &mut Value, budget: &mut usize) {
    *budget = budget.saturating_sub(2);
    match value {
        Value::String(text) => {
            let keep = PREVIEW_STRING.min(*budget);
            match text.char_indices().nth(keep) {
                Some((at, _)) => {
                    text.truncate(at);
                    *budget -= keep;
                }
                None => *budget = budget.saturating_sub(text.chars().count()),
            }
        }
        Value::Array(items) => {
            let mut kept = 0;
            for item in items.iter_mut() {
                if *budget == 0 || kept == PREVIEW_ITEMS {
                    break;
                }
                cut(item, budget);
                kept += 1;
            }
            items.truncate(kept);
        }
        Value::Object(map) => {
            let mut kept = 0;
            for (key, item) in map.iter_mut() {
                if *budget == 0 || kept == PREVIEW_ITEMS {
                    break;
                }
                *budget = budget.saturating_sub(key.chars().count() + 1);
                cut(item, budget);
                kept += 1;
            }
            let mut seen = 0;
            map.retain(|_, _| {
                seen += 1;
                seen <= kept
            });
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => *budget = budget.saturating_sub(4),
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDetail {
    pub run: RunView,
    pub transcript: Vec<TranscriptItem>,
    pub pending: Vec<InboxItem>,
    /// The error that stopped the run, when it failed.
    pub error: Option<plandesk::chunk::ChunkError>,
    /// Why it waits, when it waits (`finished`, `feedback`, `max-steps`).
    pub waiting: Option<plandesk::run::WaitReason>,
    /// Nobody drives it, yet it can go on (interrupted, or decided but not applied): the UI
    /// offers Continue.
    pub interrupted: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    pub data_dir: String,
    /// The store in use, for people: the SQLite file, or the team's URL without its password.
    pub store: String,
    pub settings: Settings,
    /// A folder to offer for new runs: `--workspace`, else the last run's, else home.
    pub workspace: String,
    pub version: &'static str,
    /// A run to open first (`--open`, a link, a clicked notification), once.
    pub open_run: Option<String>,
    /// That plan's call, when a revision was named.
    pub open_tool_call_id: Option<String>,
    /// Why the plan asked for could not be opened.
    pub open_error: Option<IpcError>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn a_short_value_goes_as_it_is() {
        let args = Json::new(&json!({"path": "a.md", "content": "x".repeat(FULL_UP_TO - 40)}));
        let (sent, full) = preview(&args);
        assert_eq!((sent.text(), full), (args.text(), None));
    }

    #[test]
    fn a_long_value_goes_as_a_preview_of_the_same_shape() {
        let content = "é".repeat(100_000); // two bytes a character: cut on a character
        let args = Json::new(&json!({"content": content, "path": "plans/big.md"}));
        let (sent, full) = preview(&args);
        assert_eq!(full, Some(args.text().len()));
        let value = sent.value();
        assert_eq!(value["path"], "plans/big.md", "a path still names the file");
        assert_eq!(value["content"], "é".repeat(PREVIEW_STRING));
    }

    #[test]
    fn a_parsed_value_previews_as_its_text_does() {
        for value in [
            json!({"path": "a.md", "content": "x".repeat(FULL_UP_TO - 40)}),
            json!({"content": "é".repeat(100_000), "path": "plans/big.md"}),
        ] {
            let (text, text_full) = preview(&Json::new(&value));
            let (parsed, parsed_full) = preview_value(&value);
            assert_eq!((parsed, parsed_full), (text.value(), text_full));
        }
    }

    #[test]
    fn a_preview_is_bounded_whatever_the_shape() {
        let wide: Vec<_> = (0..50_000).collect();
        let many_keys: serde_json::Map<_, _> =
            (0..5_000).map(|i| (format!("key{i}"), json!(i))).collect();
        let mut deep = json!("x".repeat(20_000));
        for _ in 0..100 {
            deep = json!([deep, "y".repeat(1_000)]);
        }
        let strings: Vec<_> = (0..1_000).map(|i| "z".repeat(100 + i)).collect();
        let mut bushy = json!([]);
        for _ in 0..4 {
            bushy = json!(vec![bushy; 30]);
        }
        for value in [
            json!(wide),
            Value::Object(many_keys),
            deep,
            json!(strings),
            json!({"a": {"b": {"c": strings}}}),
            bushy,
        ] {
            let json = Json::new(&value);
            let (sent, full) = preview(&json);
            assert_eq!(full, Some(json.text().len()));
            assert!(
                sent.text().len() <= 2 * PREVIEW_BUDGET,
                "{} bytes from {}",
                sent.text().len(),
                &json.text()[..80]
            );
        }
    }

    /// The Tauri channel sends a message under this size with the chunk itself; a larger one
    /// makes the window fetch it in a second round trip.
    const CHANNEL_DIRECT: usize = 8192;

    /// The chunk as the window gets it, and the length of the whole message the channel sends.
    fn sent(chunk: Chunk) -> (Value, usize) {
        let text = serde_json::to_string(&RunEvent::Chunk(chunk.into())).unwrap();
        let mut event: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(event["event"], "chunk");
        (event["data"].take(), text.len())
    }

    #[test]
    fn a_live_chunk_keeps_its_wire_form_and_cuts_long_values_to_previews() {
        use plandesk::chunk::*;
        let plan = "Move a table, then check the counts.\n".repeat(6_000);
        let submitted = json!({"toolId": "submit_plan", "content": "Plan approved.", "isError": false,
            "submittedPlan": {"title": "Migrate", "path": "plans/big.md", "plan": plan}});
        let result = Chunk::new(
            "run-1",
            ChunkKind::ToolResult(ToolResultPayload {
                tool_call_id: "call-1".into(),
                tool_name: "submit_plan".into(),
                args: json!({"path": "plans/big.md"}),
                result: submitted.clone(),
            }),
        );
        let (wire, bytes) = sent(result);
        assert!(bytes < CHANNEL_DIRECT, "{bytes} bytes");
        assert_eq!(wire["type"], "tool-result");
        assert_eq!(
            (&wire["runId"], &wire["from"]),
            (&json!("run-1"), &json!("AGENT"))
        );
        assert_eq!(wire["payload"]["toolCallId"], "call-1");
        assert_eq!(wire["payload"]["args"], json!({"path": "plans/big.md"}));
        assert_eq!(wire["payload"]["result"]["content"], "Plan approved.");
        assert_eq!(
            wire["payload"]["result"]["submittedPlan"]["path"],
            "plans/big.md"
        );
        assert_eq!(wire["resultFullBytes"], json_len(&submitted));
        assert!(
            wire.get("argsFullBytes").is_none(),
            "short arguments go whole"
        );

        let content = "é".repeat(100_000);
        let write = Chunk::new(
            "run-1",
            ChunkKind::ToolCall(ToolCall {
                tool_call_id: "call-0".into(),
                tool_name: "write_file".into(),
                args: json!({"path": "plans/big.md", "content": content}),
            }),
        );
        let (wire, bytes) = sent(write.clone());
        assert!(bytes < CHANNEL_DIRECT, "{bytes} bytes");
        assert_eq!(
            wire["payload"]["args"]["path"], "plans/big.md",
            "the line still names the file"
        );
        assert_eq!(
            wire["argsFullBytes"],
            serde_json::to_string(&json!({"path": "plans/big.md", "content": content}))
                .unwrap()
                .len()
        );

        // Every other kind that carries a model's or a tool's values.
        // A step of many calls, each long enough to go whole on its own.
        let output = StepOutput {
            text: "t".repeat(50_000),
            tool_calls: (0..40)
                .map(|i| ToolCall {
                    tool_call_id: format!("call-{i}"),
                    tool_name: "write_file".into(),
                    args: json!({"path": format!("src/{i}.rs"), "content": "x".repeat(FULL_UP_TO - 100)}),
                })
                .collect(),
            usage: None,
        };
        let done = StepResult {
            reason: "stop".into(),
            is_continued: false,
        };
        let big = json!({"content": content});
        for chunk in [
            ChunkKind::ToolError(ToolErrorPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                error: "e".repeat(50_000),
            }),
            ChunkKind::ToolCallSuspended(SuspendedPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                suspend_payload: submitted.clone(),
                resume_schema: "{}".into(),
            }),
            ChunkKind::ToolCallApproval(ApprovalPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                resume_schema: "{}".into(),
            }),
            ChunkKind::ToolOutputDenied(DeniedPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: big.clone(),
                reason: "no".into(),
            }),
            ChunkKind::StepFinish(StepFinishPayload {
                message_id: "m".into(),
                step_result: done.clone(),
                output: output.clone(),
            }),
            ChunkKind::Finish(FinishPayload {
                step_result: done.clone(),
                output: output.clone(),
                usage: None,
            }),
        ] {
            let name = chunk.type_name();
            let (wire, bytes) = sent(Chunk::new("run-1", chunk));
            assert_eq!(wire["type"], name);
            assert!(bytes < CHANNEL_DIRECT, "{name}: {bytes} bytes");
        }
    }

    #[test]
    fn a_live_chunk_with_short_values_is_the_engines_chunk_as_it_is() {
        use plandesk::chunk::*;
        for kind in [
            ChunkKind::ToolCall(ToolCall {
                tool_call_id: "c".into(),
                tool_name: "read_file".into(),
                args: json!({"path": "a.md"}),
            }),
            ChunkKind::TextDelta(TextDeltaPayload {
                id: "t".into(),
                text: "x".repeat(FULL_UP_TO * 2),
            }),
            ChunkKind::ToolError(ToolErrorPayload {
                tool_call_id: "c".into(),
                tool_name: "t".into(),
                args: json!({}),
                error: "e".repeat(FULL_UP_TO),
            }),
        ] {
            let chunk = Chunk::new("run-1", kind);
            assert_eq!(sent(chunk.clone()).0, serde_json::to_value(&chunk).unwrap());
        }
    }

    #[test]
    fn a_long_text_is_cut_on_a_character_to_its_preview_and_a_short_one_is_left() {
        let mut short = "x".repeat(FULL_UP_TO);
        assert_eq!(shorten_text(&mut short), None);
        assert_eq!(short.len(), FULL_UP_TO);
        for unit in ["e", "é", "漢", "🦀"] {
            let mut text = unit.repeat(FULL_UP_TO + 1); // over 8 KB, up to 32 KB
            let full = text.len();
            assert_eq!(shorten_text(&mut text), Some(full), "{unit}");
            assert!(
                text.len() <= PREVIEW_BUDGET && text.len() > PREVIEW_BUDGET - 4,
                "{unit}: {}",
                text.len()
            );
            assert!(
                text.chars().all(|c| c.to_string() == unit),
                "{unit}: cut on a character"
            );
        }
    }
}
