//! Which model a run uses: parsing a model spec, and the default when none is given.
//!
//! Specs: `demo`, `scripted:FILE`, `openai:MODEL`, `anthropic:MODEL`, `ollama:MODEL`; the last
//! three may end in `@BASE_URL` (e.g. `openai:qwen2.5@http://127.0.0.1:8000/v1` for vLLM). A run
//! records the spec with its base URL spelled out whenever it is not the provider's default, so
//! a resume after a restart talks to the same server whatever the environment says then.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::anthropic::ANTHROPIC_BASE_URL;
use super::openai::{OLLAMA_BASE_URL, OPENAI_BASE_URL};
use super::ModelError;
use crate::secret::{self, KeyProvider, KeySource};

/// The model an OpenAI key means when no model is named.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";
/// The model an Anthropic key means when no model is named.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The store setting that holds a saved model choice.
pub const MODEL_SETTING: &str = "model";

/// A parsed model spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    Demo,
    Scripted(String),
    /// `openai`, `anthropic` or `ollama`, the model name, and a base URL if one was given.
    Remote {
        provider: Provider,
        model: String,
        base_url: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    OpenAi,
    Anthropic,
    Ollama,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Ollama => "ollama",
        }
    }

    /// The base URL the provider's environment variable names, else its default.
    pub fn base_url_from_env(self) -> String {
        let from_env = |var: &str| {
            std::env::var(var)
                .ok()
                .map(|v| v.trim().trim_end_matches('/').to_owned())
                .filter(|v| !v.is_empty())
        };
        match self {
            Provider::OpenAi => {
                from_env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.into())
            }
            Provider::Anthropic => {
                from_env("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.into())
            }
            Provider::Ollama => from_env("OLLAMA_HOST")
                .map(|host| ollama_base_url(&host))
                .unwrap_or_else(|| OLLAMA_BASE_URL.into()),
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => OPENAI_BASE_URL,
            Provider::Anthropic => ANTHROPIC_BASE_URL,
            Provider::Ollama => OLLAMA_BASE_URL,
        }
    }

    /// The keyring/environment key this provider uses; Ollama needs none.
    pub fn key_provider(self) -> Option<KeyProvider> {
        match self {
            Provider::OpenAi => Some(KeyProvider::OpenAi),
            Provider::Anthropic => Some(KeyProvider::Anthropic),
            Provider::Ollama => None,
        }
    }
}

/// `OLLAMA_HOST` is `host:port` or a URL; its OpenAI-compatible API is under `/v1`.
pub fn ollama_base_url(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let with_scheme = if host.starts_with("http://") || host.starts_with("https://") {
        host.to_owned()
    } else {
        format!("http://{host}")
    };
    if with_scheme.ends_with("/v1") {
        with_scheme
    } else {
        format!("{with_scheme}/v1")
    }
}

impl ModelSpec {
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let unknown = || ModelError::UnknownSpec(spec.to_owned());
        if spec == "demo" {
            return Ok(ModelSpec::Demo);
        }
        let (prefix, rest) = spec.split_once(':').ok_or_else(unknown)?;
        let provider = match prefix {
            "scripted" if !rest.is_empty() => return Ok(ModelSpec::Scripted(rest.to_owned())),
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            "ollama" => Provider::Ollama,
            _ => return Err(unknown()),
        };
        let (model, base_url) = match rest.rfind("@http://").or_else(|| rest.rfind("@https://")) {
            Some(at) => (
                &rest[..at],
                Some(rest[at + 1..].trim_end_matches('/').to_owned()),
            ),
            None => (rest, None),
        };
        if model.trim().is_empty() || model.chars().any(char::is_whitespace) {
            return Err(unknown());
        }
        Ok(ModelSpec::Remote {
            provider,
            model: model.to_owned(),
            base_url,
        })
    }
}

/// The default model and why it was chosen, for a person to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DefaultModel {
    pub spec: String,
    pub reason: String,
}

/// The default model, the first that is configured of: a saved choice, an API key in the
/// environment, an API key in the OS keyring, a reachable local Ollama with a model pulled,
/// then the offline `demo`.
pub async fn default_model(saved: Option<String>) -> DefaultModel {
    if let Some(spec) = saved.filter(|s| ModelSpec::parse(s).is_ok()) {
        return DefaultModel {
            spec,
            reason: "your saved choice".into(),
        };
    }
    // Every environment variable before any keyring lookup (each of those is a D-Bus call).
    let from_env = KeyProvider::ALL
        .into_iter()
        .find(|&p| secret::env_key(p).is_some())
        .map(|p| (p, KeySource::Environment));
    let found = match from_env {
        Some(found) => Some(found),
        None => tokio::task::spawn_blocking(|| {
            KeyProvider::ALL
                .into_iter()
                .find(|&p| secret::find_key(p).0.is_some())
                .map(|p| (p, KeySource::Keyring))
        })
        .await
        .ok()
        .flatten(),
    };
    if let Some((provider, source)) = found {
        let (spec, var) = match provider {
            KeyProvider::OpenAi => (format!("openai:{DEFAULT_OPENAI_MODEL}"), provider.env_var()),
            KeyProvider::Anthropic => (
                format!("anthropic:{DEFAULT_ANTHROPIC_MODEL}"),
                provider.env_var(),
            ),
        };
        let reason = match source {
            KeySource::Environment => format!("{var} is set"),
            KeySource::Keyring => format!("a {} key is in the OS keyring", provider.name()),
        };
        return DefaultModel { spec, reason };
    }
    let base = Provider::Ollama.base_url_from_env();
    if let Some(model) = ollama_model(&base).await {
        let spec = if base == OLLAMA_BASE_URL {
            format!("ollama:{model}")
        } else {
            format!("ollama:{model}@{base}")
        };
        return DefaultModel {
            spec,
            reason: format!("a local Ollama answers at {base}"),
        };
    }
    DefaultModel {
        spec: "demo".into(),
        reason: "no provider is configured: the built-in offline planner".into(),
    }
}

#[derive(Debug, Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    id: String,
}

/// The first model a local OpenAI-compatible server lists, if it answers within a moment.
async fn ollama_model(base_url: &str) -> Option<String> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_millis(300))
        .timeout(Duration::from_secs(1))
        .build()
        .ok()?;
    let body = client
        .get(format!("{base_url}/models"))
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .text()
        .await
        .ok()?;
    let list: ModelList = serde_json::from_str(&body).ok()?;
    list.data.into_iter().map(|m| m.id).next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_with_and_without_base_urls() {
        assert_eq!(ModelSpec::parse("demo").unwrap(), ModelSpec::Demo);
        assert_eq!(
            ModelSpec::parse("ollama:llama3.2:3b@http://10.0.0.2:11434/v1/").unwrap(),
            ModelSpec::Remote {
                provider: Provider::Ollama,
                model: "llama3.2:3b".into(),
                base_url: Some("http://10.0.0.2:11434/v1".into()),
            },
            "model tags keep their colon; the URL loses its trailing slash"
        );
        assert_eq!(
            ModelSpec::parse("anthropic:claude-sonnet-4-5").unwrap(),
            ModelSpec::Remote {
                provider: Provider::Anthropic,
                model: "claude-sonnet-4-5".into(),
                base_url: None,
            }
        );
        for bad in ["", "openai:", "gpt-4", "foo:bar", "openai:a b", "scripted:"] {
            let err = ModelSpec::parse(bad).unwrap_err();
            assert_eq!(err.code(), "model-unknown", "{bad:?}");
        }
    }

    #[test]
    fn ollama_host_forms() {
        assert_eq!(
            ollama_base_url("127.0.0.1:9999"),
            "http://127.0.0.1:9999/v1"
        );
        assert_eq!(ollama_base_url("https://box:1/"), "https://box:1/v1");
        assert_eq!(ollama_base_url("http://box:1/v1"), "http://box:1/v1");
    }
}
