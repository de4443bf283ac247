//! `plandesk mcp` on stdin/stdout: rmcp serves the session over an in-process pipe, and the
//! lines between the client and rmcp pass through here, so that the requests of the tasks
//! extension (which rmcp does not know in their 2025-11-25 form) are answered here and rmcp's
//! `initialize` and `tools/list` answers say that tasks are there (see `tasks`). Messages are
//! one JSON object a line each way, as the stdio transport has them; every other line passes
//! unchanged. The end of stdin is noticed here at once, and every waiting call and task then
//! closes its plan as abandoned.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

use super::tasks::TaskMethod;
use super::{
    complete_initialize, complete_tools, declares_tasks, Owner, PlanServer, TASKS_VERSION,
};

/// How long the end of a session waits for plans to be closed and answers to be written.
const DRAIN: Duration = Duration::from_secs(10);
/// Lines to stdout waiting to be written.
const OUTBOX: usize = 1024;

/// What the pipe keeps of the session.
#[derive(Debug, Default)]
struct Session {
    /// `initialize` requests not yet answered (by id, as JSON text) and whether their client
    /// declared tasks.
    initializing: HashMap<String, bool>,
    /// `tools/list` requests not yet answered.
    listing: HashSet<String>,
    /// The protocol version agreed.
    version: Option<String>,
    /// Task requests being answered here, to stop if their client cancels them, and whether
    /// each starts a task (a plan: stopped by cancelling its task once it is made).
    answering: HashMap<String, (AbortHandle, bool)>,
    /// The client's requests not answered yet, by id.
    in_flight: HashSet<String>,
    /// Ids the client gave a request while another with that id was not answered yet, or of a
    /// request it cancelled. A client matches an answer to its request by id alone: either
    /// answer could be taken as the other's, an approval among them (rmcp, given an id again,
    /// sends the first's answer under it). A reused id's requests are answered with an error;
    /// nothing else is ever sent with such an id, and a request that takes it again is refused.
    reused: HashSet<String>,
}

impl Session {
    /// Notes an answer to the client's request `id` going out; `false` if it must not (its id
    /// was reused: the request was answered with an error instead).
    fn answered(&mut self, id: &str) -> bool {
        self.in_flight.remove(id);
        !self.reused.contains(id)
    }

    /// Takes `id` out of use if a request of the client's has it in flight (reused, or
    /// cancelled: see [`Session::reused`]); whether one had.
    fn retire(&mut self, id: &str) -> bool {
        let in_flight = self.in_flight.remove(id);
        if in_flight {
            self.reused.insert(id.to_owned());
        }
        in_flight
    }
}

type Shared = Arc<Mutex<Session>>;

fn lock(session: &Shared) -> std::sync::MutexGuard<'_, Session> {
    // Nothing here can panic while the lock is held; a poisoned state is still whole.
    session.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves `server` on stdin/stdout until the client closes stdin; `eof` flips then.
pub(super) async fn serve(
    server: PlanServer,
    session_id: String,
    eof: Arc<watch::Sender<bool>>,
) -> Result<(), String> {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (outbox, outgoing) = mpsc::channel::<Vec<u8>>(OUTBOX);
    let session = Shared::default();
    let owner = Owner {
        principal: "stdio".into(),
        session: Some(session_id),
    };
    let writer = tokio::spawn(write_out(tokio::io::stdout(), outgoing));
    let reader = tokio::spawn(read_in(
        tokio::io::stdin(),
        to_rmcp,
        server.clone(),
        owner,
        session.clone(),
        outbox.clone(),
        eof,
    ));
    let relay = tokio::spawn(relay_out(from_rmcp, session.clone(), outbox.clone()));
    let tasks = server.tasks().clone();
    let served = async {
        let running = server
            .serve(tokio::io::split(theirs))
            .await
            .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| format!("the MCP session ended with an error: {e}"))?;
        Ok::<(), String>(())
    };
    let served = served.await;
    // The client is gone: every task's plan is being closed; wait for that, and for what is
    // left to write, a little.
    let _ = tokio::time::timeout(DRAIN, tasks.idle()).await;
    reader.abort();
    for (_, (answer, _)) in lock(&session).answering.drain() {
        answer.abort();
    }
    let _ = tokio::time::timeout(DRAIN, relay).await;
    drop(outbox);
    let _ = tokio::time::timeout(DRAIN, writer).await;
    served
}

/// Writes each line to stdout as it comes.
async fn write_out(mut stdout: impl AsyncWrite + Unpin, mut lines: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = lines.recv().await {
        if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
    }
}

/// A JSON-RPC id as a key: as rmcp reads it (`7`, `7.0` and `7e0` are one id there), in JSON
/// text (so `1` and `"1"` differ); an id rmcp cannot read, as it was written.
fn key(id: &Value) -> String {
    serde_json::from_value::<rmcp::model::RequestId>(id.clone())
        .ok()
        .and_then(|id| serde_json::to_string(&id).ok())
        .unwrap_or_else(|| id.to_string())
}

/// Reads the client's lines: answers task requests, notes what must be completed in rmcp's
/// answers, and passes everything else to rmcp. At the end of stdin, flips `eof` and closes
/// rmcp's input.
async fn read_in(
    stdin: impl AsyncRead + Unpin,
    mut to_rmcp: impl AsyncWrite + Unpin,
    server: PlanServer,
    owner: Owner,
    session: Shared,
    outbox: mpsc::Sender<Vec<u8>>,
    eof: Arc<watch::Sender<bool>>,
) {
    let mut stdin = BufReader::new(stdin);
    let mut line = Vec::new();
    loop {
        match read_line(&mut stdin, &mut line, MAX_LINE).await {
            Ok(Line::Read) => {}
            Ok(Line::TooLong) => {
                // Its id is in the part not kept: answered as JSON-RPC answers what it cannot
                // read, with no id.
                let refused = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
                    "code": -32700,
                    "message": format!("a message over {MAX_LINE} bytes was not read"),
                }});
                let mut answer = refused.to_string().into_bytes();
                answer.push(b'\n');
                let _ = outbox.send(answer).await;
                continue;
            }
            Ok(Line::End) | Err(_) => break,
        }
        let message = serde_json::from_slice::<Value>(&line).ok();
        if let Some(message) = &message {
            if let Some((id, first)) = reused_id(message, &session) {
                if first {
                    // The first is stopped as its client's cancellation would stop it (its
                    // plan is closed as abandoned): rmcp's, or a task's answered here.
                    let cancel = serde_json::json!({"jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "its id was used again"}});
                    let _ = to_rmcp.write_all(format!("{cancel}\n").as_bytes()).await;
                    let _ = to_rmcp.flush().await;
                    // One that starts a task runs on, to cancel the task it made.
                    if let Some((answer, false)) = lock(&session).answering.remove(&key(&id)) {
                        answer.abort();
                    }
                    let _ = outbox.send(refusal(&id, STOPPED)).await;
                }
                let _ = outbox.send(refusal(&id, REFUSED)).await;
                continue;
            }
            if answer_here(message, &server, &owner, &session, &outbox) {
                continue;
            }
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if to_rmcp.write_all(&line).await.is_err() || to_rmcp.flush().await.is_err() {
            break;
        }
    }
    // rmcp itself only cancels running calls a few seconds after its input ends, when clients
    // have usually killed the server: they are told now.
    let _ = eof.send(true);
    let _ = to_rmcp.shutdown().await;
}

/// What the first of two requests with one id is answered.
const STOPPED: &str = "this request was stopped: the client sent another request with its id \
                       before it was answered, so neither answer could be told apart";
/// What a request with the id of one not answered yet (or of two such) is answered.
const REFUSED: &str = "this request was not run: its id is taken by a request not answered yet \
                       (or was, and is not used again); each request needs an id of its own";

/// A JSON-RPC error answering the request `id` (-32600: an invalid request), as a line.
fn refusal(id: &Value, message: &str) -> Vec<u8> {
    let error = serde_json::json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": -32600, "message": message}});
    format!("{error}\n").into_bytes()
}

/// If `message` is a request whose id a request not answered yet has (or had, see
/// [`Session::reused`]): its id, and whether that other is still in flight (it is stopped
/// too). Else notes it as in flight, if it is a request.
fn reused_id(message: &Value, session: &Shared) -> Option<(Value, bool)> {
    message.get("method")?;
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    let key = key(id);
    let mut state = lock(session);
    if state.retire(&key) {
        return Some((id.clone(), true));
    }
    if state.reused.contains(&key) {
        return Some((id.clone(), false));
    }
    state.in_flight.insert(key);
    None
}

/// The longest message read from the client (rmcp's own limit for a line).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Read,
    /// Longer than the limit: read to its end and dropped.
    TooLong,
    End,
}

/// Reads one line (with its `\n`, if it has one) into `line`, never holding more than `max`
/// bytes of it: a longer one is read to its end and dropped.
async fn read_line(
    input: &mut (impl AsyncBufReadExt + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    line.clear();
    if line.capacity() > 64 * 1024 {
        // What a large message left is not kept for the next.
        *line = Vec::new();
    }
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Read,
            });
        }
        let end = available.iter().position(|b| *b == b'\n');
        let chunk = &available[..end.map_or(available.len(), |at| at + 1)];
        if !too_long && line.len() + chunk.len() > max {
            too_long = true;
            *line = Vec::new();
        }
        if !too_long {
            line.extend_from_slice(chunk);
        }
        let used = chunk.len();
        input.consume(used);
        if end.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

/// Notes what a client's message means for the session; answers it (and returns `true`) if
/// it is a request of the tasks extension on a session that speaks [`TASKS_VERSION`].
fn answer_here(
    message: &Value,
    server: &PlanServer,
    owner: &Owner,
    session: &Shared,
    outbox: &mpsc::Sender<Vec<u8>>,
) -> bool {
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    let method = message.get("method").and_then(Value::as_str);
    let mut state = lock(session);
    match (method, id) {
        (Some("initialize"), Some(id)) => {
            state.initializing.insert(key(id), declares_tasks(message));
            return false;
        }
        (Some("tools/list"), Some(id)) => {
            state.listing.insert(key(id));
            return false;
        }
        (Some("notifications/cancelled"), None) => {
            // A cancelled request is not answered, and its id not taken again: rmcp may still
            // be answering it.
            let cancelled = message["params"].get("requestId").map(key);
            if let Some(cancelled) = cancelled {
                state.retire(&cancelled);
                if let Some((answer, _)) = state.answering.remove(&cancelled) {
                    answer.abort();
                }
            }
            return false;
        }
        _ => {}
    }
    if state.version.as_deref() != Some(TASKS_VERSION) {
        return false;
    }
    let Some(reply) = server.task_reply(message, owner.clone(), None) else {
        return false;
    };
    let Some(id) = id.map(key) else {
        return false;
    };
    let (outbox, shared, done) = (outbox.clone(), session.clone(), id.clone());
    let starts_task = reply.method == TaskMethod::Call;
    let (tasks, owner) = (server.tasks().clone(), owner.clone());
    let answering = tokio::spawn(async move {
        let response = reply.response.await;
        let answered = {
            let mut state = lock(&shared);
            state.answering.remove(&done);
            state.answered(&done)
        };
        if !answered {
            // Its id was reused: the task it made (and its plan) ends, unanswered.
            if let Some(task) = response.pointer("/result/task/taskId") {
                let _ = tasks.cancel(&owner, task).await;
            }
            return;
        }
        let mut line = response.to_string().into_bytes();
        line.push(b'\n');
        let _ = outbox.send(line).await;
    });
    state
        .answering
        .insert(id, (answering.abort_handle(), starts_task));
    true
}

/// Passes rmcp's lines to stdout, completing its `initialize` and `tools/list` answers.
async fn relay_out(
    from_rmcp: impl AsyncRead + Unpin,
    session: Shared,
    outbox: mpsc::Sender<Vec<u8>>,
) {
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from_rmcp.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        match complete(&line, &session) {
            Outgoing::Pass => {}
            Outgoing::Completed(completed) => line = completed,
            Outgoing::Withheld => continue,
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if outbox.send(line.clone()).await.is_err() {
            return;
        }
    }
}

/// What becomes of a line of rmcp's on its way to the client.
enum Outgoing {
    /// As it is.
    Pass,
    /// Its answer to `initialize` or `tools/list`, with what rmcp cannot say.
    Completed(Vec<u8>),
    /// Not sent: it answers a request whose id the client reused (see [`Session::reused`]).
    Withheld,
}

/// What becomes of rmcp's line `line` (see [`Outgoing`]).
fn complete(line: &[u8], session: &Shared) -> Outgoing {
    let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
        return Outgoing::Pass;
    };
    let id = match (message.get("method"), message.get("id")) {
        (None, Some(id)) => key(id),
        _ => return Outgoing::Pass,
    };
    let mut state = lock(session);
    if !state.answered(&id) {
        return Outgoing::Withheld;
    }
    if let Some(declared) = state.initializing.remove(&id) {
        let Some(result) = message.get_mut("result") else {
            return Outgoing::Pass;
        };
        state.version = result["protocolVersion"].as_str().map(str::to_owned);
        complete_initialize(result, declared);
    } else if state.listing.remove(&id) {
        match message.get_mut("result") {
            Some(result) if state.version.as_deref() == Some(TASKS_VERSION) => {
                complete_tools(result)
            }
            _ => return Outgoing::Pass,
        }
    } else {
        return Outgoing::Pass;
    }
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    Outgoing::Completed(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line longer than the limit is dropped whole, however it arrives, and what follows
    /// it is read as usual.
    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_and_the_next_read() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend_from_slice(b"\n{\"b\":2}\n{\"c\":3}");
        let mut reader = BufReader::with_capacity(1000, &input[..]);
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let found = read_line(&mut reader, &mut line, 10_000).await.unwrap();
            assert!(line.len() <= 10_000);
            if found == Line::End {
                break;
            }
            read.push((found, String::from_utf8(line.clone()).unwrap()));
        }
        assert_eq!(
            read,
            [
                (Line::Read, "{\"a\":1}\n".to_owned()),
                (Line::TooLong, String::new()),
                (Line::Read, "{\"b\":2}\n".to_owned()),
                (Line::Read, "{\"c\":3}".to_owned()),
            ]
        );
        let mut endless = BufReader::new(&[b'y'; 50_000][..]);
        let found = read_line(&mut endless, &mut line, 10_000).await.unwrap();
        assert_eq!(found, Line::TooLong, "cut off by the end of input");
    }
}
