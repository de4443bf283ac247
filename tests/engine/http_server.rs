//! A real HTTP/1.1 server on 127.0.0.1 that replays scripted answers to whatever process calls it
//! (the `plandesk` binary, or the engine in this test process) and records every request.
//! Answers are sent chunked, a piece at a time, so a stream can pause, stall, or be cut off.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One piece of an answer body.
#[derive(Debug, Clone)]
pub enum Part {
    Bytes(Vec<u8>),
    /// Keep the connection open, sending nothing, until the client closes it.
    Stall,
    /// Drop the connection without ending the chunked body.
    Cut,
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub parts: Vec<Part>,
}

impl Reply {
    /// A 200 event stream, one server-sent event per chunk.
    pub fn sse(body: &str) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            parts: split_events(body)
                .into_iter()
                .map(|e| Part::Bytes(e.into_bytes()))
                .collect(),
        }
    }

    /// The first `events` events of `body`, then `tail` (a stall or a cut).
    pub fn sse_then(body: &str, events: usize, tail: Part) -> Self {
        let mut reply = Self::sse(body);
        reply.parts.truncate(events);
        reply.parts.push(tail);
        reply
    }

    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            parts: vec![Part::Bytes(body.to_string().into_bytes())],
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

fn split_events(body: &str) -> Vec<String> {
    body.split_inclusive("\n\n").map(str::to_owned).collect()
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-cased names.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Null` when empty).
    pub body: Value,
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Streams the client closed while the server was stalling.
    closed_by_client: usize,
}

pub struct ReplayServer {
    port: u16,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl ReplayServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let shared = shared.clone();
                std::thread::spawn(move || serve(conn, &shared));
            }
        });
        Self { port, state }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Queues the answer to the next request.
    pub fn push(&self, reply: Reply) -> &Self {
        self.state.0.lock().unwrap().replies.push_back(reply);
        self
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.0.lock().unwrap().requests.clone()
    }

    /// Waits (up to `limit`) for a client to close a stalled stream.
    pub fn wait_client_closed(&self, limit: Duration) -> bool {
        let (lock, signal) = &*self.state;
        let deadline = Instant::now() + limit;
        let mut state = lock.lock().unwrap();
        while state.closed_by_client == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = signal.wait_timeout(state, left).unwrap().0;
        }
        true
    }
}

fn serve(conn: TcpStream, shared: &(Mutex<State>, Condvar)) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let reply = {
        let mut state = shared.0.lock().unwrap();
        state.requests.push(request.clone());
        state.replies.pop_front()
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::json(
            599,
            &serde_json::json!({"error": {"message": format!("no reply scripted for {} {}", request.method, request.path)}}),
        )
    });
    let mut out = conn;
    let mut head = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    if out.write_all(head.as_bytes()).is_err() {
        return;
    }
    for part in reply.parts {
        match part {
            Part::Bytes(bytes) => {
                let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                chunk.extend_from_slice(&bytes);
                chunk.extend_from_slice(b"\r\n");
                if out.write_all(&chunk).and_then(|_| out.flush()).is_err() {
                    return;
                }
            }
            Part::Stall => {
                // Reads return 0 once the client has closed its end.
                out.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
                let mut byte = [0u8; 1];
                let closed = matches!(reader.read(&mut byte), Ok(0) | Err(_));
                if closed {
                    let mut state = shared.0.lock().unwrap();
                    state.closed_by_client += 1;
                    shared.1.notify_all();
                }
                return;
            }
            Part::Cut => {
                let _ = out.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
    let _ = out.write_all(b"0\r\n\r\n");
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "request body is not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        })
    };
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// A recorded stream from `tests/fixtures/<provider>/<name>.sse`.
pub fn fixture(provider: &str, name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/{provider}/{name}.sse",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
