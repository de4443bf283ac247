//! Line comments: a reviewer comments on lines of a revision; rejecting it sends the open ones
//! to the agent, each quoting its lines with their numbers; on the next revision every earlier
//! comment is shown where its lines went, addressed (they changed or went) or not (unchanged),
//! until the reviewer resolves it.

use std::collections::hash_map::{Entry, HashMap};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{Review, ReviewError, Revision};
use crate::clock::Millis;
use crate::plan::LineMap;
use crate::store::{CommentRow, NewComment};

/// Longest comment kept (characters).
pub const MAX_COMMENT_CHARS: usize = 8_000;
/// Most comments one revision takes (the feedback they compile into stays readable).
pub const MAX_COMMENTS_PER_REVISION: usize = 200;

/// Lines of a plan, 1-based and inclusive, counted in its text as the agent wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lines {
    pub start: i64,
    pub end: i64,
}

impl Lines {
    /// `N` or `N-M`.
    pub fn parse(text: &str) -> Result<Lines, ReviewError> {
        let bad = || ReviewError::BadLines {
            given: text.trim().to_owned(),
            detail: "give a line number or a range such as 3-5".into(),
        };
        let number = |s: &str| s.trim().parse::<i64>().map_err(|_| bad());
        let (start, end) = match text.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(text)?;
                (n, n)
            }
        };
        Ok(Lines { start, end })
    }

    /// The lines a stored comment was made on.
    fn of(row: &CommentRow) -> Lines {
        Lines {
            start: row.line_start,
            end: row.line_end,
        }
    }

    /// `Line 3` or `Lines 3-5`.
    pub fn label(self) -> String {
        if self.start == self.end {
            format!("Line {}", self.start)
        } else {
            format!("Lines {}-{}", self.start, self.end)
        }
    }
}

/// Where a comment stands, as shown with a given revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommentState {
    /// On the revision shown, not resolved: rejecting sends it.
    Open,
    Resolved,
    /// From an earlier revision: its lines changed or were removed since.
    Addressed,
    /// From an earlier revision: its lines are still there, unchanged.
    NotAddressed,
}

/// A comment as a person sees it beside one revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: i64,
    pub run_id: String,
    /// The revision it was made on.
    pub revision_id: i64,
    pub revision_no: i64,
    /// The lines it was made on, in that revision.
    pub lines: Lines,
    /// Those lines' text then.
    pub quote: String,
    pub text: String,
    pub author: String,
    pub created_at: Millis,
    pub resolved_by: Option<String>,
    pub resolved_at: Option<Millis>,
    pub state: CommentState,
    /// Where its lines are in the revision it is shown with; `None` when they were removed.
    pub now: Option<Lines>,
}

fn comment(
    row: CommentRow,
    made_on: &Revision,
    state: CommentState,
    now: Option<Lines>,
) -> Comment {
    let lines = Lines::of(&row);
    Comment {
        id: row.id,
        run_id: row.run_id,
        revision_id: row.revision_id,
        revision_no: made_on.revision_no,
        lines,
        quote: row.quote,
        text: row.body,
        author: row.author,
        created_at: row.created_at,
        resolved_by: row.resolved_by,
        resolved_at: row.resolved_at,
        state,
        now,
    }
}

impl Review {
    /// Comments on `lines` of a revision.
    pub async fn add_comment(
        &self,
        revision_id: i64,
        lines: Lines,
        text: &str,
    ) -> Result<Comment, ReviewError> {
        let revision = self.revision_by_id(revision_id).await?;
        let markdown = revision.markdown();
        let all: Vec<&str> = markdown.lines().collect();
        let count = all.len() as i64;
        if lines.start < 1 || lines.end < lines.start || lines.end > count {
            return Err(ReviewError::BadLines {
                given: format!("{}-{}", lines.start, lines.end),
                detail: format!("revision {} has lines 1-{count}", revision.id),
            });
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(ReviewError::BadComment("the comment is empty".into()));
        }
        if text.chars().count() > MAX_COMMENT_CHARS {
            return Err(ReviewError::BadComment(format!(
                "the comment is longer than {MAX_COMMENT_CHARS} characters"
            )));
        }
        let existing = self
            .store
            .comments(&revision.run_id)
            .await?
            .iter()
            .filter(|c| c.revision_id == revision.id)
            .count();
        if existing >= MAX_COMMENTS_PER_REVISION {
            return Err(ReviewError::BadComment(format!(
                "revision {} already has {MAX_COMMENTS_PER_REVISION} comments",
                revision.id
            )));
        }
        let quote = all[(lines.start - 1) as usize..lines.end as usize].join("\n");
        let by = self.actor().await;
        let row = self
            .store
            .add_comment(&NewComment {
                run_id: &revision.run_id,
                revision_id: revision.id,
                revision_sha: &revision.sha256,
                line_start: lines.start,
                line_end: lines.end,
                quote: &quote,
                body: text,
                by: &by,
                at: self.clock.now(),
            })
            .await?;
        Ok(comment(row, &revision, CommentState::Open, Some(lines)))
    }

    /// Resolves a comment (or reopens it); returns it as seen on its own revision.
    pub async fn resolve_comment(&self, id: i64, resolved: bool) -> Result<Comment, ReviewError> {
        let by = self.actor().await;
        let row = self
            .store
            .set_comment_resolved(id, resolved, &by, self.clock.now())
            .await?;
        let revision = self.revision_by_id(row.revision_id).await?;
        let lines = Lines::of(&row);
        let state = if row.resolved_at.is_some() {
            CommentState::Resolved
        } else {
            CommentState::Open
        };
        Ok(comment(row, &revision, state, Some(lines)))
    }

    /// The comments to show with a revision: its own, and those on the earlier revisions of its
    /// plan, each where its lines are now and whether it was addressed. Oldest first. Each
    /// earlier revision is diffed against this one once, however many comments it has.
    pub async fn comments(&self, revision: &Revision) -> Result<Vec<Comment>, ReviewError> {
        let thread = self.thread(revision).await?;
        let rows = self.store.comments(&revision.run_id).await?;
        let shown = revision.markdown();
        let mut maps: HashMap<i64, LineMap> = HashMap::new();
        let mut out = Vec::new();
        for row in rows {
            let Some(made_on) = thread.iter().find(|r| r.id == row.revision_id) else {
                continue;
            };
            if made_on.revision_no > revision.revision_no
                || (made_on.revision_no == revision.revision_no && made_on.id != revision.id)
            {
                continue;
            }
            let lines = Lines::of(&row);
            let (state, now) = if made_on.id == revision.id {
                (CommentState::Open, Some(lines))
            } else {
                let map = match maps.entry(made_on.id) {
                    Entry::Occupied(map) => map.into_mut(),
                    // The thread is read without bodies: an earlier revision is read whole
                    // only when one of its comments is shown.
                    Entry::Vacant(slot) => {
                        let earlier = self.revision_by_id(made_on.id).await?;
                        slot.insert(LineMap::between(&earlier.markdown(), &shown))
                    }
                };
                let fate = map.follow(lines.start as usize, lines.end as usize);
                let now = fate.now.map(|(start, end)| Lines {
                    start: start as i64,
                    end: end as i64,
                });
                if fate.unchanged {
                    (CommentState::NotAddressed, now)
                } else {
                    (CommentState::Addressed, now)
                }
            };
            let state = if row.resolved_at.is_some() {
                CommentState::Resolved
            } else {
                state
            };
            out.push(comment(row, made_on, state, now));
        }
        Ok(out)
    }

    /// The feedback a rejection of `revision` sends: its open comments, each quoting its lines
    /// with their numbers, then `note` (the overall feedback). `None` when there is neither.
    /// Only this revision's own comments count, so nothing is diffed.
    pub async fn compiled_feedback(
        &self,
        revision: &Revision,
        note: Option<&str>,
    ) -> Result<Option<String>, ReviewError> {
        let note = note.map(str::trim).filter(|n| !n.is_empty());
        let open: Vec<CommentRow> = self
            .store
            .comments(&revision.run_id)
            .await?
            .into_iter()
            .filter(|c| c.revision_id == revision.id && c.resolved_at.is_none())
            .collect();
        if open.is_empty() {
            return Ok(note.map(str::to_owned));
        }
        let mut text = format!("Comments on lines of {}:\n", revision.path);
        for c in &open {
            let lines = Lines::of(c);
            let _ = write!(text, "\n{}:\n", lines.label());
            for (number, line) in (lines.start..).zip(c.quote.lines()) {
                let _ = writeln!(text, "> {number} | {line}");
            }
            let _ = writeln!(text, "{}", c.body);
        }
        if let Some(note) = note {
            let _ = write!(text, "\nOverall: {note}\n");
        }
        Ok(Some(text.trim_end().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_a_number_or_a_range() {
        assert_eq!(Lines::parse("3").unwrap(), Lines { start: 3, end: 3 });
        assert_eq!(Lines::parse(" 3-5 ").unwrap(), Lines { start: 3, end: 5 });
        for bad in ["", "x", "3-", "-3", "1-2-3", "3.5"] {
            let err = Lines::parse(bad).unwrap_err().to_string();
            assert!(err.contains("line number or a range"), "{bad}: {err}");
        }
    }
}
