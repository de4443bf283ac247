//! OpenCode, Kilo CLI and Pi: Plandesk's own script (OpenCode's plugin, which Kilo CLI loads
//! too; Pi's extension) written as a file of its own in the agent's folder, and the check that
//! the agent loads it.

use rustix::fs::OFlags;

use super::file::{read, resolve_links};
use super::{file_error, Change, InstallError, Places, Target};
use crate::source::opencode::Host;

/// OpenCode, Kilo CLI and Pi have no command hooks: a script of Plandesk's own (the plugin, the
/// extension), a file of its own in the agent's plugins or extensions folder, naming this
/// `plandesk` (and the store, if not the default). A file there that Plandesk did not write is
/// left alone; uninstalling removes the file (backed up first).
pub(super) fn plan(
    target: Target,
    uninstall: bool,
    places: &Places,
) -> Result<Change, InstallError> {
    let config = || {
        places
            .config_home
            .clone()
            .unwrap_or_else(|| places.home.join(".config"))
    };
    let (file, script, header, note) = match target {
        Target::OpenCode => (
            config().join("opencode/plugins/plandesk.js"),
            crate::source::opencode::PLUGIN,
            crate::source::opencode::HEADER,
            "OpenCode loads the plugin when it starts: restart it. After you approve, OpenCode \
             still asks whether to switch to its build agent.",
        ),
        Target::Kilo => (
            config().join("kilo/plugins/plandesk.js"),
            crate::source::opencode::PLUGIN,
            crate::source::opencode::HEADER,
            "Kilo CLI loads the plugin when it starts: restart it. After you approve, Kilo still \
             asks \"Ready to implement?\" (in a new session, here, or keep refining).",
        ),
        _ => (
            places
                .pi_dir
                .clone()
                .unwrap_or_else(|| places.home.join(".pi/agent"))
                .join("extensions/plandesk.js"),
            crate::source::pi::EXTENSION,
            crate::source::pi::HEADER,
            "Pi loads the extension when it starts: restart it, then type /plan (or start it with \
             `pi --plan=true`) before asking for a change.",
        ),
    };
    let target = resolve_links(&file)?;
    let before = read(&target, OFlags::empty())?.map(|existing| existing.text);
    if before
        .as_deref()
        .is_some_and(|text| !crate::source::script::is_ours(text, header))
    {
        return Err(file_error(
            &file,
            "a file Plandesk did not write; rename or remove it, then install again",
        ));
    }
    let mut command = vec![places.exe.display().to_string()];
    if let Some(dir) = &places.data_dir {
        command.extend(["--data-dir".to_owned(), dir.display().to_string()]);
    }
    let after = match uninstall {
        true => String::new(),
        false => crate::source::script::filled(script, &command, places.record)
            .ok_or_else(|| file_error(&file, "this plandesk's script has no command line"))?,
    };
    Ok(Change {
        file,
        before,
        after,
        note: (!uninstall).then(|| note.to_owned()),
        target,
        remove: uninstall,
    })
}

/// What a person should know once `change` is made, if anything needs checking: for OpenCode,
/// Kilo CLI and Pi, whether they load Plandesk's script (a plugin OpenCode cannot load is only
/// logged, and plans would go through unreviewed; an extension Pi cannot load keeps Pi from
/// starting).
pub fn check(target: Target, change: &Change) -> Option<String> {
    if change.remove {
        return None;
    }
    let agent = target.source().agent_name();
    let (loaded, how, what) = match target {
        Target::OpenCode | Target::Kilo => {
            let host = match target {
                Target::Kilo => Host::Kilo,
                _ => Host::OpenCode,
            };
            let program = host.program();
            (
                crate::source::opencode::check_loaded(host, &change.target),
                format!("`{program} debug config`"),
                "plugin",
            )
        }
        Target::Pi => (
            crate::source::pi::check_loaded(&change.target),
            "`pi --mode rpc`".to_owned(),
            "extension",
        ),
        _ => return None,
    };
    Some(match loaded {
        Ok(true) => format!("{agent} loads the {what} (checked with {how})."),
        Ok(false) => format!(
            "{agent} did not load the {what} ({how} does not show it): plans would not be \
             reviewed. Look at {agent}'s log."
        ),
        Err(why) => format!("Could not check that {agent} loads the {what}: {why}."),
    })
}
