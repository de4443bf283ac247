//! A PostgreSQL store's URL as a person gives it: checked before it is saved (never with a
//! password), shown without its password, completed with one from PostgreSQL's password
//! file, and the TLS its `sslmode` asks for.

use std::str::FromStr;
use std::sync::Arc;

use tokio_postgres_rustls::MakeRustlsConnect;

use super::describe;
use crate::store::StoreError;

/// TLS for connections the URL's `sslmode` asks for (`prefer` unless it says otherwise; use
/// `sslmode=require` for a server across a network): server certificates are checked against
/// the Mozilla roots.
pub(super) fn tls() -> Result<MakeRustlsConnect, String> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("cannot set up TLS: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The URL schemes that name a PostgreSQL store.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// `url` as a person may see it (no password); a URL that does not parse is not repeated.
pub fn redacted_url(url: &str) -> String {
    match tokio_postgres::Config::from_str(url) {
        Ok(config) => redacted(&config),
        Err(_) => "an unreadable PostgreSQL URL".into(),
    }
}

/// Checks a URL that is about to be saved: a PostgreSQL URL that parses and holds no password.
pub(crate) fn check_saved_url(url: &str) -> Result<(), StoreError> {
    let refused = |message: &str| StoreError::Open {
        path: redacted_url(url).into(),
        message: message.into(),
    };
    if !is_postgres_url(url) {
        return Err(refused(
            "a team store is a PostgreSQL URL: postgres://USER@HOST/DATABASE",
        ));
    }
    let config = tokio_postgres::Config::from_str(url).map_err(|e| refused(&describe(&e)))?;
    if config.get_password().is_some() {
        return Err(refused(
            "the URL holds a password, and Plandesk keeps no passwords in its files: leave it out \
             and put it in PostgreSQL's password file (~/.pgpass) or PGPASSWORD",
        ));
    }
    Ok(())
}

/// The password for `config` when its URL has none: `PGPASSWORD`, else the first matching line
/// of PostgreSQL's password file (`PGPASSFILE`, else `~/.pgpass`), which, like libpq, is only
/// read when nobody else may read it.
pub(super) fn find_password(config: &tokio_postgres::Config) -> Option<String> {
    if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            eprintln!(
                "plandesk: {} is ignored: others may read it (chmod 600 it)",
                file.display()
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(name)) => name.clone(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(_)) | None => "localhost".into(),
        #[cfg(not(unix))]
        None => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = pgpass_fields(line);
            let [h, p, d, u, password] = fields.as_slice() else {
                return None;
            };
            let matches = |field: &str, value: &str| field == "*" || field == value;
            (matches(h, &host) && matches(p, &port) && matches(d, db) && matches(u, user))
                .then(|| password.clone())
        })
}

/// A password file line's five fields (`:` separates them; `\:` and `\\` escape).
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields
                .last_mut()
                .into_iter()
                .for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

/// The URL a person may see: scheme, user, hosts and database, never the password.
pub(super) fn redacted(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(dir) => dir.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_file_lines_split_on_unescaped_colons() {
        assert_eq!(
            pgpass_fields(r"db.example.com:5432:*:ana:pa\:ss\\word:x"),
            ["db.example.com", "5432", "*", "ana", r"pa:ss\word:x"]
        );
        assert_eq!(pgpass_fields("a:b"), ["a", "b"]);
    }

    #[test]
    fn a_saved_url_is_a_postgres_url_without_a_password() {
        assert!(check_saved_url("postgres://ana@db.example.com/plandesk").is_ok());
        let err = check_saved_url("postgres://ana:hunter2@db/plandesk").unwrap_err();
        assert!(err.to_string().contains("~/.pgpass"), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(check_saved_url("mysql://ana@db/x").is_err());
        assert_eq!(
            redacted_url("postgresql://ana:hunter2@db.example.com:6543/team"),
            "postgres://ana@db.example.com:6543/team"
        );
    }
}
