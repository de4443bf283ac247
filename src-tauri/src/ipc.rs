//! What crosses the IPC boundary in a shape of its own: errors as `{code, message}`, a run's
//! channel events, command arguments the window sends, and the app's own facts. Everything
//! else a command answers is the library's view type as it is (`plandesk::view`: serde,
//! camelCase).

use plandesk::view::{LiveChunk, RunEnd, Settings};
use serde::{Deserialize, Serialize};

/// An error the UI can branch on (`code`) and show (`message`): the web review's too.
pub use plandesk::view::CommandError as IpcError;
pub use plandesk::view::{DecideRequest, HistoryFilter};

/// What a run's channel carries: its chunks as they happen, then how the stream ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", content = "data", rename_all = "camelCase")]
pub enum RunEvent {
    Chunk(LiveChunk),
    /// The stream ended; where the run stands (what waits in it, `run_detail` says: a plan
    /// here would be a second copy of what the window is about to fetch).
    Ended(RunEnd),
    /// The engine refused to go on (busy, nothing to continue, a store failure).
    Refused(IpcError),
    /// The person cancelled the run; it keeps its last saved state.
    Cancelled {
        run_id: String,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRequest {
    pub workspace: String,
    pub prompt: String,
    /// `None` or empty: the default model.
    pub model: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppInfo {
    pub data_dir: String,
    /// The store in use, for people: the SQLite file, or the team's URL without its password.
    pub store: String,
    pub settings: Settings,
    /// A folder to offer for new runs: `--workspace`, else the last run's, else home.
    pub workspace: String,
    pub version: &'static str,
    /// A run to open first (`--open`, a link, a clicked notification), once.
    pub open_run: Option<String>,
    /// That plan's call, when a revision was named.
    pub open_tool_call_id: Option<String>,
    /// Why the plan asked for could not be opened.
    pub open_error: Option<IpcError>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use plandesk::chunk::{ChunkKind, TextDeltaPayload};
    use plandesk::Chunk;
    use serde_json::json;

    use super::*;

    /// `plandesk::view`'s tests measure a chunk's message as this envelope; it must be the one
    /// the channel sends.
    #[test]
    fn a_chunk_crosses_the_channel_as_event_and_data() {
        let chunk = Chunk::new(
            "run-1",
            ChunkKind::TextDelta(TextDeltaPayload {
                id: "t".into(),
                text: "Hello".into(),
            }),
        );
        let live = LiveChunk::from(chunk);
        assert_eq!(
            serde_json::to_value(RunEvent::Chunk(live.clone())).unwrap(),
            json!({"event": "chunk", "data": live})
        );
    }
}
