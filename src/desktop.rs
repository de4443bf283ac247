//! The desktop app as other processes see it: what a key given to `plandesk open` or a
//! `plandesk://plan/<key>` link names (a plan revision, or a run), and starting the app on it.
//! The app keeps one instance per store: started again on a store it already shows, it hands
//! the request to the running window and exits, so starting it is also how it is focused.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::engine::{Engine, EngineError};
use crate::review::ReviewError;
use crate::store::StoreError;

/// The URL scheme the installed app handles (`plandesk://plan/<key>`).
pub const LINK_SCHEME: &str = "plandesk";
/// The desktop app's binary name, installed beside `plandesk`.
pub const APP_BINARY: &str = "plandesk-app";

/// The link that opens `key` (a run id or revision key) in the app.
pub fn plan_link(key: &str) -> String {
    let key: String = key
        .chars()
        .map(|c| match c {
            '#' => "%23".to_owned(),
            c => c.to_string(),
        })
        .collect();
    format!("{LINK_SCHEME}://plan/{key}")
}

/// The key a `plandesk://plan/<key>` link names; `None` for anything else (another scheme,
/// another kind of link, an empty key, or characters no run id or revision key has).
pub fn parse_plan_link(link: &str) -> Option<String> {
    let (scheme, rest) = link.trim().split_once("://")?;
    if !scheme.eq_ignore_ascii_case(LINK_SCHEME) {
        return None;
    }
    let key = rest.strip_prefix("plan/")?.trim_end_matches('/');
    let key = key.replace("%23", "#");
    let plain = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '#' | '-' | '_'));
    (!key.is_empty() && plain && key.len() <= 80).then_some(key)
}

/// What a key opens: a run, and the plan revision when the key named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanTarget {
    pub run_id: String,
    /// The `submit_plan` call of the named revision (`None` when a run was named).
    pub tool_call_id: Option<String>,
    pub revision_id: Option<i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("`{key}` names no plan revision ({revision}) and no run ({run})")]
    NotFound {
        key: String,
        revision: String,
        run: String,
    },
    #[error(
        "`{key}` is ambiguous: it names revision {revision_id} (of run {revision_run}) and run \
         {run}; write #N for a revision number, or more of the run id"
    )]
    Ambiguous {
        key: String,
        revision_id: i64,
        revision_run: String,
        run: String,
    },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl OpenError {
    /// A stable code for hosts to branch on.
    pub fn code(&self) -> &'static str {
        match self {
            OpenError::NotFound { .. } => "unknown-plan",
            OpenError::Ambiguous { .. } => "ambiguous",
            OpenError::Engine(e) => e.code(),
        }
    }
}

/// The run (and revision) `key` names: a plan revision (`12`, `#12`, or 8+ hex digits of its
/// sha256), else a run id or a unique prefix of one. A key that names both a revision and a
/// different run is refused rather than guessed.
pub async fn plan_target(engine: &Engine, key: &str) -> Result<PlanTarget, OpenError> {
    let key = key.trim();
    let revision = match engine.review().revision(key).await {
        Ok(revision) => Ok(revision),
        Err(err) if revision_missing(&err) => Err(err.to_string()),
        Err(err) => return Err(EngineError::from(err).into()),
    };
    let run = match engine.resolve_run(key).await {
        Ok(run) => Ok(run),
        Err(EngineError::Store(
            err @ (StoreError::UnknownRun(_) | StoreError::AmbiguousRun { .. }),
        )) => Err(err.to_string()),
        Err(err) => return Err(err.into()),
    };
    match (revision, run) {
        (Ok(revision), Ok(run)) if revision.run_id != run => Err(OpenError::Ambiguous {
            key: key.to_owned(),
            revision_id: revision.id,
            revision_run: revision.run_id,
            run,
        }),
        (Ok(revision), _) => Ok(PlanTarget {
            run_id: revision.run_id,
            tool_call_id: Some(revision.tool_call_id),
            revision_id: Some(revision.id),
        }),
        (Err(_), Ok(run_id)) => Ok(PlanTarget {
            run_id,
            tool_call_id: None,
            revision_id: None,
        }),
        (Err(revision), Err(run)) => Err(OpenError::NotFound {
            key: key.to_owned(),
            revision,
            run,
        }),
    }
}

/// Whether a revision lookup found nothing (as opposed to failing).
fn revision_missing(err: &ReviewError) -> bool {
    matches!(
        err,
        ReviewError::BadRevisionKey { .. }
            | ReviewError::NoSuchSha { .. }
            | ReviewError::Ambiguous { .. }
            | ReviewError::Store(StoreError::UnknownRevision(_))
    )
}

/// The desktop app's binary: beside this one (as installed, and as built), else on `PATH`.
pub fn app_binary() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(APP_BINARY)))
        .filter(|app| app.is_file());
    beside.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(APP_BINARY))
            .find(|app| app.is_file())
    })
}

/// Starts `app` on `data_dir`'s store with `open` (a run id or revision key) on screen. If
/// the app already runs on that store, the new process hands `open` to it and exits at once.
/// The app gets its own process group and no standard streams, so it outlives this process
/// and its terminal.
pub fn start_app(app: &Path, data_dir: &Path, open: &str) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    // The app names its single instance after the store's canonical path: pass that one.
    let data_dir = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
    Command::new(app)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--open")
        .arg(open)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_links_round_trip() {
        for key in ["0123456789abcdef", "#12", "12", "9c1e44aa"] {
            assert_eq!(parse_plan_link(&plan_link(key)).as_deref(), Some(key));
        }
        assert_eq!(plan_link("#3"), "plandesk://plan/%233");
        assert_eq!(
            parse_plan_link("PLANDESK://plan/abcd1234/").as_deref(),
            Some("abcd1234"),
            "the scheme is case-insensitive and a trailing slash is allowed"
        );
    }

    #[test]
    fn other_links_name_nothing() {
        for link in [
            "plandesk://plan/",
            "plandesk://run/abcd1234",
            "https://plan/abcd1234",
            "plandesk:plan/abcd1234",
            "plandesk://plan/abc%20d",
            "plandesk://plan/../../etc",
            "plandesk://plan/a?b=c",
        ] {
            assert_eq!(parse_plan_link(link), None, "{link}");
        }
    }
}
