//! `plandesk store [set URL | clear]`: which store this data folder uses, the SQLite file in it
//! or a team's PostgreSQL database. (Named `storage` so that `cli` never reads as reaching
//! into the library's `store`.)

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use plandesk::config::{named_store, reach_team_store, save_team_store, StoreLocation};

use super::{print, StoreAction};

/// `plandesk store`: saves or forgets a team store, then says which store is used.
pub async fn store(
    data_dir: &Path,
    given: Option<&str>,
    action: Option<StoreAction>,
    json: bool,
) -> Result<ExitCode> {
    match action {
        None => {}
        Some(StoreAction::Set { url }) => {
            // Reached (and its tables made) before it is saved: a wrong URL changes nothing.
            reach_team_store(&url).await?;
            save_team_store(data_dir, Some(&url))?;
        }
        Some(StoreAction::Clear) => save_team_store(data_dir, None)?,
    }
    let location = StoreLocation::choose(given, data_dir)?;
    let overridden = named_store(given).is_some();
    if json {
        let kind = match location {
            StoreLocation::Sqlite(_) => "sqlite",
            StoreLocation::Postgres { .. } => "postgres",
        };
        let listing = serde_json::json!({
            "kind": kind,
            "store": location.describe(),
            "dataDir": data_dir.display().to_string(),
        });
        print::json_line(&listing)?;
    } else {
        println!("Store: {}", location.describe());
        if overridden {
            println!("(named by --store or PLANDESK_STORE, which win over the saved choice)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
