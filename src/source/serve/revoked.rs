//! Tokens revoked while their requests wait. A request is let in by its token when it arrives;
//! the plan it submitted may then wait for hours. When the token is revoked meanwhile
//! (`plandesk token revoke`, from any process on the store), whatever still waits on it ends
//! as if its client had gone: its MCP calls and `tasks/result` streams are cancelled, its tasks
//! forgotten, its hook requests answered with a deny. Each of their plans is closed as
//! abandoned, so nobody can approve it any more and no answer reaches an agent whose access
//! was taken away.

use std::collections::HashSet;
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use tokio::sync::watch;

use super::State;
use crate::token::token_key;

/// A burst of changes to the store (a busy server commits many) is read as one.
const COALESCE: Duration = Duration::from_millis(100);
/// How often the tokens are read when the store announces no change (a store whose change
/// stream ended, or a change missed).
const FALLBACK: Duration = Duration::from_secs(5);

/// The keys (`Caller::token_key`) of every revoked token, as last read from the store.
pub(super) type RevokedKeys = watch::Receiver<HashSet<String>>;

/// The channel the watcher keeps current, empty until its first read.
pub(super) fn channel() -> (watch::Sender<HashSet<String>>, RevokedKeys) {
    watch::channel(HashSet::new())
}

/// Watches the store's tokens until the server stops, ending what waits on a token as soon as
/// it is seen revoked.
pub(super) async fn watch(state: std::sync::Arc<State>, keys: watch::Sender<HashSet<String>>) {
    let mut changes = state.engine.changes().fuse();
    let mut stopped = state.stopped.clone();
    loop {
        sweep(&state, &keys).await;
        tokio::select! {
            // A stream that ended is disabled here: then only the fallback reads.
            Some(()) = changes.next() => {}
            () = tokio::time::sleep(FALLBACK) => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
        tokio::time::sleep(COALESCE).await;
        while let Some(Some(())) = changes.next().now_or_never() {}
    }
}

/// Reads the tokens once; ends the calls and tasks of each token newly seen revoked.
async fn sweep(state: &State, keys: &watch::Sender<HashSet<String>>) {
    let rows = match state.tokens.list().await {
        Ok(rows) => rows,
        Err(err) => {
            // New requests are refused anyway while the store cannot be read.
            eprintln!("plandesk serve: cannot read the tokens to find revoked ones: {err}");
            return;
        }
    };
    let revoked: Vec<(String, &str)> = rows
        .iter()
        .filter(|row| row.revoked_at.is_some())
        .map(|row| (token_key(row.id), row.name.as_str()))
        .collect();
    let new: Vec<&(String, &str)> = {
        let seen = keys.borrow();
        revoked
            .iter()
            .filter(|(key, _)| !seen.contains(key))
            .collect()
    };
    if new.is_empty() {
        return;
    }
    // Published before the sweep, so that a request registered after it sees the key.
    keys.send_replace(revoked.iter().map(|(key, _)| key.clone()).collect());
    for (key, name) in new {
        let ended = end_waits(state, key);
        if ended > 0 {
            eprintln!(
                "plandesk serve: token `{name}` was revoked: {ended} waiting request(s) and \
                 task(s) ended, their plans closed as abandoned"
            );
        }
    }
}

/// Ends the calls and tasks of a revoked token (by its key); how many.
fn end_waits(state: &State, key: &str) -> usize {
    state.calls.cancel_token(key) + state.server.tasks().end_principal(key)
}

/// For a request that registered a call or started a task: ends them at once if its token
/// was revoked while it was let in (after the sweep that would have ended them).
pub(super) fn end_if_revoked(state: &State, key: &str) {
    if state.revoked.borrow().contains(key) {
        end_waits(state, key);
    }
}
