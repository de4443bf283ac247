//! The window's commands over HTTP: each converts its JSON arguments (named as the window
//! sends them to the app) and calls what the app's command calls. Those that belong to the
//! computer the app runs on (starting a run, its folder, Settings, installing agents) are the
//! desktop app's.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::engine::Engine;
use crate::review::{HistoryFilter as ReviewFilter, Lines, StepMark};
use crate::store::TokenRow;
use crate::view::{self, CommandError, DecideRequest, HistoryFilter, Settings};
use crate::vocabulary::ItemKind;

type Result<T> = std::result::Result<T, CommandError>;

/// Runs `command` with `args` as `engine` (acting as the signed-in reviewer `session`).
pub(super) async fn call(
    engine: &Engine,
    session: &TokenRow,
    command: &str,
    args: Value,
) -> Result<Value> {
    let review = engine.review();
    let value = match command {
        "app_info" => json!({
            "web": true,
            "reviewer": session.name,
            "version": env!("CARGO_PKG_VERSION"),
            "settings": Settings::load(engine).await?,
            "store": "",
            "dataDir": "",
            "workspace": "",
        }),
        "inbox" => json!(view::inbox(review).await?),
        "runs" => json!(engine.runs().await?),
        "run_detail" => {
            let RunArgs { run_id } = parse(args)?;
            json!(view::run_detail(engine, &run_id).await?)
        }
        "tool_call" => {
            let ToolCallArgs {
                run_id,
                tool_call_id,
            } = parse(args)?;
            json!(view::tool_call(engine, &run_id, &tool_call_id).await?)
        }
        "set_viewing" => Value::Null,
        "revision" => {
            let IdArgs { id } = parse(args)?;
            json!(view::revision(review, id, view::FIRST_BYTES).await?)
        }
        "revision_pages" => {
            let PagesArgs { id, from } = parse(args)?;
            json!(view::revision_pages(review, id, from).await?)
        }
        "revision_source" => {
            let IdArgs { id } = parse(args)?;
            json!(view::revision_source(review, id).await?)
        }
        "plan_thread" => {
            let IdArgs { id } = parse(args)?;
            json!(view::plan_thread(review, id).await?)
        }
        "compare" => {
            let CompareArgs { left, right } = parse(args)?;
            json!(view::compare(review, left, right).await?)
        }
        "history" => {
            let HistoryArgs {
                filter,
                before,
                limit,
            } = parse(args)?;
            let filter: ReviewFilter = filter.unwrap_or_default().try_into()?;
            let limit = limit.unwrap_or(100);
            json!(view::history(review, &filter, before, limit).await?)
        }
        "comments" => {
            let RevisionArgs { revision_id } = parse(args)?;
            let revision = review.revision_by_id(revision_id).await?;
            json!(review.comments(&revision).await?)
        }
        "add_comment" => {
            let AddCommentArgs {
                revision_id,
                lines,
                text,
            } = parse(args)?;
            json!(review.add_comment(revision_id, lines, &text).await?)
        }
        "resolve_comment" => {
            let ResolveArgs { id, resolved } = parse(args)?;
            json!(review.resolve_comment(id, resolved).await?)
        }
        "progress" => {
            let RunArgs { run_id } = parse(args)?;
            json!(view::run_progress(engine, &run_id).await?)
        }
        "revision_progress" => {
            let RevisionArgs { revision_id } = parse(args)?;
            json!(view::revision_progress(engine, revision_id).await?)
        }
        "file_diff" => {
            let FileDiffArgs { revision_id, path } = parse(args)?;
            json!(view::file_diff(engine, revision_id, &path).await?)
        }
        "mark_step" => {
            let MarkArgs {
                revision_id,
                step,
                mark,
            } = parse(args)?;
            json!(view::mark_step(engine, revision_id, step, mark).await?)
        }
        "edit_plan" => {
            let EditArgs { revision_id, text } = parse(args)?;
            json!(review.edit(revision_id, &text).await?)
        }
        "preview" => {
            let PreviewArgs { markdown } = parse(args)?;
            // Rendering a long plan takes milliseconds: off the async runtime.
            let preview = tokio::task::spawn_blocking(move || view::plan_preview(&markdown))
                .await
                .map_err(|e| CommandError::new("internal", format!("the preview failed: {e}")))?;
            json!(preview?)
        }
        "audit" => {
            let AuditArgs { run_id } = parse(args)?;
            json!(view::audit(review, run_id.as_deref()).await?)
        }
        "decide" => {
            let DecideArgs { request } = parse(args)?;
            decide(engine, request).await?;
            Value::Null
        }
        other => {
            return Err(CommandError::new(
                "desktop-only",
                format!(
                    "{} is done in the desktop app, not in the browser.",
                    match other {
                        "start_run" | "default_model" | "pick_workspace" => "Starting a run",
                        "send_message" | "retry_run" | "cancel_run" => "Driving a run",
                        "save_settings" | "agent_setup" | "install_agent" => "Settings",
                        "export_audit" => "Exporting the audit trail",
                        _ => "That",
                    }
                ),
            ))
        }
    };
    Ok(value)
}

/// Records a decision (refused if the plan changed since the page showed it) and answers once
/// it is durable; a run of Plandesk's own agent carries on here, in the background. A plan's
/// decision must name the whole hash of the revision shown (the window always does): over the
/// network, "whatever is pending" or a prefix an agent could collide is not enough.
async fn decide(engine: &Engine, request: DecideRequest) -> Result<()> {
    let whole = request
        .revision
        .as_deref()
        .is_some_and(|sha| sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()));
    if !whole {
        let detail = view::run_detail(engine, &request.run_id).await?;
        let plan = detail
            .pending
            .iter()
            .any(|item| item.tool_call_id == request.tool_call_id && item.kind == ItemKind::Plan);
        if plan || request.revision.is_some() {
            return Err(CommandError::invalid(
                "A decision on a plan must name the revision it was made on (its whole sha256).",
            ));
        }
    }
    let verdict = request.verdict();
    let engine = engine.clone();
    let (answer, recorded) = tokio::sync::oneshot::channel::<Result<()>>();
    tokio::spawn(async move {
        let mut answer = Some(answer);
        let outcome = engine
            .decide_and_tell(
                &request.run_id,
                &verdict,
                &mut || {
                    if let Some(answer) = answer.take() {
                        let _ = answer.send(Ok(()));
                    }
                },
                &mut |_chunk| {},
            )
            .await;
        if let (Some(answer), Err(err)) = (answer, outcome) {
            let _ = answer.send(Err(err.into()));
        }
    });
    recorded.await.unwrap_or_else(|_| {
        Err(CommandError::new(
            "not-recorded",
            "The decision was not recorded: the server stopped before it could be.",
        ))
    })
}

fn parse<T: DeserializeOwned>(args: Value) -> Result<T> {
    serde_json::from_value(args)
        .map_err(|e| CommandError::invalid(format!("The command's arguments are wrong: {e}")))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunArgs {
    run_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallArgs {
    run_id: String,
    tool_call_id: String,
}

#[derive(Deserialize)]
struct IdArgs {
    id: i64,
}

#[derive(Deserialize)]
struct PagesArgs {
    id: i64,
    from: usize,
}

#[derive(Deserialize)]
struct CompareArgs {
    left: i64,
    right: i64,
}

#[derive(Deserialize)]
struct HistoryArgs {
    filter: Option<HistoryFilter>,
    before: Option<i64>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RevisionArgs {
    revision_id: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddCommentArgs {
    revision_id: i64,
    lines: Lines,
    text: String,
}

#[derive(Deserialize)]
struct ResolveArgs {
    id: i64,
    resolved: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileDiffArgs {
    revision_id: i64,
    path: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MarkArgs {
    revision_id: i64,
    step: usize,
    mark: StepMark,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditArgs {
    revision_id: i64,
    text: String,
}

#[derive(Deserialize)]
struct PreviewArgs {
    markdown: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditArgs {
    run_id: Option<String>,
}

#[derive(Deserialize)]
struct DecideArgs {
    request: DecideRequest,
}
