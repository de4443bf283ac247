//! The review core: what every plan source shares. Plan threads (consecutive plans of one run
//! or one agent session), revisions identified by the sha256 of what a person sees, decisions
//! bound to a revision, and the rules: a revision's status, what may be compared, which key
//! names which revision, how a revision is rendered for a person. Sources (the engine's runs,
//! outside agents) hand plans in and take decisions out; hosts (the CLI, the app) read and
//! decide through it, never through the store.

mod audit;
mod comments;
mod edit;
mod external;
mod key;
mod progress;
mod renders;
mod types;
mod waiters;

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::clock::Clock;
use crate::plan;
use crate::store::{Actor, DecisionRow, Listing, NewDecision, RevisionRow, Store, StoreError};

/// Rows hosts meet through the review core: an item's kind, where a plan came from, and the
/// audit trail's entries.
pub use crate::audit::AuditRow;
pub use crate::store::{NewWork, Work, WorkKind, WorkOf};
pub use crate::vocabulary::{ItemKind, SourceKind};
pub use audit::{check_chain, check_export, write_export, AuditCheck, HeadCheck};
pub use comments::{Comment, CommentState, Lines, MAX_COMMENTS_PER_REVISION, MAX_COMMENT_CHARS};
pub use edit::{EditSummary, Edited};
pub use external::{ExternalPlan, PlanFile, WaitEvent, Waiting};
pub use key::{sha_prefix, RevisionKey, MIN_SHA_PREFIX};
pub use progress::{
    CommandRun, DiffSource, FileDiff, FileProgress, Progress, StepMark, StepProgress, StepState,
};
pub use renders::{RenderedPlan, PAGE_BYTES};
pub use types::*;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "`{key}` names no revision: give a revision number or at least {MIN_SHA_PREFIX} hex digits \
         of its sha256"
    )]
    BadRevisionKey { key: String },
    #[error("no plan revision has a sha256 starting with {prefix}")]
    NoSuchSha { prefix: String },
    #[error("lines {given}: {detail}")]
    BadLines { given: String, detail: String },
    #[error("{0}")]
    BadComment(String),
    #[error("{0}")]
    BadEdit(String),
    #[error("{0}")]
    BadMark(String),
    #[error("`{key}` is ambiguous: {detail}")]
    Ambiguous { key: String, detail: String },
    #[error(
        "revisions {left} and {right} are of different plans ({left_plan} and {right_plan}); only \
         revisions of one plan can be compared"
    )]
    DifferentPlans {
        left: i64,
        right: i64,
        left_plan: String,
        right_plan: String,
    },
}

impl ReviewError {
    pub fn code(&self) -> &'static str {
        match self {
            ReviewError::Store(e) => e.code(),
            ReviewError::BadRevisionKey { .. }
            | ReviewError::DifferentPlans { .. }
            | ReviewError::BadLines { .. }
            | ReviewError::BadComment(_)
            | ReviewError::BadEdit(_)
            | ReviewError::BadMark(_) => "invalid-input",
            ReviewError::NoSuchSha { .. } => "unknown-revision",
            ReviewError::Ambiguous { .. } => "ambiguous",
        }
    }
}

/// The SHA-256 of a plan as a person sees it (title and body), in hex.
pub fn plan_sha256(title: &str, body: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(title.as_bytes());
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    hex::encode(hasher.finalize())
}

/// The [`plan_sha256`] of a plan file's whole text, its title split from its body as a
/// submitted plan's is.
pub fn markdown_sha256(markdown: &str) -> String {
    let split = crate::tool::submit_plan::split_plan(markdown);
    plan_sha256(&split.title, &split.plan)
}

/// The review core over a store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Review {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// This process and its person, for the audit trail.
    actor: Actor,
    /// Whether `actor` acts whatever name Settings give (a person signed in to the web review
    /// is who they signed in as, not the desktop's reviewer).
    named: bool,
    renders: Arc<renders::Renders>,
    /// The agents waiting in this process, and their one waker.
    waiters: Arc<waiters::Waiters>,
}

/// Words of a history search beyond this many are ignored.
const MAX_QUERY_WORDS: usize = 16;

/// The words a history search looks for.
fn query_words(filter: &HistoryFilter) -> Vec<String> {
    filter
        .query
        .as_deref()
        .unwrap_or("")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(MAX_QUERY_WORDS)
        .map(str::to_lowercase)
        .collect()
}

/// Rows (oldest first) as a history shows them: newest first, of the filter's status.
fn newest_first(rows: Vec<RevisionRow>, filter: &HistoryFilter) -> Vec<Revision> {
    rows.into_iter()
        .rev()
        .map(Revision::from)
        .filter(|r| filter.status.is_none_or(|s| r.status == s))
        .collect()
}

/// The setting naming the reviewer in the audit trail (else the OS user).
pub const REVIEWER_SETTING: &str = "reviewer_name";

impl Review {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, actor: Actor) -> Self {
        Self {
            store,
            clock,
            actor,
            named: false,
            renders: Arc::default(),
            waiters: Arc::default(),
        }
    }

    /// The same review (its renders shared), acting as `actor`; `named`: whatever name
    /// Settings give.
    pub fn acting_as(&self, actor: Actor, named: bool) -> Self {
        Self {
            store: self.store.clone(),
            clock: self.clock.clone(),
            actor,
            named,
            renders: self.renders.clone(),
            waiters: self.waiters.clone(),
        }
    }

    /// Renders a just-submitted plan and cuts it in pages, so that showing it finds it ready;
    /// returns when it is.
    /// For a process that will show it (the app): the run makes the plan pending and announces
    /// it after this, so the window's way from the announcement to the plan on screen holds no
    /// rendering (and no renderer competing with the window for the machine). `sha` and
    /// `markdown` as in [`Revision`].
    pub async fn prerender(&self, sha: String, markdown: String) {
        let renders = self.renders.clone();
        // A failed render thread is rendered again, and reported, when the plan is shown.
        let _ = tokio::task::spawn_blocking(move || {
            renders.get(&sha, &markdown).pages();
        })
        .await;
    }

    /// Who acts now: a person signed in as themselves; else the reviewer named in Settings,
    /// else this process's person.
    pub async fn actor(&self) -> Actor {
        if self.named {
            return self.actor.clone();
        }
        match self.store.setting(REVIEWER_SETTING).await {
            Ok(Some(name)) if !name.trim().is_empty() => Actor {
                name: name.trim().to_owned(),
                process: self.actor.process.clone(),
            },
            _ => self.actor.clone(),
        }
    }

    /// The audit trail (of one run, or all), oldest first.
    pub async fn audit(&self, run_id: Option<&str>) -> Result<Vec<AuditRow>, ReviewError> {
        Ok(self.store.audit(run_id).await?)
    }

    /// Everything waiting for a person, from every source, newest first. Items whose outside
    /// agent stopped waiting are closed first, as abandoned.
    pub async fn inbox(&self) -> Result<Vec<ReviewItem>, ReviewError> {
        self.sweep_abandoned().await?;
        let rows = self.store.open_items(None).await?;
        Ok(rows.into_iter().map(ReviewItem::from).collect())
    }

    /// What one run waits for, in the order its calls were made.
    pub async fn open_items(&self, run_id: &str) -> Result<Vec<ReviewItem>, ReviewError> {
        let rows = self.store.open_items(Some(run_id)).await?;
        Ok(rows.into_iter().map(ReviewItem::from).collect())
    }

    /// The plan revision an open item waits on, if it is open and has one.
    pub async fn open_revision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<Revision>, ReviewError> {
        Ok(self
            .open_items(run_id)
            .await?
            .into_iter()
            .find(|i| i.tool_call_id == tool_call_id)
            .and_then(|i| i.revision))
    }

    /// Revisions newest first, filtered by run, status and text (the query's words in a row, the
    /// last one possibly the start of a word, in the title or the plan).
    pub async fn history(&self, filter: &HistoryFilter) -> Result<Vec<Revision>, ReviewError> {
        let words = query_words(filter);
        let run_id = filter.run_id.as_deref();
        let rows = if words.is_empty() {
            self.store.revisions(run_id).await?
        } else {
            self.store.search_revisions(run_id, &words).await?
        };
        Ok(newest_first(rows, filter))
    }

    /// [`Review::history`] for a list on screen, a page at a time: the same revisions, newest
    /// first, but without their plans' text (each `body` is empty; [`Review::revision_by_id`]
    /// loads one whole) and without their decisions' resume data (null: an engine run's echoes
    /// the plan). `page`: the revisions older than its `before`, at most its `limit`; `None`:
    /// all. The status is filtered in the store's query, so that a page is full while there
    /// are more.
    pub async fn listing(
        &self,
        filter: &HistoryFilter,
        page: Option<Page>,
    ) -> Result<Vec<Revision>, ReviewError> {
        let words = query_words(filter);
        let states = filter.status.map(RevisionStatus::states);
        let rows = self
            .store
            .revision_list(&Listing {
                run_id: filter.run_id.as_deref(),
                words: &words,
                states: states.as_ref(),
                before: page.and_then(|p| p.before),
                limit: page.map(|p| p.limit),
            })
            .await?;
        Ok(rows.into_iter().map(Revision::from).collect())
    }

    /// Every revision of one run, oldest first.
    pub async fn revisions(&self, run_id: Option<&str>) -> Result<Vec<Revision>, ReviewError> {
        let rows = self.store.revisions(run_id).await?;
        Ok(rows.into_iter().map(Revision::from).collect())
    }

    pub async fn revision_by_id(&self, id: i64) -> Result<Revision, ReviewError> {
        Ok(self.store.revision(id).await?.into())
    }

    /// The revision a person's key names (see [`RevisionKey`]).
    pub async fn revision(&self, key: &str) -> Result<Revision, ReviewError> {
        match RevisionKey::parse(key)? {
            RevisionKey::Id(id) => self.revision_by_id(id).await,
            RevisionKey::Sha(prefix) => self.by_sha(&prefix).await,
            RevisionKey::Either(id, prefix) => {
                let by_id = match self.store.revision(id).await {
                    Ok(row) => Some(Revision::from(row)),
                    Err(StoreError::UnknownRevision(_)) => None,
                    Err(err) => return Err(err.into()),
                };
                let by_sha = match self.by_sha(&prefix).await {
                    Ok(revision) => Some(revision),
                    Err(ReviewError::NoSuchSha { .. }) => None,
                    Err(err) => return Err(err),
                };
                match (by_id, by_sha) {
                    (Some(a), Some(b)) if a.id != b.id => Err(ReviewError::Ambiguous {
                        key: key.trim().to_owned(),
                        detail: format!(
                            "it is revision number {} and the start of revision {}'s sha256; \
                             write #{} for the number or more hex digits for the hash",
                            a.id, b.id, a.id
                        ),
                    }),
                    (Some(found), _) | (None, Some(found)) => Ok(found),
                    (None, None) => Err(StoreError::UnknownRevision(id).into()),
                }
            }
        }
    }

    async fn by_sha(&self, prefix: &str) -> Result<Revision, ReviewError> {
        let rows = self.store.revisions_by_sha(prefix).await?;
        match rows.as_slice() {
            [] => Err(ReviewError::NoSuchSha {
                prefix: prefix.to_owned(),
            }),
            // The same plan submitted again has the same hash: the newest is meant.
            [.., last] if rows.iter().all(|r| r.sha256 == last.sha256) => Ok(last.clone().into()),
            many => Err(ReviewError::Ambiguous {
                key: prefix.to_owned(),
                detail: format!(
                    "{} revisions have a sha256 starting with it; give more digits",
                    many.len()
                ),
            }),
        }
    }

    /// The revisions of the plan `revision` belongs to, oldest first, without their plans' text
    /// or their decisions' resume data (as in [`Review::listing`]): a thread is read to count,
    /// list and place revisions, and a long plan's every revision read whole would be most of
    /// the work.
    pub async fn thread(&self, revision: &Revision) -> Result<Vec<Revision>, ReviewError> {
        let rows = self
            .store
            .revision_list(&Listing {
                run_id: Some(&revision.run_id),
                ..Listing::default()
            })
            .await?;
        Ok(rows
            .into_iter()
            .rev()
            .map(Revision::from)
            .filter(|r| r.same_thread(revision))
            .collect())
    }

    /// A revision, the markdown it is rendered from (title heading and body) and its rendering
    /// (kept: shared, not copied, its pages too), for a host that shows it in parts (the
    /// window: a plan's first pages, more as it scrolls, its source when asked).
    pub async fn rendering(
        &self,
        id: i64,
    ) -> Result<(Revision, String, Arc<RenderedPlan>), ReviewError> {
        let revision = self.revision_by_id(id).await?;
        let markdown = revision.markdown();
        let (renders, sha) = (self.renders.clone(), revision.sha256.clone());
        let rendered = tokio::task::spawn_blocking(move || {
            let rendered = renders.get(&sha, &markdown);
            (markdown, rendered)
        })
        .await;
        let (markdown, rendered) = rendered.unwrap_or_else(|_| {
            let markdown = revision.markdown();
            let rendered = Arc::new(RenderedPlan::of(&markdown));
            (markdown, rendered)
        });
        Ok((revision, markdown, rendered))
    }

    /// Two revisions of one plan side by side, older on the left, with the decisions between.
    pub async fn compare(&self, left: i64, right: i64) -> Result<Comparison, ReviewError> {
        let (mut a, mut b) = (
            self.revision_by_id(left).await?,
            self.revision_by_id(right).await?,
        );
        if !a.same_thread(&b) {
            return Err(ReviewError::DifferentPlans {
                left: a.id,
                right: b.id,
                left_plan: format!("{} of run {}", a.path, a.run_id),
                right_plan: format!("{} of run {}", b.path, b.run_id),
            });
        }
        if a.revision_no > b.revision_no {
            std::mem::swap(&mut a, &mut b);
        }
        let between = self
            .thread(&a)
            .await?
            .into_iter()
            .filter(|r| r.revision_no >= a.revision_no && r.revision_no < b.revision_no)
            .filter_map(|r| {
                r.decision.map(|d| FeedbackStep {
                    revision_no: r.revision_no,
                    action: d.action,
                    feedback: d.feedback,
                })
            })
            .collect();
        let diff = plan::side_by_side(&a.markdown(), &b.markdown());
        Ok(Comparison {
            left: a,
            right: b,
            diff,
            between,
        })
    }

    /// Records a source's decision on an open item, bound (for plans) to the revision seen.
    pub async fn record(&self, decision: &NewDecision<'_>) -> Result<DecisionRow, ReviewError> {
        if let Some(expect) = decision.expect_sha {
            sha_prefix(expect)?;
        }
        Ok(self.store.record_decision(decision).await?)
    }

    /// Whether an item has a decision recorded.
    pub async fn decision(
        &self,
        run_id: &str,
        tool_call_id: &str,
    ) -> Result<Option<Decision>, ReviewError> {
        Ok(self
            .store
            .decision(run_id, tool_call_id)
            .await?
            .map(Decision::from))
    }
}

/// The rule for showing a revision: the whole plan (title heading and body) rendered, beside
/// the exact text the agent acts on.
pub fn view_of(revision: Revision, revisions_in_thread: i64) -> RevisionView {
    let markdown = revision.markdown();
    let rendered = RenderedPlan::of(&markdown);
    view_from(revision, markdown, revisions_in_thread, &rendered)
}

fn view_from(
    revision: Revision,
    markdown: String,
    revisions_in_thread: i64,
    rendered: &RenderedPlan,
) -> RevisionView {
    RevisionView {
        html: rendered.rendered.html.clone(),
        source_html: rendered.source_html.clone(),
        fallback: rendered.rendered.fallback.clone(),
        hidden: rendered.rendered.hidden.clone(),
        hidden_omitted: rendered.rendered.hidden_omitted,
        markdown,
        revision,
        revisions_in_thread,
    }
}
