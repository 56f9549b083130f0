//! The workspace's architecture, held by the code (ARCHITECTURE.md,
//! "Crates"): it reads the sources and manifests of the workspace and
//! fails, with what to fix, when
//! - a crate depends on a workspace crate that is not below it;
//! - modules inside a crate use each other in a circle, at any level;
//! - a top-level module of `experiments` uses one listed after it in the
//!   layers of its lib.rs;
//! - a file cites a document outside the repository.
//!
//! A module's edges are the `crate::` and `super::` paths of its `use`
//! items and of its code (comments, strings and `#[cfg(test)] mod` blocks
//! left out), each to the deepest file module the path names; an edge
//! between two modules counts between the children of their lowest common
//! ancestor (`world::cpu -> blame` is `world -> blame`), and a module that
//! names its own ancestor or descendant makes no edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace crates and the workspace crates each may depend on
/// (ARCHITECTURE.md: dependencies point down).
const CRATES: &[(&str, &[&str])] = &[
    ("sim", &[]),
    ("models", &["sim"]),
    ("output", &["sim"]),
    ("experiments", &["sim", "models", "output"]),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn crates_depend_only_on_the_crates_below_them() {
    let mut wrong = Vec::new();
    for (krate, allowed) in CRATES {
        let path = root().join(krate).join("Cargo.toml");
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let manifest: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for dep in dependencies(&manifest) {
            let workspace_crate = CRATES.iter().any(|(c, _)| *c == dep);
            if workspace_crate && !allowed.contains(&dep.as_str()) {
                wrong.push(format!(
                    "{krate}/Cargo.toml: `{krate}` depends on `{dep}`; it may depend on {}",
                    if allowed.is_empty() {
                        "no workspace crate".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a crate depends on one that is not below it (sim <- models, output <- experiments):\n{}",
        wrong.join("\n")
    );
}

/// The packages a manifest depends on, in every dependency table (normal,
/// dev, build; also per target).
fn dependencies(manifest: &toml::Table) -> Vec<String> {
    let mut tables = vec![manifest];
    if let Some(toml::Value::Table(targets)) = manifest.get("target") {
        tables.extend(targets.values().filter_map(toml::Value::as_table));
    }
    let mut out = Vec::new();
    for t in tables {
        for section in [
            "dependencies",
            "dev-dependencies",
            "dev_dependencies",
            "build-dependencies",
            "build_dependencies",
        ] {
            let Some(deps) = t.get(section).and_then(toml::Value::as_table) else {
                continue;
            };
            for (name, spec) in deps {
                let package = spec.get("package").and_then(toml::Value::as_str);
                out.push(package.unwrap_or(name).to_string());
            }
        }
    }
    out
}

#[test]
fn modules_do_not_use_each_other_in_a_circle() {
    let mut found = Vec::new();
    for (krate, _) in CRATES {
        let graph = ModGraph::of(&root().join(krate).join("src"));
        for cycle in graph.cycles() {
            let names: Vec<String> = cycle.iter().map(show).collect();
            let mut s = format!("{krate}: {}", names.join(", "));
            for (a, b, from, to) in &graph.edges {
                if cycle.contains(a) && cycle.contains(b) {
                    s += &format!("\n    {} -> {}", show(from), show(to));
                }
            }
            found.push(s);
        }
    }
    assert!(
        found.is_empty(),
        "modules that use each other in a circle (where two need each other, a third below \
         both holds what they share):\n{}",
        found.join("\n")
    );
}

#[test]
fn experiments_modules_use_only_the_layers_below_them() {
    let src = root().join("experiments").join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("experiments/src/lib.rs");
    let layers = listed_modules(&lib);
    let graph = ModGraph::of(&src);
    let top: BTreeSet<&str> = (graph.modules.keys())
        .filter(|m| m.len() == 1)
        .map(|m| m[0].as_str())
        .collect();
    let mut wrong = Vec::new();
    for m in &top {
        if !layers.iter().any(|l| l == m) {
            wrong.push(format!("`{m}` is not in lib.rs's list of layers"));
        }
    }
    for l in &layers {
        if !top.contains(l.as_str()) {
            wrong.push(format!("lib.rs lists `{l}`, which is not a module"));
        }
    }
    let at = |m: &str| layers.iter().position(|l| l == m);
    for (a, b, from, to) in &graph.edges {
        if a.len() == 1 && at(&b[0]) > at(&a[0]) {
            wrong.push(format!(
                "{} -> {}: `{}` uses `{}`, which lib.rs lists after it",
                show(from),
                show(to),
                a[0],
                b[0]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "experiments/src/lib.rs lists the modules in layers, lowest first, and a module uses \
         only those before it:\n{}",
        wrong.join("\n")
    );
}

/// The modules named by the list items of a lib.rs's doc comment
/// (`//!    - [`world`]: ...`), in order.
fn listed_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .filter_map(|l| l.trim_start().strip_prefix("- [`"))
        .filter_map(|l| l.split_once("`]").map(|(name, _)| name.to_string()))
        .collect()
}

#[test]
fn no_file_cites_a_document_outside_the_repository() {
    // Built from pieces, so that this file does not cite them itself.
    let mut needles = vec![["..", "/shared"].concat()];
    for name in ["KERNEL-SEMANTICS", "CASES", "DESIGN", "BENCH-CONVOY"] {
        needles.push(format!("{name}.md"));
    }
    let mut found = Vec::new();
    let root = root();
    for file in text_files(&root) {
        let Ok(text) = fs::read(&file) else { continue };
        if text.contains(&0) {
            continue;
        }
        let Ok(text) = String::from_utf8(text) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            for n in &needles {
                if line.contains(n.as_str()) {
                    let rel = file.strip_prefix(&root).unwrap_or(&file);
                    found.push(format!("{}:{}: `{n}`", rel.display(), i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "files cite documents outside the repository (cite the repository's own, under docs/):\n{}",
        found.join("\n")
    );
}

/// Every file under `dir`, but for `target` and `.git` (and symlinks).
fn text_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => todo.push(e.path()),
                Ok(t) if t.is_file() => out.push(e.path()),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// A module's path in its crate (`["world", "cpu"]`; the root is empty).
type Mod = Vec<String>;

fn show(m: &Mod) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// A crate's file modules and the edges between them.
struct ModGraph {
    modules: BTreeMap<Mod, PathBuf>,
    /// (lifted from, lifted to, from, to): `from` names `to`; the edge
    /// counts between the children `a` and `b` of their lowest common
    /// ancestor.
    edges: BTreeSet<(Mod, Mod, Mod, Mod)>,
}

impl ModGraph {
    fn of(src: &Path) -> ModGraph {
        let mut modules = BTreeMap::new();
        for file in text_files(src) {
            if file.extension().is_some_and(|e| e == "rs") {
                let rel = file.strip_prefix(src).expect("under src");
                modules.insert(module_of(rel), file);
            }
        }
        let mut edges = BTreeSet::new();
        for (m, file) in &modules {
            let text = fs::read_to_string(file).expect("a source file");
            let code = without_test_modules(&strip(&text));
            for path in crate_paths(&code) {
                let Some(mut t) = resolve(m, &path) else {
                    continue;
                };
                while !t.is_empty() && !modules.contains_key(&t) {
                    t.pop();
                }
                let common = m.iter().zip(&t).take_while(|(x, y)| x == y).count();
                if common == m.len() || common == t.len() {
                    continue; // itself, an ancestor or a descendant
                }
                let (a, b) = (m[..=common].to_vec(), t[..=common].to_vec());
                edges.insert((a, b, m.clone(), t));
            }
        }
        ModGraph { modules, edges }
    }

    /// The strongly connected components of more than one lifted module.
    fn cycles(&self) -> Vec<Vec<Mod>> {
        let mut next: BTreeMap<&Mod, BTreeSet<&Mod>> = BTreeMap::new();
        for (a, b, _, _) in &self.edges {
            next.entry(a).or_default().insert(b);
        }
        let reach = |from: &Mod| {
            let mut seen: BTreeSet<&Mod> = BTreeSet::new();
            let mut todo = vec![from];
            while let Some(x) = todo.pop() {
                for &y in next.get(x).into_iter().flatten() {
                    if seen.insert(y) {
                        todo.push(y);
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&Mod, BTreeSet<&Mod>> = next.keys().map(|&m| (m, reach(m))).collect();
        let mut cycles: Vec<Vec<Mod>> = Vec::new();
        for (&m, r) in &reaches {
            if !r.contains(m) || cycles.iter().any(|c| c.contains(m)) {
                continue;
            }
            let comp = r
                .iter()
                .filter(|&&x| reaches.get(x).is_some_and(|rx| rx.contains(m)))
                .map(|&x| x.clone())
                .collect();
            cycles.push(comp);
        }
        cycles
    }
}

/// The module a file under `src` holds: `world/cpu.rs` is `world::cpu`,
/// `world/mod.rs` is `world`, `lib.rs` and `main.rs` the root.
fn module_of(rel: &Path) -> Mod {
    let mut m: Mod = (rel.with_extension("").components())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if m == ["lib"] || m == ["main"] {
        m.clear();
    }
    if m.last().is_some_and(|l| l == "mod") {
        m.pop();
    }
    m
}

/// `path` (`crate::a::b`, `super::super::c`) named in module `m`, from the
/// crate root; `None` for any other path.
fn resolve(m: &Mod, path: &[String]) -> Option<Mod> {
    let mut base = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") => m.clone(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        base.pop();
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// `text` with its comments, string and character literals blanked out.
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        let start = i;
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if at(0) == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if (at(0) == 'r' || (at(0) == 'b' && at(1) == 'r'))
            && (i == 0 || !ident(c[i - 1]))
            && {
                let r = if at(0) == 'b' { 1 } else { 0 };
                let hashes = (1..).take_while(|&k| at(r + k) == '#').count();
                at(r + 1 + hashes) == '"'
            }
        {
            // A raw string: r"..." or r#"..."#, maybe with a b.
            i += if at(0) == 'b' { 2 } else { 1 };
            let hashes = c[i..].iter().take_while(|&&ch| ch == '#').count();
            i += hashes + 1;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"'
                    && c[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&ch| ch == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if at(0) == '\'' && (at(1) == '\\' || at(2) == '\'') {
            // A character literal ('a', '\n', '\''); not a lifetime.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        }
        // Blanked, keeping line breaks.
        let end = i.min(c.len());
        out.extend(
            c[start..end]
                .iter()
                .map(|&ch| if ch == '\n' { '\n' } else { ' ' }),
        );
    }
    out
}

/// `code` (stripped) without its `#[cfg(test)] mod NAME { ... }` blocks.
fn without_test_modules(code: &str) -> String {
    let mut code = code.to_string();
    while let Some(at) = code.find("#[cfg(test)]") {
        let rest = &code[at + "#[cfg(test)]".len()..];
        let after = rest.trim_start();
        let Some(after) = after.strip_prefix("mod ") else {
            // Not a test module: keep it, look further.
            code.replace_range(at..at + 1, " ");
            continue;
        };
        let Some(open) = after.find(['{', ';']) else {
            break;
        };
        if after.as_bytes()[open] == b';' {
            code.replace_range(at..at + 1, " ");
            continue;
        }
        let open = code.len() - after.len() + open;
        let mut depth = 0;
        let mut end = code.len();
        for (k, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        code.replace_range(at..end, "");
    }
    code
}

/// The `crate::` and `super::` paths of `code` (stripped): each leaf of
/// every `use` tree, and every such path in expressions and types.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let word_at = |i: usize| {
        i == 0 || {
            let p = code[..i].chars().next_back().unwrap_or(' ');
            !(p.is_alphanumeric() || p == '_' || p == '$')
        }
    };
    // `use` items.
    let mut from = 0;
    while let Some(k) = code[from..].find("use") {
        let i = from + k;
        from = i + 3;
        let next = code[from..].chars().next().unwrap_or(' ');
        if !word_at(i) || !next.is_whitespace() {
            continue;
        }
        let Some(end) = code[from..].find(';') else {
            break;
        };
        for leaf in use_leaves(&code[from..from + end]) {
            out.push(segments(&leaf));
        }
        from += end;
    }
    // Paths in code: `crate::a::b`, `super::c`.
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(k) = code[from..].find(start) {
            let i = from + k;
            from = i + start.len();
            if !word_at(i) {
                continue;
            }
            let len = code[i..]
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == ':'))
                .unwrap_or(code.len() - i);
            let path = segments(code[i..i + len].trim_end_matches(':'));
            if path.len() > 1 {
                out.push(path);
            }
        }
    }
    out
}

/// The leaves of a `use` tree: `a::{b, c::{d as e, self}}` is `a::b`,
/// `a::c::d`, `a::c`.
fn use_leaves(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let leaf = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![leaf.to_string()];
    };
    let prefix = tree[..open].trim().trim_end_matches("::").trim();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    parts.push(cur);
    let mut out = Vec::new();
    for p in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        for leaf in use_leaves(p) {
            out.push(match (prefix.is_empty(), leaf.as_str()) {
                (true, _) => leaf,
                (false, "self") => prefix.to_string(),
                (false, _) => format!("{prefix}::{leaf}"),
            });
        }
    }
    out
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn the_module_graph_reader_sees_what_it_should() {
    let code = strip(
        "use crate::a::{b, c::{d as e, self}};\n\
         // use crate::hidden;\n\
         let s = \"crate::in_a_string\"; let c = '\"'; let r = r#\"super::raw\"#;\n\
         fn f<'a>(x: &'a super::f::G) -> crate::h::I { todo!() }\n\
         #[cfg(test)]\nmod tests { use crate::only_tests; }\n",
    );
    let code = without_test_modules(&code);
    let paths: Vec<String> = crate_paths(&code).iter().map(|p| p.join("::")).collect();
    // The `use` tree's leaves, then every path in the code (the tree's
    // own prefix among them).
    assert_eq!(
        paths,
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c",
            "crate::a",
            "crate::h::I",
            "super::f::G"
        ]
    );
    let m: Mod = vec!["x".into(), "y".into()];
    assert_eq!(
        resolve(&m, &segments("super::super::z")),
        Some(vec!["z".to_string()])
    );
    assert_eq!(module_of(Path::new("world/mod.rs")), ["world"]);
}
