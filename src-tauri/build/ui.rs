//! The window's page as the app serves it: `ui/` with its modules joined into one script.
//!
//! Each module the page imports is a request to the app, which is busy starting when the page
//! loads; one script is one request. The modules are our own and kept simple enough to join
//! without a JavaScript toolchain: each import on one line (`import { a, b } from './x.js';` or
//! `import './x.js';`), exports only as `export function|async function|const|class NAME`, no
//! cycles. Each module keeps its own scope (a function run once, in the order the browser would
//! run the modules) and hands its exports over as constants, which is what an import of a
//! function, a class or a `const` is. Anything else is refused with the file and line, so a
//! module the joiner does not understand stops the build instead of misbehaving.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// Writes the page as `tauri.conf.json`'s `frontendDist` names it (`out`): every file of
/// `source` but its modules, which are joined into `app.js`, and no hidden file (an editor's
/// swap file is not the page: everything in `out` ships). A file is written only when it
/// changed (its time is what Cargo compares), whole, by a rename from beside `out` (a build
/// beside this one reads whole files, and never finds one half written in `out`); what is no
/// longer in `source` goes.
pub fn write_page(source: &Path, out: &Path) -> Result<(), String> {
    println!("cargo:rerun-if-changed={}", source.display());
    let mut files = vec![(
        "app.js".to_owned(),
        join_modules(source, "app.js")?.into_bytes(),
    )];
    let entries = std::fs::read_dir(source).map_err(|e| format!("{}: {e}", source.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", source.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".js") || name.starts_with('.') || !entry.path().is_file() {
            continue;
        }
        let bytes = std::fs::read(entry.path()).map_err(|e| format!("{name}: {e}"))?;
        files.push((name, bytes));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let beside = out.parent().unwrap_or(out);
    for (name, bytes) in &files {
        let path = out.join(name);
        if std::fs::read(&path).ok().as_ref() == Some(bytes) {
            continue;
        }
        let temporary = beside.join(format!(".page-{name}.{}", std::process::id()));
        std::fs::write(&temporary, bytes)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&temporary);
                format!("{}: {e}", path.display())
            })?;
    }
    let present = std::fs::read_dir(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for entry in present.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !files.iter().any(|(kept, _)| *kept == name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}

/// One module, read and checked.
#[derive(Debug)]
struct Module {
    /// Its imports, as constants taken from the modules' exports.
    head: String,
    /// Its body, `export ` taken off.
    body: String,
    /// The modules it imports, in order.
    imports: Vec<String>,
    /// What it exports.
    exports: BTreeSet<String>,
    /// What it imports from each module: (file, names, line).
    wants: Vec<(String, Vec<String>, usize)>,
}

/// `entry` (e.g. `app.js`) and every module it imports, read from `dir`, as one script.
pub fn join_modules(dir: &Path, entry: &str) -> Result<String, String> {
    let mut modules = BTreeMap::new();
    let mut order = Vec::new();
    visit(dir, entry, &mut Vec::new(), &mut modules, &mut order)?;
    for (file, module) in &modules {
        for (from, names, line) in &module.wants {
            let exports = &modules[from].exports;
            if let Some(missing) = names.iter().find(|n| !exports.contains(*n)) {
                return Err(format!(
                    "ui/{file}:{line}: imports {missing} from ./{from}, which does not export it"
                ));
            }
        }
    }
    let mut script = format!(
        "// The modules of ui/ joined by src-tauri/build/ui.rs, each in its own scope, in the\n\
         // order the browser runs them (from {entry}).\n"
    );
    for file in &order {
        let module = &modules[file];
        let exports = module.exports.iter().cloned().collect::<Vec<_>>();
        let _ = write!(
            script,
            "\n// ui/{file}\nconst {} = (() => {{\n{}{}\nreturn {{ {} }};\n}})();\n",
            binding(file),
            module.head,
            module.body.trim_end(),
            exports.join(", ")
        );
    }
    Ok(script)
}

/// Reads `file` and, first, what it imports (depth first: the browser's order).
fn visit(
    dir: &Path,
    file: &str,
    path: &mut Vec<String>,
    modules: &mut BTreeMap<String, Module>,
    order: &mut Vec<String>,
) -> Result<(), String> {
    if let Some(at) = path.iter().position(|f| f == file) {
        let cycle = path[at..].join(" → ");
        return Err(format!(
            "ui/{file}: imports itself through {cycle} → {file}"
        ));
    }
    if modules.contains_key(file) {
        return Ok(());
    }
    let text = std::fs::read_to_string(dir.join(file))
        .map_err(|e| format!("cannot read ui/{file}: {e}"))?;
    let module = parse(file, &text)?;
    path.push(file.to_owned());
    for import in &module.imports {
        visit(dir, import, path, modules, order)?;
    }
    path.pop();
    modules.insert(file.to_owned(), module);
    order.push(file.to_owned());
    Ok(())
}

/// The constant a module's exports are kept in: `new-run.js` → `ui_new_run`.
fn binding(file: &str) -> String {
    let stem = file.strip_suffix(".js").unwrap_or(file);
    format!("ui_{}", stem.replace('-', "_"))
}

/// Whether `line` has a name starting `ui_` (the joiner's names for modules).
fn mentions_binding(line: &str) -> bool {
    line.match_indices("ui_").any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    })
}

/// Whether `name` is a plain identifier.
fn identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `./x.js`, a module beside this one, as `x.js`.
fn sibling(spec: &str) -> Option<&str> {
    let name = spec.strip_prefix("./")?;
    let stem = name.strip_suffix(".js")?;
    (!stem.is_empty()
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then_some(name)
}

fn parse(file: &str, text: &str) -> Result<Module, String> {
    let mut module = Module {
        head: String::new(),
        body: String::with_capacity(text.len()),
        imports: Vec::new(),
        exports: BTreeSet::new(),
        wants: Vec::new(),
    };
    for (at, line) in text.lines().enumerate() {
        let number = at + 1;
        let refuse = |what: &str| format!("ui/{file}:{number}: {what}: {}", line.trim());
        if line.contains("import(") || line.contains("import.meta") {
            return Err(refuse(
                "a dynamic import or import.meta, which one script cannot keep",
            ));
        }
        if mentions_binding(line) {
            return Err(refuse(
                "a name starting ui_, which the joiner keeps for modules",
            ));
        }
        if let Some(rest) = line.strip_prefix("import ") {
            let (names, from) = parse_import(rest).ok_or_else(|| {
                refuse("an import the joiner does not take (one line: `import { a, b } from './x.js';` or `import './x.js';`)")
            })?;
            if !module.imports.contains(&from) {
                module.imports.push(from.clone());
            }
            if !names.is_empty() {
                let _ = writeln!(
                    module.head,
                    "const {{ {} }} = {};",
                    names.join(", "),
                    binding(&from)
                );
                module.wants.push((from, names, number));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("export ") {
            let name = ["function ", "async function ", "const ", "class "]
                .iter()
                .find_map(|kind| rest.strip_prefix(kind))
                .map(|after| {
                    after
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                        .next()
                        .unwrap_or_default()
                })
                .filter(|name| identifier(name))
                .ok_or_else(|| {
                    refuse("an export the joiner does not take (`export function|async function|const|class NAME`)")
                })?;
            module.exports.insert(name.to_owned());
            module.body.push_str(rest);
            module.body.push('\n');
            continue;
        }
        if line.trim_start().starts_with("export ") || line.trim_start().starts_with("import ") {
            return Err(refuse("an import or export not at the start of its line"));
        }
        module.body.push_str(line);
        module.body.push('\n');
    }
    Ok(module)
}

/// `{ a, b } from './x.js';` → (["a", "b"], "x.js"); `'./x.js';` → ([], "x.js").
fn parse_import(rest: &str) -> Option<(Vec<String>, String)> {
    let rest = rest.trim_end().strip_suffix(';')?;
    let (names, spec) = match rest.strip_prefix('{') {
        Some(inner) => {
            let (names, from) = inner.split_once('}')?;
            let names = names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| identifier(n).then(|| n.to_owned()))
                .collect::<Option<Vec<_>>>()?;
            if names.is_empty() {
                return None;
            }
            (names, from.trim().strip_prefix("from")?.trim())
        }
        None => (Vec::new(), rest.trim()),
    };
    let spec = spec.strip_prefix('\'')?.strip_suffix('\'')?;
    Some((names, sibling(spec)?.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn modules_join_in_the_order_the_browser_runs_them_each_once_in_its_own_scope() {
        let dir = modules(&[
            (
                "app.js",
                "// the entry\nimport { greet } from './b.js';\nimport './side-effect.js';\nimport { base } from './a.js';\ngreet(base);\n",
            ),
            ("a.js", "export const base = 1;\nconst hidden = 2;\n"),
            (
                "b.js",
                "import { base } from './a.js';\nexport function greet(n) { return n + base; }\nexport async function later() {}\nexport class Thing {}\n",
            ),
            ("side-effect.js", "window.seen = true;\n"),
        ]);
        let script = join_modules(dir.path(), "app.js").unwrap();
        let order: Vec<_> = script
            .lines()
            .filter_map(|l| l.strip_prefix("// ui/"))
            .collect();
        assert_eq!(order, ["a.js", "b.js", "side-effect.js", "app.js"]);
        assert!(script.contains(
            "// ui/a.js\nconst ui_a = (() => {\nconst base = 1;\nconst hidden = 2;\nreturn { base };\n})();"
        ), "{script}");
        assert!(script.contains(
            "const ui_b = (() => {\nconst { base } = ui_a;\nfunction greet(n) { return n + base; }\nasync function later() {}\nclass Thing {}\nreturn { Thing, greet, later };"
        ), "{script}");
        assert!(
            script.contains("const ui_side_effect = (() => {\nwindow.seen = true;\nreturn {  };")
        );
        assert!(script.contains(
            "const ui_app = (() => {\nconst { greet } = ui_b;\nconst { base } = ui_a;\n// the entry\ngreet(base);\n"
        ), "{script}");
    }

    #[test]
    fn what_the_joiner_does_not_take_stops_the_build_naming_the_file_and_line() {
        for (text, says) in [
            (
                "import {\n  a } from './a.js';\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import * as a from './a.js';\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import { a as b } from './a.js';\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import a from './a.js';\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import { a } from '../a.js';\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import { a } from 'https://x/a.js';\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import { a } from './a.js'\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "x;\nexport default 1;\n",
                "app.js:2: an export the joiner does not take",
            ),
            (
                "export let n = 1;\n",
                "app.js:1: an export the joiner does not take",
            ),
            (
                "export { n };\n",
                "app.js:1: an export the joiner does not take",
            ),
            (
                "if (x) {\n  export function f() {}\n}\n",
                "app.js:2: an import or export not at the start",
            ),
            (
                "const m = await import('./a.js');\n",
                "app.js:1: a dynamic import",
            ),
            (
                "new URL('x', import.meta.url);\n",
                "app.js:1: a dynamic import or import.meta",
            ),
            ("const ui_a = 1;\n", "app.js:1: a name starting ui_"),
            (
                "import { missing } from './a.js';\n",
                "app.js:1: imports missing from ./a.js, which does not export it",
            ),
            ("import './nowhere.js';\n", "cannot read ui/nowhere.js"),
        ] {
            let dir = modules(&[("app.js", text), ("a.js", "export const a = 1;\n")]);
            let err = join_modules(dir.path(), "app.js").unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
        }
        // Names that only contain ui_ are anyone's.
        let dir = modules(&[("app.js", "const build_ui_now = 1;\n")]);
        join_modules(dir.path(), "app.js").unwrap();
    }

    #[test]
    fn the_page_written_is_the_source_joined_without_hidden_or_stale_files() {
        let source = modules(&[
            ("app.js", "import { a } from './a.js';\na;\n"),
            ("a.js", "export const a = 1;\n"),
            (
                "index.html",
                "<script type=\"module\" src=\"app.js\"></script>",
            ),
            (".index.html.swp", "an editor's"),
        ]);
        let target = tempfile::tempdir().unwrap();
        let out = target.path().join("ui");
        std::fs::create_dir_all(&out).unwrap();
        // Left by an earlier page, and by a write that failed.
        std::fs::write(out.join("old.css"), "gone").unwrap();
        std::fs::write(out.join(".app.js.123"), "half").unwrap();
        write_page(source.path(), &out).unwrap();
        let names = |dir: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(&out), ["app.js", "index.html"]);
        assert_eq!(
            names(target.path()),
            ["ui"],
            "no temporary file left beside it"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("app.js")).unwrap(),
            join_modules(source.path(), "app.js").unwrap()
        );
        // Unchanged, a file is not written again: its time is what Cargo compares.
        let written = std::fs::metadata(out.join("index.html"))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_page(source.path(), &out).unwrap();
        let again = std::fs::metadata(out.join("index.html"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(written, again);
    }

    #[test]
    fn a_cycle_is_refused_with_its_path() {
        let dir = modules(&[
            ("app.js", "import './a.js';\n"),
            ("a.js", "import { b } from './b.js';\nexport const a = 1;\n"),
            ("b.js", "import { a } from './a.js';\nexport const b = 2;\n"),
        ]);
        assert_eq!(
            join_modules(dir.path(), "app.js").unwrap_err(),
            "ui/a.js: imports itself through a.js → b.js → a.js"
        );
    }

    #[test]
    fn the_window_joins_every_module_it_imports_once() {
        let ui = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui");
        let script = join_modules(&ui, "app.js").unwrap();
        let joined: BTreeSet<_> = script
            .lines()
            .filter_map(|l| l.strip_prefix("// ui/"))
            .collect();
        let files: BTreeSet<_> = std::fs::read_dir(&ui)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|f| f.ends_with(".js"))
            .collect();
        assert_eq!(joined, files.iter().map(String::as_str).collect());
        assert_eq!(script.matches("\n// ui/").count(), files.len());
    }
}
