//! How WebKitGTK paints the window. It paints pages with Skia on the GPU when it can; on a
//! machine with no GPU (a virtual machine, a remote desktop, CI) Mesa emulates one on the CPU
//! (llvmpipe), and that emulation costs the web process ~40 MiB more than painting on the CPU
//! directly, for no speed gained (measured under Xvfb: idle 321 → 283 MiB, the plan's way to
//! the screen unchanged). So with no GPU to paint with, Plandesk asks WebKit to paint on the CPU.

use std::ffi::OsString;
use std::path::Path;

/// WebKitGTK's switch for painting on the CPU. Set by the person, it is theirs: left as it is.
pub const CPU_RENDERING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// Whether WebKit should paint on the CPU: not if the person chose already; yes if software GL
/// is forced, or if `dri` (`/dev/dri`) has no render node (no GPU to paint with).
pub fn paint_on_cpu(dri: &Path, env: impl Fn(&str) -> Option<OsString>) -> bool {
    if env(CPU_RENDERING).is_some() {
        return false;
    }
    let forced_software = env("LIBGL_ALWAYS_SOFTWARE").is_some_and(|v| v == "1" || v == "true");
    forced_software || !has_render_node(dri)
}

fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with("renderD"))
    })
}

/// Makes the choice for this process and the web process it starts. Called first thing in
/// `main`, before any thread exists (it sets the environment the web process inherits).
pub fn choose() {
    if cfg!(target_os = "linux") && paint_on_cpu(Path::new("/dev/dri"), |k| std::env::var_os(k)) {
        std::env::set_var(CPU_RENDERING, "1");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |key| vars.iter().find(|(k, _)| *k == key).map(|(_, v)| v.into())
    }

    #[test]
    fn paints_on_the_cpu_only_without_a_gpu_or_when_software_gl_is_forced() {
        let none = tempfile::tempdir().unwrap();
        std::fs::write(none.path().join("card0"), "").unwrap(); // a display device, no render node
        let gpu = tempfile::tempdir().unwrap();
        std::fs::write(gpu.path().join("renderD128"), "").unwrap();
        let missing = none.path().join("no-such-dir");

        assert!(paint_on_cpu(none.path(), env(&[])));
        assert!(paint_on_cpu(&missing, env(&[])));
        assert!(!paint_on_cpu(gpu.path(), env(&[])));
        assert!(paint_on_cpu(
            gpu.path(),
            env(&[("LIBGL_ALWAYS_SOFTWARE", "1")])
        ));
        assert!(!paint_on_cpu(
            gpu.path(),
            env(&[("LIBGL_ALWAYS_SOFTWARE", "0")])
        ));
        // The person's own setting stands, either way.
        assert!(!paint_on_cpu(none.path(), env(&[(CPU_RENDERING, "0")])));
        assert!(!paint_on_cpu(gpu.path(), env(&[(CPU_RENDERING, "1")])));
    }
}
