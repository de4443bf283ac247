//! A real PostgreSQL server for the tests: Debian's `postgresql` (installed by `./x test`),
//! `initdb` in a temporary folder as the unprivileged `postgres` user when the tests run as
//! root, listening on a free loopback port. One server per test process, a fresh database per
//! caller. A watchdog shell stops the server and removes its folder once this process is gone
//! (tests have no teardown hook).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Server {
    port: u16,
    bin: PathBuf,
}

/// The newest PostgreSQL installed, from Debian's versioned folders (or `PLANDESK_PG_BIN`).
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PLANDESK_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect(
            "PostgreSQL is not installed (Debian's `postgresql` package; `./x test` installs it)",
        )
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .expect("no PostgreSQL under /usr/lib/postgresql")
        .1
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// A command for a PostgreSQL program, as `postgres` when this process is root (the server
/// refuses to run as root).
fn pg_command(bin: &std::path::Path, program: &str) -> Command {
    let path = bin.join(program);
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(path);
        command
    } else {
        Command::new(path)
    }
}

/// A port nothing listens on now, on any address of this computer.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start() -> Server {
    let bin = bin_dir();
    let dir = tempfile::Builder::new()
        .prefix("plandesk-pg-")
        .tempdir()
        .unwrap()
        .keep();
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    if is_root() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let chown = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(chown.success(), "chown of {} failed", dir.display());
    }
    let initdb = pg_command(&bin, "initdb")
        .args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
            "-D",
        ])
        .arg(&data)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        initdb.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&initdb.stderr)
    );
    let port = free_port();
    // The server runs under a watchdog: when this test process ends, however it ends, the
    // watchdog stops the server at once and removes its folder.
    // `setpriv` execs the server in its place (runuser would stay in between and swallow the
    // watchdog's signal).
    let run_as = if is_root() {
        "setpriv --reuid=postgres --regid=postgres --init-groups "
    } else {
        ""
    };
    let server_line = format!(
        "{run_as}'{}' -D '{}' -p {port} -k '{}' -c listen_addresses=127.0.0.1 \
         -c max_connections=400 -c shared_buffers=32MB",
        bin.join("postgres").display(),
        data.display(),
        dir.display(),
    );
    let script = format!(
        "{server_line} >'{log}' 2>&1 & pg=$!\n\
         while kill -0 {me} 2>/dev/null && kill -0 $pg 2>/dev/null; do sleep 0.5; done\n\
         kill -QUIT $pg 2>/dev/null; wait $pg; rm -rf '{dir}'",
        log = dir.join("server.log").display(),
        me = std::process::id(),
        dir = dir.display(),
    );
    // Never waited on: it outlives this process on purpose.
    #[allow(clippy::zombie_processes)]
    let _watchdog = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args([
                "-q",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-p",
                &port.to_string(),
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ready {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "PostgreSQL did not start: {}",
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Server { port, bin }
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(start)
}

/// Runs SQL on the database `url` names (on the test server), as its superuser: how it went.
pub fn sql_on(url: &str, sql: &str) -> Output {
    Command::new(server().bin.join("psql"))
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .unwrap()
}

/// Runs SQL on the server's `postgres` database, expecting it to work.
pub fn psql(sql: &str) {
    let url = format!("postgres://postgres@127.0.0.1:{}/postgres", server().port);
    let out = sql_on(&url, sql);
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new, empty database on the test server: its URL.
pub fn database() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    // One server per test process: a counter names its databases apart.
    let name = format!(
        "t_{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    psql(&format!("CREATE DATABASE {name}"));
    format!("postgres://postgres@127.0.0.1:{}/{name}", server().port)
}

/// Everything a database holds, as `pg_dump` writes it (to look for what must never be stored).
pub fn dump(url: &str) -> Vec<u8> {
    let out = Command::new(server().bin.join("pg_dump"))
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
