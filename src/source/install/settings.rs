//! A settings file's JSON: read (nothing or blanks are an empty object, anything but an object
//! is refused), an object made where entries go, empty entries dropped after an uninstall, and
//! the text written back (the file's own, or a backup's, when the JSON is the same).

use std::path::Path;

use rustix::fs::OFlags;
use serde_json::{json, Map, Value};

use super::file::{backups, read};
use super::{file_error, InstallError};

/// On uninstall, how many of the newest backups are compared with the result.
const MAX_BACKUPS_COMPARED: usize = 32;

/// Removes the entry at `path` (keys from the top) if it is an empty list or object, and then
/// each of its parents left empty, so uninstall leaves nothing of what install added.
pub(super) fn drop_empty(value: &mut Value, path: &[&str]) {
    let Some((key, rest)) = path.split_first() else {
        return;
    };
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let Some(child) = map.get_mut(*key) else {
        return;
    };
    drop_empty(child, rest);
    let empty = match child {
        Value::Array(list) => list.is_empty(),
        Value::Object(object) => object.is_empty(),
        _ => false,
    };
    if empty {
        map.remove(*key);
    }
}

/// The text to write for `settings`. The file's own text if its JSON is already that (but for
/// empty entries on `path`), so nothing is rewritten for nothing. On uninstall, the exact bytes
/// of the newest backup whose JSON is the same, so that install then uninstall gives the file
/// back as it was, formatting, key order and all. Otherwise the JSON, pretty-printed.
pub(super) fn finished(
    target: &Path,
    before: Option<&str>,
    settings: &Value,
    uninstall: bool,
    paths: &[&[&str]],
) -> String {
    let same = |text: &str| {
        serde_json::from_str::<Value>(text).is_ok_and(|mut value| {
            for path in paths {
                drop_empty(&mut value, path);
            }
            value == *settings
        })
    };
    if let Some(before) = before.filter(|text| same(text)) {
        return before.to_owned();
    }
    if uninstall {
        for backup in backups(target).into_iter().take(MAX_BACKUPS_COMPARED) {
            // A backup is only a copy: one that cannot be read is passed over.
            if let Ok(Some(existing)) = read(&backup, OFlags::NOFOLLOW) {
                if same(&existing.text) {
                    return existing.text;
                }
            }
        }
    }
    let mut text = serde_json::to_string_pretty(settings).unwrap_or_else(|_| settings.to_string());
    text.push('\n');
    text
}

pub(super) fn parse(file: &Path, text: Option<&str>) -> Result<Value, InstallError> {
    match text {
        None => Ok(json!({})),
        Some(text) if text.trim().is_empty() => Ok(json!({})),
        Some(text) => {
            let value: Value = serde_json::from_str(text).map_err(|e| InstallError::NotJson {
                file: file.to_owned(),
                message: e.to_string(),
            })?;
            if value.is_object() {
                Ok(value)
            } else {
                Err(InstallError::NotJson {
                    file: file.to_owned(),
                    message: "the top level is not an object".into(),
                })
            }
        }
    }
}

pub(super) fn object_at<'v>(
    value: &'v mut Value,
    key: &str,
    file: &Path,
) -> Result<&'v mut Map<String, Value>, InstallError> {
    let not_object = || file_error(file, format!("`{key}` is not an object"));
    let Value::Object(map) = value else {
        return Err(not_object());
    };
    map.entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(not_object)
}
