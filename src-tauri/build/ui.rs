//! The window's page as the app serves it: `ui/` with its modules joined into one script.
//!
//! Each module the page imports is a request to the app, which is busy starting when the page
//! loads; one script is one request. The modules are our own and kept simple enough to join
//! without a JavaScript toolchain: each import on one line (`import { a, b } from './x.js';` or
//! `import './x.js';`), exports only as `export function|async function|const|class NAME`, no
//! cycles, one flat folder. A small scanner tells code from comments, strings and templates, so
//! an `export` in a comment stays one, and an import or export anywhere but the start of a line
//! at the top level is seen. Each module keeps its own scope (a function run once, in the order
//! the browser would run the modules) and hands its exports over as constants, which is what an
//! import of a function, a class or a `const` is. Anything else is refused with the file and line, so a
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
    let (script, joined) = join_modules(source, "app.js")?;
    let mut files = vec![("app.js".to_owned(), script.into_bytes())];
    let entries = std::fs::read_dir(source).map_err(|e| format!("{}: {e}", source.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", source.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if entry.path().is_dir() {
            return Err(format!(
                "ui/{name}/ is a folder; the page is one folder, and the joiner would leave it out"
            ));
        }
        if name.ends_with(".js") {
            if !joined.contains(&name) {
                return Err(format!(
                    "ui/{name}: no module imports it (from app.js), so the page would not have it"
                ));
            }
            continue;
        }
        if !entry.path().is_file() {
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

/// `entry` (e.g. `app.js`) and every module it imports, read from `dir`, as one script, and the
/// modules joined, in the order they run.
pub fn join_modules(dir: &Path, entry: &str) -> Result<(String, Vec<String>), String> {
    let mut modules = BTreeMap::new();
    let mut order = Vec::new();
    visit(dir, entry, &mut Vec::new(), &mut modules, &mut order)?;
    let mut bindings = BTreeMap::new();
    for file in &order {
        if let Some(other) = bindings.insert(binding(file), file) {
            return Err(format!(
                "ui/{other} and ui/{file} would both be {}; rename one",
                binding(file)
            ));
        }
    }
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
    Ok((script, order))
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
    // A browser reads a script's byte order mark as its encoding, not as code.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut module = Module {
        head: String::new(),
        body: String::with_capacity(text.len()),
        imports: Vec::new(),
        exports: BTreeSet::new(),
        wants: Vec::new(),
    };
    let lines: Vec<&str> = text.split('\n').collect();
    // The lines that are an import or an export, and where its word starts.
    let mut statements = BTreeMap::new();
    for word in scan(file, text)? {
        let number = word.line + 1;
        let refuse = |what: &str| {
            let line = lines.get(word.line).map_or("", |l| l.trim());
            format!("ui/{file}:{number}: {what}: {line}")
        };
        if word.before == Some(b'.') || word.after == Some(b':') {
            continue; // a property (`x.import`, `{ import: 1 }`), anyone's
        }
        if word.text.starts_with("ui_") {
            return Err(refuse(
                "a name starting ui_, which the joiner keeps for modules",
            ));
        }
        if word.text == "import" && matches!(word.after, Some(b'(' | b'.')) {
            return Err(refuse(
                "a dynamic import or import.meta, which one script cannot keep",
            ));
        }
        if !(word.first && word.top) {
            return Err(refuse(
                "an import or export that is not at the start of its line at the top level",
            ));
        }
        statements.insert(word.line, (word.text, word.column));
    }
    for (at, line) in lines.iter().enumerate() {
        let number = at + 1;
        let refuse = |what: &str| format!("ui/{file}:{number}: {what}: {}", line.trim());
        match statements.get(&at) {
            Some((keyword, column)) if keyword == "import" => {
                let (names, from) = parse_import(&line[column + "import".len()..])
                    .ok_or_else(|| {
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
            }
            Some((_, column)) => {
                let declaration = line[column + "export".len()..].trim_start();
                let name = export_name(declaration).ok_or_else(|| {
                    refuse("an export the joiner does not take (`export function|async function|const|class NAME`)")
                })?;
                module.exports.insert(name.to_owned());
                module.body.push_str(&line[..*column]);
                module.body.push_str(declaration);
                module.body.push('\n');
            }
            None => {
                module.body.push_str(line);
                module.body.push('\n');
            }
        }
    }
    Ok(module)
}

/// The name `function NAME…`, `async function NAME…`, `const NAME…` or `class NAME…` declares.
fn export_name(declaration: &str) -> Option<&str> {
    let (kind, rest) = declaration.split_once(char::is_whitespace)?;
    let rest = match kind {
        "function" | "const" | "class" => rest,
        "async" => {
            let (kind, rest) = rest.trim_start().split_once(char::is_whitespace)?;
            (kind == "function").then_some(rest)?
        }
        _ => return None,
    };
    let name = rest
        .trim_start()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .next()?;
    identifier(name).then_some(name)
}

/// What follows `import` on its line: ` { a, b } from './x.js';` → (["a", "b"], "x.js");
/// ` './x.js';` → ([], "x.js").
fn parse_import(rest: &str) -> Option<(Vec<String>, String)> {
    let rest = rest.trim().strip_suffix(';')?.trim_end();
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
            (names, from.trim_start().strip_prefix("from")?.trim_start())
        }
        None => (Vec::new(), rest),
    };
    let quote = spec.chars().next().filter(|q| matches!(q, '\'' | '"'))?;
    let spec = spec.strip_prefix(quote)?.strip_suffix(quote)?;
    Some((names, sibling(spec)?.to_owned()))
}

/// A word that matters to the joiner, where the scanner found it in code (not in a comment, a
/// string, a regular expression or a template's text): `import`, `export`, or a name starting
/// `ui_`.
#[derive(Debug)]
struct Word {
    text: String,
    /// Its line, from 0, and its byte column on it.
    line: usize,
    column: usize,
    /// Whether nothing but blanks comes before it on its line.
    first: bool,
    /// Whether it is at the module's top level (no bracket or template open around it).
    top: bool,
    /// The code character just before it, and the next one after it (past blanks and lines).
    before: Option<u8>,
    after: Option<u8>,
}

/// The words after which a `/` starts a regular expression, not a division.
const BEFORE_AN_EXPRESSION: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

/// Reads `text` as JavaScript far enough to tell code from comments, strings, regular
/// expressions and template text, and to know which brackets are open, and returns the words the
/// joiner cares about. It is not a parser: where it could be wrong (a `/` it took for a division
/// that was a regular expression) it is wrong loudly, because a string or a regular expression
/// never runs past the end of its line and the brackets must balance at the end of the module.
fn scan(file: &str, text: &str) -> Result<Vec<Word>, String> {
    let b = text.as_bytes();
    // Where each line starts; a position's line and column follow from it.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(
            b.iter()
                .enumerate()
                .filter(|(_, &c)| c == b'\n')
                .map(|(at, _)| at + 1),
        )
        .collect();
    let line_of = |at: usize| line_starts.partition_point(|&start| start <= at) - 1;
    let lost = |at: usize, what: &str| {
        format!(
            "ui/{file}:{}: {what}; the joiner cannot follow the module here",
            line_of(at) + 1
        )
    };
    let blank = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\x0b');
    let mut words = Vec::new();
    // The closers expected, innermost last, with where each was opened; a '`' is a template's
    // `${`, closed by `}`.
    let mut open: Vec<(u8, usize)> = Vec::new();
    // Whether the last token ends a value (so a `/` after it divides) and its last character.
    let (mut value, mut last) = (false, None);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            c if blank(&c) => {
                i += 1;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr(b, b'\n', i).unwrap_or(b.len());
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = find(b, b"*/", i + 2).ok_or_else(|| lost(start, "a comment not closed"))? + 2;
                continue;
            }
            b'\'' | b'"' => {
                i += 1;
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => {
                            return Err(lost(i, "a string not closed on its line"))
                        }
                        // An escape, also of the line's end (the string goes on to the next).
                        Some(b'\\') => i += 2,
                        Some(&q) if q == c => break,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
                value = true;
            }
            b'`' => {
                (i, value) = template(b, i + 1, &mut open)
                    .ok_or_else(|| lost(start, "a template not closed"))?;
            }
            b'/' if !value => {
                i += 1;
                let mut class = false;
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => {
                            return Err(lost(i, "a regular expression not closed on its line"))
                        }
                        Some(b'\\') => i += 2,
                        Some(b'[') => {
                            class = true;
                            i += 1;
                        }
                        Some(b']') => {
                            class = false;
                            i += 1;
                        }
                        Some(b'/') if !class => break,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
                while b.get(i).is_some_and(|c| c.is_ascii_alphabetic()) {
                    i += 1;
                }
                value = true;
            }
            b'(' | b'[' | b'{' => {
                let closer = match c {
                    b'(' => b')',
                    b'[' => b']',
                    _ => b'}',
                };
                open.push((closer, start));
                i += 1;
                value = false;
            }
            b')' | b']' | b'}' => match open.pop() {
                Some((b'`', at)) if c == b'}' => {
                    (i, value) = template(b, i + 1, &mut open)
                        .ok_or_else(|| lost(at, "a template not closed"))?;
                }
                Some((closer, _)) if closer == c => {
                    i += 1;
                    value = c != b'}';
                }
                _ => return Err(lost(start, "a bracket closed that was not opened")),
            },
            c if c.is_ascii_digit() => {
                while b
                    .get(i)
                    .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
                {
                    i += 1;
                }
                value = true;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 => {
                while b.get(i).is_some_and(|&c| {
                    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
                }) {
                    i += 1;
                }
                let word = &text[start..i];
                if matches!(word, "import" | "export") || word.starts_with("ui_") {
                    let line = line_of(start);
                    let line_start = line_starts[line];
                    words.push(Word {
                        text: word.to_owned(),
                        line,
                        column: start - line_start,
                        first: b[line_start..start].iter().all(blank),
                        top: open.is_empty(),
                        before: last,
                        after: b[i..].iter().find(|c| !blank(c)).copied(),
                    });
                }
                value = !BEFORE_AN_EXPRESSION.contains(&word);
            }
            _ => {
                i += 1;
                value = false;
            }
        }
        last = b.get(i.wrapping_sub(1)).copied();
    }
    if let Some(&(closer, at)) = open.last() {
        let what = if closer == b'`' {
            "a template not closed".to_owned()
        } else {
            format!("a bracket not closed (`{}` expected)", closer as char)
        };
        return Err(lost(at, &what));
    }
    Ok(words)
}

/// Reads a template's text from `i` (just after its '`' or a `}` closing a `${`) either to its
/// end, returning where it ends (after the '`') and `true` (a value), or into a `${`, returning
/// where the code in it starts and `false` (which it records in `open`). `None` if the module
/// ends first.
fn template(b: &[u8], mut i: usize, open: &mut Vec<(u8, usize)>) -> Option<(usize, bool)> {
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            b'`' => return Some((i + 1, true)),
            b'$' if b.get(i + 1) == Some(&b'{') => {
                open.push((b'`', i));
                return Some((i + 2, false));
            }
            _ => i += 1,
        }
    }
}

/// Where `byte` first is in `b` from `from`.
fn memchr(b: &[u8], byte: u8, from: usize) -> Option<usize> {
    b[from..]
        .iter()
        .position(|&c| c == byte)
        .map(|at| from + at)
}

/// Where `needle` first is in `b` from `from`.
fn find(b: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| from + at)
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
        let script = join_modules(dir.path(), "app.js").unwrap().0;
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
                "app.js:2: an import or export that is not at the start of its line at the top level",
            ),
            // What a browser would take, or refuse, that the joiner must not let through as
            // something else.
            (
                "export{ a };\nconst a = 1;\n",
                "app.js:1: an export the joiner does not take",
            ),
            (
                "export\tlet a = 1;\n",
                "app.js:1: an export the joiner does not take",
            ),
            (
                "const m = await import ('./a.js');\n",
                "app.js:1: a dynamic import",
            ),
            (
                "const m = await import\n('./a.js');\n",
                "app.js:1: a dynamic import",
            ),
            (
                "const t = `${import('./a.js')}`;\n",
                "app.js:1: a dynamic import",
            ),
            (
                "export const a = 1; export const b = 2;\n",
                "app.js:1: an import or export that is not at the start",
            ),
            (
                "/* one\ntwo */ const t = `\n`;\nf(); export const a = 1;\n",
                "app.js:4: an import or export that is not at the start",
            ),
            (
                "f(); import './a.js';\n",
                "app.js:1: an import or export that is not at the start",
            ),
            (
                "import { a } from './a.js'; // why\n",
                "app.js:1: an import the joiner does not take",
            ),
            (
                "import { a } from `./a.js`;\n",
                "app.js:1: an import the joiner does not take",
            ),
            // Where the scanner would lose its way, it says so.
            (
                "const s = 'open;\nexport const a = 1;\n",
                "app.js:1: a string not closed on its line",
            ),
            (
                "const t = x\n/ 2 / '\n';\n",
                "app.js:2: a string not closed on its line",
            ),
            (
                "const r = /unclosed;\n",
                "app.js:1: a regular expression not closed on its line",
            ),
            ("/* open\nexport const a = 1;\n", "app.js:1: a comment not closed"),
            ("const t = `open\n", "app.js:1: a template not closed"),
            (
                "f(() => {\n  g();\n",
                "app.js:1: a bracket not closed (`}` expected)",
            ),
            (
                "const t = `a\n${f(`b\n",
                "app.js:2: a template not closed",
            ),
            ("f());\n", "app.js:1: a bracket closed that was not opened"),
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
        // Names that only contain ui_ are anyone's, and so are properties.
        let dir = modules(&[(
            "app.js",
            "const build_ui_now = 1;\nwindow.ui_x = 2;\nlibrary.import(3);\n",
        )]);
        join_modules(dir.path(), "app.js").unwrap();
    }

    #[test]
    fn forms_a_browser_takes_are_joined_as_it_would_run_them() {
        let dir = modules(&[
            (
                "app.js",
                // A byte order mark, and imports without blanks where none are needed.
                "\u{feff}import{a}from'./a.js';\nimport\"./b.js\";\n  import { c } from \"./c.js\" ;\nf(a, c);\n",
            ),
            (
                "a.js",
                "export\tfunction a() {}\n\texport   async\tfunction\tlater() {}\n",
            ),
            ("b.js", "window.b = 1;\n"),
            ("c.js", "export class c {}\n"),
        ]);
        let script = join_modules(dir.path(), "app.js").unwrap().0;
        assert!(script.contains(
            "const ui_a = (() => {\nfunction a() {}\n\tasync\tfunction\tlater() {}\nreturn { a, later };"
        ), "{script}");
        assert!(
            script.contains(
                "const ui_app = (() => {\nconst { a } = ui_a;\nconst { c } = ui_c;\nf(a, c);\n"
            ),
            "{script}"
        );
        assert!(!script.contains('\u{feff}'));
    }

    #[test]
    fn an_import_or_export_in_a_comment_string_or_template_is_text() {
        let text = concat!(
            "import { a } from './a.js';\n",
            "/* Not code:\n",
            "export function gone() {}\n",
            "import { b } from './b.js';\n",
            "*/\n",
            "const t = `\n",
            "export const alsoGone = ${a + 1};\n",
            "import './nowhere.js';\n",
            "`;\n",
            "const s = 'export function no() {}'; // export const nor = 1;\n",
            "const r = /export const [`'\"]/g, half = a / 2 / 3;\n",
            "const q = { import: 1, export: 2 };\n",
            "return /['`]/.test(s);\n",
        );
        let dir = modules(&[("app.js", text), ("a.js", "export const a = 1;\n")]);
        let (script, order) = join_modules(dir.path(), "app.js").unwrap();
        assert_eq!(order, ["a.js", "app.js"]);
        let app = &script[script.find("// ui/app.js").unwrap()..];
        let body = text.split_once('\n').unwrap().1;
        assert_eq!(
            app,
            format!(
                "// ui/app.js\nconst ui_app = (() => {{\nconst {{ a }} = ui_a;\n{}\nreturn {{  }};\n}})();\n",
                body.trim_end()
            )
        );
    }

    #[test]
    fn two_modules_that_would_share_a_name_are_refused() {
        let dir = modules(&[
            ("app.js", "import './new-run.js';\nimport './new_run.js';\n"),
            ("new-run.js", "window.a = 1;\n"),
            ("new_run.js", "window.b = 1;\n"),
        ]);
        assert_eq!(
            join_modules(dir.path(), "app.js").unwrap_err(),
            "ui/new-run.js and ui/new_run.js would both be ui_new_run; rename one"
        );
    }

    #[test]
    fn a_folder_or_a_module_nothing_imports_stops_the_page() {
        let target = tempfile::tempdir().unwrap();
        let source = modules(&[("app.js", "window.a = 1;\n"), ("orphan.js", "1;\n")]);
        let err = write_page(source.path(), &target.path().join("ui")).unwrap_err();
        assert_eq!(
            err,
            "ui/orphan.js: no module imports it (from app.js), so the page would not have it"
        );
        let source = modules(&[("app.js", "window.a = 1;\n")]);
        std::fs::create_dir(source.path().join("icons")).unwrap();
        std::fs::create_dir(source.path().join(".hidden")).unwrap();
        let err = write_page(source.path(), &target.path().join("ui")).unwrap_err();
        assert_eq!(
            err,
            "ui/icons/ is a folder; the page is one folder, and the joiner would leave it out"
        );
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
            join_modules(source.path(), "app.js").unwrap().0
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
        let script = join_modules(&ui, "app.js").unwrap().0;
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
