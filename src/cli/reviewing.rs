//! The review verbs beyond approve and reject: line comments (`comment`, `comments`,
//! `resolve`) and a reviewer's own version of a plan (`edit`).

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use plandesk::review::{Comment, CommentState, Lines};
use plandesk::workspace::MAX_FILE_BYTES;
use plandesk::Engine;

use super::print;

/// `plandesk comment REVISION --lines N[-M] TEXT`
pub async fn comment(
    engine: &Engine,
    revision: &str,
    lines: &str,
    text: &str,
    json: bool,
) -> Result<ExitCode> {
    let review = engine.review();
    let revision = review.revision(revision).await?;
    let lines = Lines::parse(lines)?;
    let comment = review.add_comment(revision.id, lines, text).await?;
    if json {
        print::json_line(&comment)?;
    } else {
        print::comments(&[comment]);
        print::next(&format!(
            "rejecting revision {} sends its open comments to the agent: plandesk reject {}",
            revision.id,
            print::arg(&revision.run_id)
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk comments REVISION`
pub async fn comments(engine: &Engine, revision: &str, json: bool) -> Result<ExitCode> {
    let review = engine.review();
    let revision = review.revision(revision).await?;
    let comments: Vec<Comment> = review.comments(&revision).await?;
    if json {
        print::json_line(&comments)?;
    } else if comments.is_empty() {
        print::next(&format!(
            "no comments on revision {} or before it",
            revision.id
        ));
    } else {
        print::comments(&comments);
        let open = comments
            .iter()
            .filter(|c| matches!(c.state, CommentState::Open | CommentState::NotAddressed))
            .count();
        print::next(&format!(
            "{open} still open; resolve one with: plandesk resolve COMMENT"
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk resolve COMMENT [--reopen]`
pub async fn resolve(engine: &Engine, id: i64, reopen: bool, json: bool) -> Result<ExitCode> {
    let comment = engine.review().resolve_comment(id, !reopen).await?;
    if json {
        print::json_line(&comment)?;
    } else {
        print::comments(&[comment]);
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk edit REVISION --file FILE` (`-`: standard input)
pub async fn edit(engine: &Engine, revision: &str, file: &Path, json: bool) -> Result<ExitCode> {
    let text = read_plan(file)?;
    let review = engine.review();
    let revision = review.revision(revision).await?;
    let edited = review.edit(revision.id, &text).await?;
    if json {
        print::json_line(&edited)?;
        return Ok(ExitCode::SUCCESS);
    }
    let new = &edited.revision;
    print::next(&format!(
        "revision {} (#{}, sha256 {}) is your version of {}; it waits for your decision",
        new.revision_no,
        new.id,
        &new.sha256[..12],
        print::arg(&new.path)
    ));
    match &edited.not_written {
        None => print::next("the plan file holds it now"),
        Some(why) => print::next(why),
    }
    print::next(&format!(
        "approve it with: plandesk approve {} --revision {}",
        print::arg(&new.run_id),
        &new.sha256[..12]
    ));
    Ok(ExitCode::SUCCESS)
}

/// A plan from a file or standard input: UTF-8, at most a plan's size.
fn read_plan(file: &Path) -> Result<String> {
    let mut bytes = Vec::new();
    let limit = MAX_FILE_BYTES + 1;
    if file == Path::new("-") {
        std::io::stdin()
            .take(limit)
            .read_to_end(&mut bytes)
            .context("cannot read the plan from standard input")?;
    } else {
        let opened =
            std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        if !opened.metadata()?.is_file() {
            bail!("{} is not a regular file", file.display());
        }
        opened
            .take(limit)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", file.display()))?;
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        bail!(
            "{} is larger than a plan may be ({MAX_FILE_BYTES} bytes)",
            file.display()
        );
    }
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", file.display()))
}
