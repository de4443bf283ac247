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
