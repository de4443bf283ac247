//! How WebKitGTK paints the window. With a GPU, it composites the page with OpenGL through
//! DMA-BUF buffers; on a machine with no GPU (a virtual machine, a remote desktop, CI) Mesa
//! emulates the GPU on the CPU (llvmpipe) for that, which costs the web process ~90 MiB and
//! every frame CPU time that the window's IPC then waits behind on a small machine. There,
//! Plandesk asks WebKit not to use the DMA-BUF renderer: it then paints in shared memory, no GL
//! at all. Measured under Xvfb, 2 cores (`./x bench app`, 10 rounds each, same hour): idle
//! 282 → 229 MiB (the GPU-emulating default: 321), suspension → plan on screen p95 58 → 36 ms,
//! click Approve → first chunk p95 35–39 → 30 ms.

use std::ffi::OsString;
use std::path::Path;

/// WebKitGTK's switch for its DMA-BUF renderer, the one Plandesk sets.
pub const DISABLE_DMABUF: &str = "WEBKIT_DISABLE_DMABUF_RENDERER";
/// WebKitGTK's rendering switches: one set by the person is theirs, and then none is touched.
const SWITCHES: [&str; 3] = [
    DISABLE_DMABUF,
    "WEBKIT_DISABLE_COMPOSITING_MODE",
    "WEBKIT_SKIA_ENABLE_CPU_RENDERING",
];

/// Whether WebKit should paint without GL: not if the person set a rendering switch; yes if
/// software GL is forced, or if `dri` (`/dev/dri`) has no render node (no GPU to paint with).
pub fn paint_without_gl(dri: &Path, env: impl Fn(&str) -> Option<OsString>) -> bool {
    if SWITCHES.iter().any(|switch| env(switch).is_some()) {
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
/// `main`, before any thread exists (it sets the environment WebKit reads).
pub fn choose() {
    if cfg!(target_os = "linux") && paint_without_gl(Path::new("/dev/dri"), |k| std::env::var_os(k))
    {
        std::env::set_var(DISABLE_DMABUF, "1");
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
    fn paints_without_gl_only_without_a_gpu_or_when_software_gl_is_forced() {
        let none = tempfile::tempdir().unwrap();
        std::fs::write(none.path().join("card0"), "").unwrap(); // a display device, no render node
        let gpu = tempfile::tempdir().unwrap();
        std::fs::write(gpu.path().join("renderD128"), "").unwrap();
        let missing = none.path().join("no-such-dir");

        assert!(paint_without_gl(none.path(), env(&[])));
        assert!(paint_without_gl(&missing, env(&[])));
        assert!(!paint_without_gl(gpu.path(), env(&[])));
        assert!(paint_without_gl(
            gpu.path(),
            env(&[("LIBGL_ALWAYS_SOFTWARE", "1")])
        ));
        assert!(!paint_without_gl(
            gpu.path(),
            env(&[("LIBGL_ALWAYS_SOFTWARE", "0")])
        ));
        // A switch the person set stands, and the others are left as WebKit's defaults.
        for switch in SWITCHES {
            assert!(
                !paint_without_gl(none.path(), env(&[(switch, "0")])),
                "{switch}"
            );
        }
    }
}
