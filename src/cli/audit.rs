//! `plandesk audit`: the audit trail (of one run, or all), its export, and the check of its
//! hash chain (in the store, or in an export).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use plandesk::review;
use plandesk::Engine;

use super::print;

/// What `plandesk audit` was asked for.
#[derive(Debug)]
pub enum Audit {
    /// The entries, of one run or of all.
    List { run_id: Option<String> },
    /// Check the store's trail, or an export of it.
    Verify { file: Option<PathBuf> },
    /// Save the whole trail, its head first.
    Export { path: PathBuf },
}

/// `plandesk audit`.
pub async fn audit(engine: &Engine, what: Audit, json: bool) -> Result<ExitCode> {
    match what {
        Audit::Verify { file: Some(file) } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            Ok(print::audit_check(&review::check_export(&text), json))
        }
        Audit::Verify { file: None } => {
            let check = engine.review().verify_audit().await?;
            Ok(print::audit_check(&check, json))
        }
        Audit::Export { path } => export(engine, &path, json).await,
        Audit::List { run_id } => {
            let run_id = match run_id {
                Some(r) => Some(engine.resolve_run(&r).await?),
                None => None,
            };
            let entries = engine.review().audit(run_id.as_deref()).await?;
            print::audit(&entries, json);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn export(engine: &Engine, path: &Path, json: bool) -> Result<ExitCode> {
    let trail = engine.review().audit(None).await?;
    let failed = |e: std::io::Error| anyhow!("cannot write {}: {e}", path.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(failed)?);
    review::write_export(&trail, &mut out)
        .and_then(|()| out.flush())
        .map_err(failed)?;
    if json {
        print::json_line(&serde_json::json!({"path": path, "entries": trail.len()}))?;
    } else {
        print::next(&format!(
            "Saved the audit trail ({} entries, its head first) to {}.",
            trail.len(),
            path.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}
