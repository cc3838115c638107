//! Reading symbol names: the function of a profiler's line, shortened, frames that say nothing,
//! the gateway's own code, and shares summed by crate.

use std::path::Path;

use super::Entry;

/// `file:function [object]` → `function` (or `function [object]` for code without symbols' crate).
pub(super) fn function_name(text: &str) -> String {
    let (body, object) = match text.rfind(" [") {
        Some(at) if text.ends_with(']') => (&text[..at], Some(&text[at + 2..text.len() - 1])),
        _ => (text, None),
    };
    let bytes = body.as_bytes();
    // The file part ends at the first single ':' (Rust paths use '::').
    let mut split = None;
    for i in 0..bytes.len() {
        if bytes[i] == b':' && bytes.get(i + 1) != Some(&b':') && (i == 0 || bytes[i - 1] != b':') {
            split = Some(i);
            break;
        }
    }
    let function = split.map_or(body, |i| &body[i + 1..]);
    let function = shorten(function);
    match object.and_then(|o| Path::new(o).file_name()).and_then(|o| o.to_str()) {
        Some(object) if !object.starts_with("a2a-gateway") => format!("{function} [{object}]"),
        _ => function,
    }
}

/// Keeps long generic names readable.
pub(super) fn shorten(name: &str) -> String {
    const MAX: usize = 140;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        let cut: String = name.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

/// Thread entry points and runtime frames that are ~100% inclusive and say nothing.
pub(super) fn is_frame(name: &str) -> bool {
    ["start_thread", "clone", "_start", "main", "std::rt::", "std::sys::", "__libc_start", "0x"]
        .iter()
        .any(|p| name.starts_with(p))
        || name.contains("thread_start")
        || name.contains("thread::Builder::spawn_unchecked")
        || name.contains("tokio::runtime::blocking")
        || name.contains("tokio::runtime::scheduler::multi_thread::worker::run")
        || name.contains("tokio::runtime::context")
        || name.starts_with("tokio::runtime::task::raw::poll")
        || name.starts_with("tokio::runtime::task::harness::")
        || name.starts_with("tokio::runtime::task::core::")
        || name.starts_with("tokio::runtime::scheduler::")
        || name.contains("std::panicking")
        || name.contains("std::panic::catch_unwind")
        || name.contains("__rust_begin_short_backtrace")
        || name.contains("core::ops::function::FnOnce::call_once")
}

/// The workspace's own code: the gateway, the policies and the types they share.
pub(super) fn is_own(name: &str) -> bool {
    ["a2a_gateway::", "a2a_policies::", "a2a_core::", "a2a_model::"].iter().any(|own| name.contains(own))
}

/// The crate a function belongs to (`<hyper::proto::… as …>::poll` → `hyper`), or its object file.
pub(super) fn crate_of(name: &str) -> String {
    if let Some(at) = name.rfind(" [") {
        return name[at + 2..].trim_end_matches(']').to_string();
    }
    let trimmed = name.trim_start_matches(['<', '&', '*']).trim_start_matches("dyn ").trim_start_matches("mut ");
    let end = trimmed.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(trimmed.len());
    let head = &trimmed[..end];
    if head.is_empty() { "other".into() } else { head.to_string() }
}

pub(super) fn by_crate(entries: &[Entry]) -> Vec<(String, f64)> {
    let mut sums: Vec<(String, f64)> = Vec::new();
    for entry in entries {
        let krate = crate_of(&entry.name);
        match sums.iter_mut().find(|(k, _)| *k == krate) {
            Some((_, sum)) => *sum += entry.percent,
            None => sums.push((krate, entry.percent)),
        }
    }
    sums.sort_by(|a, b| b.1.total_cmp(&a.1));
    sums.truncate(15);
    sums
}
