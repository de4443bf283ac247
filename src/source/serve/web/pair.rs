//! Sign-in links for the web review (`plandesk pair`, the app's Settings → Review from your
//! phone): a one-time link to `plandesk serve`'s address, and the same link as a QR code for the
//! terminal and for the app.

use qrcode::render::{svg, unicode};
use qrcode::QrCode;
use serde::Serialize;

use crate::actor::Actor;
use crate::clock::Millis;
use crate::engine::Engine;
use crate::token::{check_name, MAX_NAME};
use crate::view::CommandError;
use crate::vocabulary::TokenKind;

/// The setting where `plandesk serve --public-url` keeps the address browsers reach it at.
pub const PUBLIC_URL_SETTING: &str = "serve.public-url";

/// A sign-in link, made once.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInLink {
    pub url: String,
    /// The reviewer it signs in as.
    pub name: String,
    pub expires_at: Millis,
    /// Whether its address reaches this computer only (a loopback address, `localhost`): a
    /// phone cannot open it.
    pub only_here: bool,
}

/// Makes a sign-in link for the reviewer `name` (by default this computer's reviewer, made
/// unique among the active sessions), to the server at `base` (by default the address `serve
/// --public-url` saved, else its default address on this machine).
pub async fn sign_in_link(
    engine: &Engine,
    name: Option<&str>,
    base: Option<&str>,
) -> Result<SignInLink, CommandError> {
    let base = match base {
        Some(base) => base.to_owned(),
        None => engine
            .setting(PUBLIC_URL_SETTING)
            .await?
            .unwrap_or_else(|| format!("http://{}", super::super::DEFAULT_LISTEN)),
    };
    let base = public_url(&base)?;
    let tokens = engine.tokens();
    let name = match name {
        Some(name) => name.to_owned(),
        None => {
            let now = engine.now_millis();
            let taken: Vec<String> = tokens
                .list()
                .await?
                .into_iter()
                .filter(|t| t.kind != TokenKind::Agent && t.is_active(now))
                .map(|t| t.name)
                .collect();
            free_name(&default_name(), &taken)
        }
    };
    let (row, secret) = tokens.pair(&name).await?;
    Ok(SignInLink {
        url: format!("{base}/pair/{}", secret.expose()),
        name: row.name,
        expires_at: row.expires_at.unwrap_or_default(),
        only_here: only_here(&base),
    })
}

/// Whether `base` (a [`public_url`]) names this computer only.
fn only_here(base: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default();
    match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        // `0.0.0.0` is where a server listens, never where a phone connects.
        Ok(ip) => {
            let ip = ip.to_canonical();
            ip.is_loopback() || ip.is_unspecified()
        }
        Err(_) => host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost"),
    }
}

/// The address people reach `serve` at, as links name it: http(s), a host, no query; without
/// a trailing `/`.
pub fn public_url(given: &str) -> Result<String, CommandError> {
    let refuse = |why: &str| {
        CommandError::invalid(format!(
            "{} is not an address for links ({why}): give one like https://plans.example.com",
            crate::text::short(given, 100)
        ))
    };
    let url = reqwest::Url::parse(given.trim()).map_err(|e| refuse(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse("not http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse("no host"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(refuse("a query, fragment or user in it"));
    }
    if url.path() != "/" {
        return Err(refuse(
            "a path in it: the review is served at a host's root",
        ));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// This computer's reviewer as a session name: its letters, digits, `.`, `_` and `-`.
fn default_name() -> String {
    let name: String = Actor::local("pair")
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .take(MAX_NAME - 4)
        .collect();
    if check_name(&name).is_ok() {
        name
    } else {
        "reviewer".into()
    }
}

/// `name`, or `name-2`, `name-3`… whichever is not `taken`.
fn free_name(name: &str, taken: &[String]) -> String {
    (1..)
        .map(|n| {
            if n == 1 {
                name.to_owned()
            } else {
                format!("{name}-{n}")
            }
        })
        .find(|candidate| !taken.contains(candidate))
        .unwrap_or_else(|| name.to_owned())
}

/// The link as a QR code for a terminal: two rows of modules per line, light on dark (a
/// terminal's dark background is the code's margin).
pub fn qr_text(url: &str) -> Option<String> {
    let code = QrCode::new(url.as_bytes()).ok()?;
    Some(
        code.render::<unicode::Dense1x2>()
            .dark_color(unicode::Dense1x2::Light)
            .light_color(unicode::Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
    )
}

/// The link as a QR code in SVG, for the app's Settings.
pub fn qr_svg(url: &str) -> Option<String> {
    let code = QrCode::new(url.as_bytes()).ok()?;
    Some(
        code.render::<svg::Color<'_>>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_url_is_a_plain_http_address() {
        assert_eq!(
            public_url("https://plans.example.com/").unwrap(),
            "https://plans.example.com"
        );
        assert_eq!(
            public_url("http://10.0.0.5:8765").unwrap(),
            "http://10.0.0.5:8765"
        );
        for bad in [
            "ftp://x",
            "plans.example.com",
            "https://x/?a=1",
            "https://u@x",
            "javascript:alert(1)",
            "https://example.com/plandesk",
        ] {
            assert!(public_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_address_of_this_computer_only_is_told_apart() {
        for here in [
            "http://127.0.0.1:8765",
            "http://[::1]:8765",
            "http://localhost:8765",
            "http://127.0.2.1",
            "http://0.0.0.0:8765",
            "http://[::ffff:127.0.0.1]:8765",
        ] {
            assert!(only_here(here), "{here}");
        }
        for there in [
            "https://plans.example.com",
            "http://10.0.0.5:8765",
            "http://[fd00::1]:8765",
        ] {
            assert!(!only_here(there), "{there}");
        }
    }

    #[test]
    fn a_default_name_is_made_unique() {
        let taken = ["ann".to_owned(), "ann-2".to_owned()];
        assert_eq!(free_name("ann", &taken), "ann-3");
        assert_eq!(free_name("bob", &taken), "bob");
    }

    #[test]
    fn a_link_renders_as_a_qr_code() {
        let text = qr_text("http://127.0.0.1:8765/pair/pdp_00").unwrap();
        assert!(text.lines().count() > 10, "{text}");
        assert!(qr_svg("http://x/").unwrap().starts_with("<?xml"));
    }
}
