//! The MCP server entry: one named `plandesk` that Plandesk did not write is left alone.

use super::*;

#[test]
fn an_mcp_server_named_plandesk_that_we_did_not_write_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    let file = p.project.join(".mcp.json");
    let theirs = json!({"mcpServers": {
        "other": {"command": "other-mcp"},
        "plandesk": {"command": "npx", "args": ["plandesk-cloud", "--token", "t"]},
    }});
    write_with_mode(&file, &theirs.to_string(), 0o600);
    let removed = plan(Target::Mcp, true, &p).unwrap();
    assert!(
        !removed.changes_anything(),
        "uninstall leaves a server it did not write: {}",
        removed.after
    );
    let err = plan(Target::Mcp, false, &p).unwrap_err().to_string();
    assert!(
        err.contains("mcpServers.plandesk"),
        "install refuses to overwrite it: {err}"
    );

    // Ours, from another binary, with a timeout the person added: kept by install.
    let ours = json!({"mcpServers": {
        "other": {"command": "other-mcp"},
        "plandesk": {"command": "/old/pd", "args": ["mcp", "--workspace", "/w"],
                     "timeout": 86_400_000},
    }});
    write_with_mode(&file, &ours.to_string(), 0o600);
    let installed = settings(&plan(Target::Mcp, false, &p).unwrap());
    assert_eq!(installed["mcpServers"]["plandesk"]["timeout"], 86_400_000);
    assert_eq!(
        installed["mcpServers"]["plandesk"]["command"],
        "/opt/Plan Desk/plandesk"
    );
    let removed = settings(&plan(Target::Mcp, true, &p).unwrap());
    assert_eq!(
        removed,
        json!({"mcpServers": {"other": {"command": "other-mcp"}}}),
        "uninstall takes out ours only"
    );
}

/// A project's `.mcp.json` that links out of the project (a cloned repository's, pointing at
/// the person's own settings) is refused; one linking to a file inside the project is written.
#[test]
fn an_mcp_json_linking_out_of_the_project_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = places(dir.path());
    std::fs::create_dir_all(&p.project).unwrap();
    let file = p.project.join(".mcp.json");
    let elsewhere = dir.path().join("home/.claude.json");
    write_with_mode(&elsewhere, "{}", 0o600);
    for target in [elsewhere.clone(), dir.path().join("home/not-yet.json")] {
        let _ = std::fs::remove_file(&file);
        std::os::unix::fs::symlink(&target, &file).unwrap();
        let err = plan(Target::Mcp, false, &p).unwrap_err().to_string();
        assert!(err.contains("outside the project"), "{err}");
    }
    let own = p.project.join("config/mcp.json");
    write_with_mode(&own, "{}", 0o600);
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("config/mcp.json", &file).unwrap();
    let installed = settings(&plan(Target::Mcp, false, &p).unwrap());
    assert_eq!(installed["mcpServers"]["plandesk"]["args"][0], "mcp");
}
