//! `plandesk token create|list|revoke NAME`: the bearer tokens `plandesk serve` lets agents in
//! with; `plandesk pair` and `plandesk session list|revoke NAME`: the browsers it lets
//! reviewers in with. A secret is printed once, when it is created; the store keeps only its
//! hash.

use std::process::ExitCode;

use anyhow::Result;
use plandesk::source::serve::web::pair;
use plandesk::token::{TokenError, TokenKind, TokenRow};
use plandesk::{webhook, Engine};

use super::{print, SessionAction, TokenAction, WebhookAction};

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
        print::json_line(
            &serde_json::json!({"name": row.name, "createdAt": row.created_at, "token": secret.expose()}),
        )?;
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
    let tokens = of_kinds(engine, &[TokenKind::Agent]).await?;
    if json {
        print::json_line(&tokens)?;
    } else {
        print::tokens(&tokens);
    }
    Ok(ExitCode::SUCCESS)
}

async fn of_kinds(engine: &Engine, kinds: &[TokenKind]) -> Result<Vec<TokenRow>> {
    let mut tokens = engine.tokens().list().await?;
    tokens.retain(|t| kinds.contains(&t.kind));
    Ok(tokens)
}

async fn revoke(engine: &Engine, name: &str, json: bool) -> Result<ExitCode> {
    let row = engine.tokens().revoke(TokenKind::Agent, name).await?;
    if json {
        print::json_line(&row)?;
    } else {
        eprintln!(
            "plandesk: token `{}` is revoked; requests carrying it are refused from now on",
            row.name
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk pair [--name NAME] [--url URL]`: the link on stdout (or `{"url", "name",
/// "expiresAt"}`), its QR code and what to do with it on stderr.
pub async fn pair(
    engine: &Engine,
    name: Option<&str>,
    url: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let link = pair::sign_in_link(engine, name, url).await?;
    if json {
        print::json_line(&link)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(code) = pair::qr_text(&link.url) {
        eprintln!("{code}");
    }
    println!("{}", link.url);
    eprintln!(
        "plandesk: open this link (or scan the code) in the browser to sign in as `{}`; it works \
         once, within 10 minutes. {}",
        link.name,
        if link.only_here {
            "Its address reaches this computer only, so a phone cannot open it: give one the \
             phone reaches with --url (or `plandesk serve --public-url`)"
        } else {
            "A phone must reach this address: if it does not, give the one it does with --url \
             (or `plandesk serve --public-url`)"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `plandesk session list|revoke`.
pub async fn session(engine: &Engine, action: SessionAction, json: bool) -> Result<ExitCode> {
    match action {
        SessionAction::List => {
            let sessions = of_kinds(engine, &[TokenKind::Session, TokenKind::Pairing]).await?;
            if json {
                print::json_line(&sessions)?;
            } else {
                print::sessions(&sessions, engine.now_millis());
            }
        }
        SessionAction::Revoke { name } => {
            let tokens = engine.tokens();
            // A browser signed in under that name, else a link not used yet.
            let row = match tokens.revoke(TokenKind::Session, &name).await {
                Err(TokenError::Store(err)) if err.code() == "unknown-token" => tokens
                    .revoke(TokenKind::Pairing, &name)
                    .await
                    .map_err(|_| {
                        anyhow::anyhow!(
                            "no browser is signed in as `{name}` and no sign-in link for it is \
                             waiting (`plandesk session list` shows them)"
                        )
                    })?,
                row => row?,
            };
            if json {
                print::json_line(&row)?;
            } else {
                eprintln!(
                    "plandesk: session `{}` is signed out; its browser must pair again",
                    row.name
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `plandesk webhook add|list|remove`.
pub async fn webhook(engine: &Engine, action: WebhookAction, json: bool) -> Result<ExitCode> {
    match action {
        WebhookAction::Add {
            url,
            format,
            with_plan,
        } => {
            let format = webhook::Format::parse(&format).unwrap_or_default();
            let hook = webhook::Webhook {
                url,
                format,
                with_plan,
            };
            webhook::add(engine, hook).await?;
            if !json {
                eprintln!(
                    "plandesk: webhook saved; `plandesk serve` POSTs to it when a plan becomes \
                     pending"
                );
            }
        }
        WebhookAction::List => {
            let hooks = webhook::list(engine).await?;
            if json {
                print::json_line(&hooks)?;
            } else {
                print::webhooks(&hooks);
            }
        }
        WebhookAction::Remove { url } => {
            if !webhook::remove(engine, &url).await? {
                anyhow::bail!(
                    "no webhook has the URL {} (`plandesk webhook list` shows them)",
                    plandesk::text::short(&url, 100)
                );
            }
            if !json {
                eprintln!("plandesk: webhook removed");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
