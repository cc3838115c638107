//! The crate's top-level modules form layers: no module reaches itself through `crate::<module>`
//! references. Plain text scanning of `src/`: a file's top-level module is the first component of
//! its path; comments and tests (`tests.rs` files, `tests/` directories and what follows
//! `#[cfg(test)]` + `mod tests`) are left out. `super::` paths stay inside a module.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// from → to → the files of `from` that name `to`.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn top_level_modules_have_no_cycle() {
    check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

/// The workspace's other crates, likewise.
#[test]
fn the_other_crates_modules_have_no_cycle_either() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["core", "model", "policies", "agents", "tests/bench"] {
        check(&workspace.join(krate).join("src"));
    }
}

/// Panics with the shortest cycle among the top-level modules of the crate whose sources are `src`.
fn check(src: &Path) {
    let (mut graph, mut modules) = (Graph::new(), BTreeSet::new());
    scan(src, src, &mut graph, &mut modules);
    // `crate::install_crypto_provider` and the like are items of the crate root, not modules.
    graph.values_mut().for_each(|targets| targets.retain(|target, _| modules.contains(target)));
    if let Some(cycle) = shortest_cycle(&graph) {
        let mut report = format!("the top-level modules of {} have a cycle: {}\n", src.display(), cycle.join(" -> "));
        for pair in cycle.windows(2) {
            let files: Vec<&str> = graph[&pair[0]][&pair[1]].iter().map(String::as_str).collect();
            report += &format!("  {} -> {}: {}\n", pair[0], pair[1], files.join(", "));
        }
        panic!("{report}");
    }
}

/// Adds the edges of every `.rs` file under `dir`, and its top-level module to `modules`.
fn scan(root: &Path, dir: &Path, graph: &mut Graph, modules: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        if path.is_dir() {
            if name != "tests" {
                scan(root, &path, graph, modules);
            }
            continue;
        }
        let relative = path.strip_prefix(root).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_str().unwrap();
        let module = first.trim_end_matches(".rs");
        if !name.ends_with(".rs") || name == "tests.rs" || ["lib", "main"].contains(&module) {
            continue;
        }
        modules.insert(module.to_string());
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.find("#[cfg(test)]\nmod tests").map_or(&text[..], |at| &text[..at]);
        let shown = format!("src/{}", relative.display());
        for target in crate_references(&without_comments(text)) {
            if target != module {
                let files = graph.entry(module.to_string()).or_default().entry(target).or_default();
                files.insert(shown.clone());
            }
        }
    }
}

/// The source without its comments. Literals are kept (serde's `with = "crate::…"` names code
/// too) but stepped over whole, so that `"http://…"` or `'"'` starts nothing.
fn without_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or(' ');
    let mut code = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if at(i) == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if at(i) == '/' && at(i + 1) == '*' {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && at(i + 1) == '/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        let start = i;
        // r"…", r#"…"#, br"…" (not the end of an identifier like `for"`).
        let raw = at(i) == 'r' && (i == 0 || !is_ident(chars[i - 1]) || chars[i - 1] == 'b');
        let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
        if raw && at(i + 1 + hashes) == '"' {
            i += 2 + hashes;
            while i < chars.len() && !(chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                i += 1;
            }
            i += 1 + hashes;
        } else if at(i) == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if at(i) == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A char literal ('"', '\''); a lifetime ('a) is plain code.
            i += if at(i + 1) == '\\' { 3 } else { 2 };
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            i += 1;
        }
        code.extend(&chars[start..i.min(chars.len())]);
    }
    code
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The top-level modules named by `crate::x…` and `crate::{x…, y…}` paths.
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().last().is_some_and(is_ident) {
            continue; // `a2a_crate::` or the like
        }
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // Split at the group's own commas, not those of nested groups.
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.insert(ident(&group[start..i]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(&group[start..i]));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|name| !name.is_empty() && name != "self");
    found
}

/// The identifier `text` starts with (after white space).
fn ident(text: &str) -> String {
    text.trim_start().chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect()
}

/// The shortest path from a module back to itself, if any: `[a, b, …, a]`.
fn shortest_cycle(graph: &Graph) -> Option<Vec<String>> {
    let mut best: Option<Vec<String>> = None;
    for start in graph.keys() {
        // Breadth first from `start`, remembering how each module was reached.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start.as_str()]);
        while let Some(module) = queue.pop_front() {
            let Some(targets) = graph.get(module) else { continue };
            if targets.contains_key(start) {
                let mut path = vec![start.clone()];
                let mut at = module;
                while at != start.as_str() {
                    path.push(at.to_string());
                    at = came_from[at];
                }
                path.push(start.clone());
                path.reverse();
                if best.as_ref().is_none_or(|b| path.len() < b.len()) {
                    best = Some(path);
                }
                break;
            }
            for target in targets.keys() {
                if target != start && !came_from.contains_key(target.as_str()) {
                    came_from.insert(target.as_str(), module);
                    queue.push_back(target);
                }
            }
        }
    }
    best
}
