//! The audit trail as a window shows it: its entries (of one run, or all) and whether its
//! chain holds.

use serde::Serialize;

use crate::audit::AuditRow;
use crate::review::{AuditCheck, Review, ReviewError};

/// The audit trail (of one run, or all) and whether its chain holds.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditView {
    pub entries: Vec<AuditRow>,
    pub check: AuditCheck,
}

/// The audit trail's entries, of `run_id` only when given, and the check of the whole chain
/// (one run's entries are a part of it: they cannot be checked alone).
pub async fn audit(review: &Review, run_id: Option<&str>) -> Result<AuditView, ReviewError> {
    let (all, check) = review.checked_audit().await?;
    let entries = match run_id {
        Some(run) => all.into_iter().filter(|e| e.run_id == run).collect(),
        None => all,
    };
    Ok(AuditView { entries, check })
}
