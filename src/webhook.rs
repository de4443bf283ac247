//! Webhooks: people told off the desktop when a plan waits for them. `plandesk webhook add URL
//! [--format json|ntfy|slack] [--with-plan]` (or the app's Settings) saves one; `plandesk serve`
//! POSTs to each when a plan becomes pending: its title, agent, how long it has waited and a
//! link that opens it in the web review (no plan text unless the webhook asks for it), as
//! plain JSON, as an ntfy message (title, click, a "Review" action) or as Slack blocks with a
//! button. A delivery that fails is tried again with backoff; how each webhook's last one went
//! is kept, for `webhook list` and Settings.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::clock::Millis;
use crate::engine::{Engine, EngineError};
use crate::view::{CommandError, InboxFeed, InboxItem};

/// The setting that holds the webhooks (JSON).
const SETTING: &str = "webhooks";
/// The settings that hold how each webhook's last delivery went (JSON), one per webhook (so
/// that deliveries finishing together do not overwrite each other): this and the SHA-256 of
/// its URL.
const STATUS_SETTING: &str = "webhooks.status.";
/// Webhooks kept at most.
pub const MAX_WEBHOOKS: usize = 20;
/// The longest URL taken.
const MAX_URL: usize = 2048;
/// Tries of one delivery, and the wait before the second (doubled for each next one).
const TRIES: u32 = 5;
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// How long one POST may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest plan text sent to a webhook that asks for it.
const MAX_PLAN: usize = 16 * 1024;

/// What a webhook's POST looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Plandesk's own JSON (`event`, `title`, `agent`, `waitingSince`, `ageSeconds`, `url`).
    #[default]
    Json,
    /// An ntfy message: the URL names the server and topic (`https://ntfy.sh/my-topic`).
    Ntfy,
    /// A Slack incoming webhook: blocks with a "Review" button.
    Slack,
}

impl Format {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "json" => Some(Format::Json),
            "ntfy" => Some(Format::Ntfy),
            "slack" => Some(Format::Slack),
            _ => None,
        }
    }
}

/// A webhook as saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub url: String,
    #[serde(default)]
    pub format: Format,
    /// Whether the plan's text goes with it (off: title and link only).
    #[serde(default)]
    pub with_plan: bool,
}

/// How a webhook's last delivery went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub at: Millis,
    pub ok: bool,
    /// Why it failed (after every try).
    pub error: Option<String>,
}

/// A webhook as listed: with its last delivery, if any.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub last: Option<Delivery>,
}

/// Every webhook, with how its last delivery went.
pub async fn list(engine: &Engine) -> Result<Vec<Listed>, EngineError> {
    let mut listed = Vec::new();
    for webhook in saved(engine).await? {
        listed.push(Listed {
            last: last_delivery(engine, &webhook.url).await?,
            webhook,
        });
    }
    Ok(listed)
}

/// Saves `webhook` (checked first); one with the same URL is replaced.
pub async fn add(engine: &Engine, webhook: Webhook) -> Result<(), CommandError> {
    let url = check_url(&webhook.url)?;
    if webhook.format == Format::Ntfy && ntfy_topic(&url).is_none() {
        return Err(CommandError::invalid(format!(
            "{} names no ntfy topic: give the topic's URL, like https://ntfy.sh/my-plans.",
            crate::text::short(&url, 100)
        )));
    }
    let mut hooks = saved(engine).await?;
    hooks.retain(|h| h.url != url);
    if hooks.len() >= MAX_WEBHOOKS {
        return Err(CommandError::invalid(format!(
            "There are {MAX_WEBHOOKS} webhooks already: remove one first."
        )));
    }
    hooks.push(Webhook { url, ..webhook });
    save(engine, &hooks).await?;
    Ok(())
}

/// Removes the webhook with this URL; `false` if there was none.
pub async fn remove(engine: &Engine, url: &str) -> Result<bool, EngineError> {
    let mut hooks = saved(engine).await?;
    let before = hooks.len();
    hooks.retain(|h| h.url != url.trim());
    if hooks.len() == before {
        return Ok(false);
    }
    save(engine, &hooks).await?;
    engine.set_setting(&status_key(url.trim()), None).await?;
    Ok(true)
}

async fn saved(engine: &Engine) -> Result<Vec<Webhook>, EngineError> {
    let text = engine.setting(SETTING).await?;
    // A setting this build cannot read (hand-edited, or newer) sends nothing rather than fail.
    Ok(text
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default())
}

async fn save(engine: &Engine, hooks: &[Webhook]) -> Result<(), EngineError> {
    let text = serde_json::to_string(hooks).unwrap_or_else(|_| "[]".into());
    engine.set_setting(SETTING, Some(&text)).await
}

fn status_key(url: &str) -> String {
    format!("{STATUS_SETTING}{}", crate::token::hash(url))
}

async fn last_delivery(engine: &Engine, url: &str) -> Result<Option<Delivery>, EngineError> {
    let text = engine.setting(&status_key(url)).await?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

async fn record(engine: &Engine, url: &str, delivery: &Delivery) {
    let text = serde_json::to_string(delivery).unwrap_or_default();
    if let Err(err) = engine.set_setting(&status_key(url), Some(&text)).await {
        eprintln!("plandesk serve: cannot keep how a webhook's delivery went: {err}");
    }
}

/// A webhook URL: http(s) with a host, at most [`MAX_URL`] bytes.
fn check_url(given: &str) -> Result<String, CommandError> {
    let given = given.trim();
    let refuse = |why: &str| {
        CommandError::invalid(format!(
            "{} is not a webhook URL ({why}).",
            crate::text::short(given, 100)
        ))
    };
    if given.len() > MAX_URL {
        return Err(refuse("too long"));
    }
    let url = reqwest::Url::parse(given).map_err(|e| refuse(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse("not http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse("no host"));
    }
    Ok(url.to_string())
}

/// An ntfy topic URL's server (where JSON is published, with a trailing `/`) and topic: the
/// URL's last path segment.
fn ntfy_topic(url: &str) -> Option<(String, String)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let topic = parsed.path_segments()?.rfind(|s| !s.is_empty())?.to_owned();
    let path = parsed.path().trim_end_matches('/');
    let base = path[..path.len() - topic.len()].trim_end_matches('/');
    let server = format!("{}{base}/", parsed.origin().ascii_serialization());
    Some((server, topic))
}

/// What one pending plan's notification says.
#[derive(Debug, Clone)]
pub struct Pending {
    pub title: String,
    pub agent: &'static str,
    pub since: Millis,
    pub link: String,
    pub plan: Option<String>,
}

impl Pending {
    /// An inbox item as a notification, its link into the web review at `base`.
    pub fn of(item: &InboxItem, base: &str) -> Self {
        Self {
            title: item.title.clone().unwrap_or_else(|| item.tool_name.clone()),
            agent: item.source.kind.agent_name(),
            since: item.since,
            link: format!("{base}/?run={}", item.run_id),
            plan: None,
        }
    }
}

/// Where a webhook's POST goes and what it carries, at `now`.
pub fn request(webhook: &Webhook, pending: &Pending, now: Millis) -> (String, Value) {
    let age = Duration::from_millis(u64::try_from(now - pending.since).unwrap_or(0));
    let plan = pending.plan.as_ref().filter(|_| webhook.with_plan);
    let title = crate::text::short(&pending.title, 200);
    match webhook.format {
        Format::Json => {
            let mut body = json!({
                "event": "plan-pending",
                "title": title,
                "agent": pending.agent,
                "waitingSince": crate::clock::utc(pending.since),
                "ageSeconds": age.as_secs(),
                "url": pending.link,
            });
            if let Some(plan) = plan {
                body["plan"] = json!(plan);
            }
            (webhook.url.clone(), body)
        }
        Format::Ntfy => {
            // Published as JSON to the server's root, the topic named in the body.
            let (server, topic) = ntfy_topic(&webhook.url).unwrap_or_default();
            let message = match plan {
                Some(plan) => plan.clone(),
                None => format!("{} waits for your review.", pending.agent),
            };
            let body = json!({
                "topic": topic,
                "title": format!("Plan waiting: {title}"),
                "message": message,
                "click": pending.link,
                "tags": ["clipboard"],
                "actions": [{"action": "view", "label": "Review", "url": pending.link, "clear": true}],
            });
            (server, body)
        }
        Format::Slack => {
            let escape = |text: &str| {
                text.replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
            };
            let mut blocks = vec![json!({
                "type": "section",
                "text": {"type": "mrkdwn", "text": format!(
                    "*{}*\n{} waits for your review.", escape(&title), pending.agent
                )},
            })];
            if let Some(plan) = plan {
                blocks.push(json!({
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": format!("```{}```", escape(&crate::text::short(plan, 2900)))},
                }));
            }
            blocks.push(json!({
                "type": "actions",
                "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Review"},
                              "url": pending.link, "style": "primary"}],
            }));
            let body = json!({
                "text": format!("Plan waiting for your review: {}", escape(&title)),
                "blocks": blocks,
            });
            (webhook.url.clone(), body)
        }
    }
}

/// Tells each of `hooks` of `pending`, each in a task of its own (tried again with backoff);
/// how each went is kept.
async fn announce(
    engine: &Engine,
    client: &reqwest::Client,
    hooks: &[Webhook],
    mut pending: Pending,
    revision_id: Option<i64>,
) {
    if hooks.is_empty() {
        return;
    }
    if let (true, Some(id)) = (hooks.iter().any(|h| h.with_plan), revision_id) {
        pending.plan = crate::view::revision_source(engine.review(), id)
            .await
            .ok()
            .map(|source| crate::text::short(&source.markdown, MAX_PLAN));
    }
    for webhook in hooks.iter().cloned() {
        let (engine, client, pending) = (engine.clone(), client.clone(), pending.clone());
        tokio::spawn(async move {
            let delivery = deliver(&engine, &client, &webhook, &pending).await;
            if let Some(error) = &delivery.error {
                eprintln!(
                    "plandesk serve: the webhook {} failed: {error}",
                    crate::text::short(&webhook.url, 100)
                );
            }
            record(&engine, &webhook.url, &delivery).await;
        });
    }
}

async fn deliver(
    engine: &Engine,
    client: &reqwest::Client,
    webhook: &Webhook,
    pending: &Pending,
) -> Delivery {
    let mut wait = FIRST_RETRY;
    let mut error = String::new();
    for attempt in 1..=TRIES {
        let (url, body) = request(webhook, pending, engine.now_millis());
        let sent = client
            .post(&url)
            .timeout(POST_TIMEOUT)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => {
                return Delivery {
                    at: engine.now_millis(),
                    ok: true,
                    error: None,
                }
            }
            Ok(response) => error = format!("answered {}", response.status()),
            Err(err) => error = format!("cannot be reached: {err}"),
        }
        if attempt < TRIES {
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
    }
    Delivery {
        at: engine.now_millis(),
        ok: false,
        error: Some(format!("{error} (tried {TRIES} times)")),
    }
}

/// Announces each plan that becomes pending from now on to every webhook, with a link into the
/// web review at `base`. The inbox (`feed`, the server's one reader of it) is followed only
/// while there are webhooks: without any, each change to the store costs one read of the
/// webhooks, not of the inbox. The first read announces the plans that became pending since
/// the server started (`started`, taken before it accepts a request: this task may first run
/// after the first plan came in), or, for a webhook added while it runs, since it last saw none
/// (by the clock of the process that submitted them): a plan submitted while that read was
/// under way is not missed.
pub async fn announce_new(engine: Engine, base: String, feed: InboxFeed, started: Millis) {
    use futures::StreamExt;
    use std::collections::HashSet;

    let client = client();
    let mut changes = engine.changes().fuse();
    // Since when what is pending is new to the webhooks: the server's start, or when they were
    // last seen to be none.
    let mut none_since: Millis = started;
    loop {
        let looked = engine.now_millis();
        match saved(&engine).await {
            Ok(hooks) if !hooks.is_empty() => {}
            found => {
                if let Err(err) = found {
                    eprintln!("plandesk serve: cannot read the webhooks: {err}");
                }
                none_since = looked;
                crate::view::change_or_reread(&mut changes).await;
                continue;
            }
        }
        let mut reads = feed.follow();
        let mut seen: Option<HashSet<(String, String)>> = None;
        loop {
            if reads.changed().await.is_err() {
                return;
            }
            let Some(snapshot) = reads.borrow_and_update().clone() else {
                continue;
            };
            let items = &snapshot.items;
            let new = |item: &&InboxItem| {
                let key = (item.run_id.clone(), item.tool_call_id.clone());
                item.kind == crate::vocabulary::ItemKind::Plan
                    && match &seen {
                        Some(seen) => !seen.contains(&key),
                        None => item.since >= none_since,
                    }
            };
            // Read once for every plan this read announces.
            let hooks = match saved(&engine).await {
                // No webhooks left: the inbox is no longer followed.
                Ok(hooks) if hooks.is_empty() => break,
                Ok(hooks) => hooks,
                Err(err) => {
                    eprintln!("plandesk serve: cannot read the webhooks: {err}");
                    Vec::new()
                }
            };
            for item in items.iter().filter(new) {
                let pending = Pending::of(item, &base);
                announce(&engine, &client, &hooks, pending, item.revision_id).await;
            }
            seen = Some(
                items
                    .iter()
                    .map(|i| (i.run_id.clone(), i.tool_call_id.clone()))
                    .collect(),
            );
        }
    }
}

/// The client webhooks are POSTed with: no redirects followed (a webhook answers where it is).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Pending {
        Pending {
            title: "Add <a> cache & more".into(),
            agent: "Claude Code",
            since: 1_000,
            link: "https://plans.example.com/?run=r1".into(),
            plan: Some("# Add a cache\n\nSecret step".into()),
        }
    }

    #[test]
    fn a_webhook_is_told_the_title_agent_age_and_link_and_the_plan_only_if_it_asks() {
        let hook = |format, with_plan| Webhook {
            url: "https://ntfy.sh/plans".into(),
            format,
            with_plan,
        };
        let (url, body) = request(&hook(Format::Json, false), &pending(), 61_000);
        assert_eq!(url, "https://ntfy.sh/plans");
        assert_eq!(body["ageSeconds"], 60);
        assert_eq!(body["agent"], "Claude Code");
        assert_eq!(body["url"], "https://plans.example.com/?run=r1");
        assert!(!body.to_string().contains("Secret"), "{body}");
        let (_, body) = request(&hook(Format::Json, true), &pending(), 61_000);
        assert_eq!(body["plan"], "# Add a cache\n\nSecret step");

        let (url, body) = request(&hook(Format::Ntfy, false), &pending(), 61_000);
        assert_eq!(url, "https://ntfy.sh/");
        assert_eq!(body["topic"], "plans");
        assert_eq!(body["click"], "https://plans.example.com/?run=r1");
        assert_eq!(
            body["actions"][0]["url"],
            "https://plans.example.com/?run=r1"
        );
        assert!(!body.to_string().contains("Secret"), "{body}");

        let (_, body) = request(&hook(Format::Slack, false), &pending(), 61_000);
        let text = body["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(
            text.starts_with("*Add &lt;a&gt; cache &amp; more*"),
            "{text}"
        );
        assert_eq!(
            body["blocks"][1]["elements"][0]["url"],
            "https://plans.example.com/?run=r1"
        );
    }

    #[test]
    fn only_http_urls_are_webhooks() {
        assert!(check_url("https://hooks.slack.com/services/T/B/X").is_ok());
        assert_eq!(
            ntfy_topic("https://ntfy.sh/plans/"),
            Some(("https://ntfy.sh/".into(), "plans".into()))
        );
        assert_eq!(
            ntfy_topic("https://example.com/ntfy/plans"),
            Some(("https://example.com/ntfy/".into(), "plans".into()))
        );
        assert_eq!(ntfy_topic("https://ntfy.sh"), None);
        for bad in ["ftp://x/", "file:///etc/passwd", "hooks.slack.com", ""] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
