//! Plans as they were: `history` (every revision with its decision), `show` (one revision
//! whole) and `diff` (two revisions side by side).

use std::process::ExitCode;

use anyhow::Result;
use plandesk::review;
use plandesk::Engine;

use super::print;

/// `plandesk history [RUN] [--search WORDS]`: oldest first.
pub async fn history(
    engine: &Engine,
    run_id: Option<String>,
    search: Option<String>,
    json: bool,
) -> Result<ExitCode> {
    let run_id = match run_id {
        Some(r) => Some(engine.resolve_run(&r).await?),
        None => None,
    };
    let filter = review::HistoryFilter {
        run_id,
        status: None,
        query: search,
    };
    // JSON carries each plan's text, for scripts; a person's listing is a line per revision and
    // reads none.
    let mut revisions = if json {
        engine.review().history(&filter).await?
    } else {
        engine.review().listing(&filter, None).await?
    };
    revisions.reverse();
    print::listing(json, &revisions, print::history)
}

/// `plandesk show REVISION [--html]`: the plan as the agent wrote it, or its sanitised HTML.
pub async fn show(engine: &Engine, revision: &str, html: bool, json: bool) -> Result<ExitCode> {
    let revision = engine.review().revision(revision).await?;
    let view = review::view_of(revision, 0);
    if json {
        let mut value = serde_json::to_value(&view.revision)?;
        value["html"] = view.html.into();
        value["hidden"] = serde_json::to_value(&view.hidden)?;
        value["fallback"] = serde_json::to_value(&view.fallback)?;
        print::json_line(&value)?;
    } else if html {
        println!("{}", view.html);
    } else {
        print::revision(&view);
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk diff A B`: two revisions of one plan, changed words marked.
pub async fn diff(engine: &Engine, a: &str, b: &str, json: bool) -> Result<ExitCode> {
    let review = engine.review();
    let (a, b) = (review.revision(a).await?, review.revision(b).await?);
    let comparison = review.compare(a.id, b.id).await?;
    if json {
        print::json_line(&serde_json::json!({
            "left": comparison.left.id,
            "right": comparison.right.id,
            "diff": comparison.diff,
            "between": comparison.between,
        }))?;
    } else {
        print::diff(&comparison.left, &comparison.right, &comparison.diff);
    }
    Ok(ExitCode::SUCCESS)
}
