//! A schema change, as both backends keep them: numbered from 1 in the order they apply, each
//! with its SQL in the repository's `migrations/sqlite/` or `migrations/postgres/` (built into
//! the program). Never edit one that has shipped: add another.

pub(super) struct Migration {
    /// Its position in its list, from 1: a store records the last one it applied.
    pub version: i64,
    /// What it does, for the error that says it failed.
    pub name: &'static str,
    pub sql: &'static str,
    /// SQLite only: it rebuilds a table other tables refer to, so foreign keys are off while it
    /// runs (SQLite's documented way to change a table's constraints; ids are kept, so
    /// references hold).
    pub rebuilds: bool,
}

impl Migration {
    pub const fn new(version: i64, name: &'static str, sql: &'static str) -> Self {
        Migration {
            version,
            name,
            sql,
            rebuilds: false,
        }
    }

    pub const fn rebuilding(self) -> Self {
        Migration {
            rebuilds: true,
            ..self
        }
    }
}

/// The SQL of migration file `$file` of database `$db` (`migrations/$db/$file`).
macro_rules! migration_sql {
    ($db:literal, $file:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/migrations/",
            $db,
            "/",
            $file
        ))
    };
}

/// The version of the newest of `migrations` (0 for none).
pub(super) fn latest(migrations: &[Migration]) -> i64 {
    migrations.last().map_or(0, |m| m.version)
}

/// Checks that `migrations` are numbered from 1 in order, and are the files of
/// `migrations/<db>/`, each once, file `NNNN_*.sql` as migration NNNN.
#[cfg(test)]
pub(super) fn assert_listed_in_order(migrations: &[Migration], db: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(db);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), migrations.len(), "every file of {dir:?}, once");
    for (i, (migration, file)) in migrations.iter().zip(&files).enumerate() {
        assert_eq!(migration.version, i as i64 + 1, "{}", migration.name);
        let number = format!("{:04}_", migration.version);
        assert!(
            file.starts_with(&number) && file.ends_with(".sql"),
            "{file}"
        );
        let sql = std::fs::read_to_string(dir.join(file)).unwrap();
        assert_eq!(
            sql, migration.sql,
            "{file} is migration {}",
            migration.version
        );
    }
}
