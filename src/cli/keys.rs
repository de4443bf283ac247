//! `plandesk key set|rm|list`: API keys in the OS keyring. A key is read from standard input
//! and never printed; `list` says where each provider's key comes from.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context, Result};
use plandesk::secret::{self, ApiKey, KeyError, KeyProvider, KeySource};

use super::{print, KeyAction};

/// `plandesk key`: needs no store, so a damaged one cannot stop it.
pub fn key(action: KeyAction, json: bool) -> Result<ExitCode> {
    match action {
        KeyAction::Set { provider } => set(provider.into())?,
        KeyAction::Rm { provider } => {
            let provider = KeyProvider::from(provider);
            secret::keyring_remove(provider)?;
            eprintln!(
                "plandesk: the {} key is removed from the OS keyring",
                provider.name()
            );
        }
        KeyAction::List => list(json),
    }
    Ok(ExitCode::SUCCESS)
}

fn set(provider: KeyProvider) -> Result<()> {
    if std::io::stdin().is_terminal() {
        eprint!("Paste the {} API key, then press Enter: ", provider.name());
    }
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("cannot read the key from standard input")?;
    let key = ApiKey::new(&line).ok_or(KeyError::Empty)?;
    secret::keyring_set(provider, &key)?;
    eprintln!(
        "plandesk: the {} key is saved in the OS keyring",
        provider.name()
    );
    if std::env::var_os(provider.env_var()).is_some() {
        eprintln!(
            "plandesk: note: {} is set in this environment and is used before the keyring",
            provider.env_var()
        );
    }
    Ok(())
}

/// Where each provider's key comes from (never the key).
fn list(json: bool) {
    let rows: Vec<(&str, String)> = KeyProvider::ALL
        .into_iter()
        .map(|p| {
            let (found, problem) = secret::find_key(p);
            let source = match (found, problem) {
                (Some((_, KeySource::Environment)), _) => format!("from {}", p.env_var()),
                (Some((_, KeySource::Keyring)), _) => "in the OS keyring".into(),
                (None, Some(problem)) => format!("none ({problem})"),
                (None, None) => "none".into(),
            };
            (p.name(), source)
        })
        .collect();
    if json {
        let map: serde_json::Map<String, serde_json::Value> = rows
            .into_iter()
            .map(|(p, s)| (p.to_owned(), s.into()))
            .collect();
        let _ = print::json_line(&map);
    } else {
        for (provider, source) in rows {
            println!("{provider}\t{source}");
        }
    }
}
