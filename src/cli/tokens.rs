//! `plandesk token create|list|revoke NAME`: the bearer tokens `plandesk serve` lets in. A
//! secret is printed once, when it is created; the store keeps only its hash.

use std::process::ExitCode;

use anyhow::Result;
use plandesk::Engine;

use super::{print, TokenAction};

/// `plandesk token create|list|revoke`.
pub async fn token(engine: &Engine, action: TokenAction, json: bool) -> Result<ExitCode> {
    match action {
        TokenAction::Create { name } => create(engine, &name, json).await,
        TokenAction::List => list(engine, json).await,
        TokenAction::Revoke { name } => revoke(engine, &name, json).await,
    }
}

/// `plandesk token create NAME`: prints the secret (stdout) and how to use it (stderr).
async fn create(engine: &Engine, name: &str, json: bool) -> Result<ExitCode> {
    let (row, secret) = engine.tokens().create(name).await?;
    if json {
        println!(
            "{}",
            serde_json::json!({"name": row.name, "createdAt": row.created_at, "token": secret.expose()})
        );
    } else {
        println!("{}", secret.expose());
        eprintln!(
            "plandesk: token `{}` created; this is the only time its secret is shown. Agents send \
             it as `Authorization: Bearer <token>` to `plandesk serve`",
            row.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn list(engine: &Engine, json: bool) -> Result<ExitCode> {
    let tokens = engine.tokens().list().await?;
    if json {
        println!("{}", serde_json::to_string(&tokens)?);
    } else {
        print::tokens(&tokens);
    }
    Ok(ExitCode::SUCCESS)
}

async fn revoke(engine: &Engine, name: &str, json: bool) -> Result<ExitCode> {
    let row = engine.tokens().revoke(name).await?;
    if json {
        println!("{}", serde_json::to_string(&row)?);
    } else {
        eprintln!(
            "plandesk: token `{}` is revoked; requests carrying it are refused from now on",
            row.name
        );
    }
    Ok(ExitCode::SUCCESS)
}
