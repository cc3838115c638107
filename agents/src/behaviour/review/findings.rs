//! A deliberately simple reviewer: scans the added lines of a unified diff for a few patterns.

use serde::Serialize;

/// What a caller can ask the review to focus on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Security,
    Correctness,
    Performance,
    Style,
}

impl Focus {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "security" => Some(Self::Security),
            "correctness" => Some(Self::Correctness),
            "performance" => Some(Self::Performance),
            "style" => Some(Self::Style),
            _ => None,
        }
    }
}

/// One review comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub file: String,
    pub line: u64,
    pub severity: &'static str,
    pub message: &'static str,
}

struct Rule {
    needle: &'static str,
    focus: Focus,
    severity: &'static str,
    message: &'static str,
}

const RULES: [Rule; 6] = [
    Rule {
        needle: "unsafe ",
        focus: Focus::Security,
        severity: "error",
        message: "unsafe code needs a SAFETY comment and a careful review",
    },
    Rule {
        needle: ".unwrap()",
        focus: Focus::Correctness,
        severity: "warning",
        message: "unwrap() panics on error; handle or propagate it",
    },
    Rule {
        needle: ".expect(",
        focus: Focus::Correctness,
        severity: "warning",
        message: "expect() panics on error; handle or propagate it",
    },
    Rule {
        needle: ".clone()",
        focus: Focus::Performance,
        severity: "info",
        message: "clone() in changed code; check that a borrow would not do",
    },
    Rule { needle: "println!", focus: Focus::Style, severity: "info", message: "consider structured logging" },
    Rule { needle: "TODO", focus: Focus::Style, severity: "info", message: "unresolved TODO" },
];

/// The findings a text-only request gets (the same as the reference harness agent's).
pub fn examples() -> Vec<Finding> {
    vec![
        Finding {
            file: "src/lib.rs".into(),
            line: 42,
            severity: "warning",
            message: "unwrap() on a Result from user input",
        },
        Finding { file: "src/main.rs".into(), line: 7, severity: "info", message: "consider structured logging" },
    ]
}

/// Findings on the added lines of `diff`, limited to `focus` when it is not empty.
pub fn scan(diff: &str, focus: &[Focus]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut file = String::from("(diff)");
    // Line number in the new file of the next added or context line.
    let mut line: u64 = 1;
    for text in diff.lines() {
        if let Some(path) = text.strip_prefix("+++ ") {
            file = path.strip_prefix("b/").unwrap_or(path).trim().to_owned();
            line = 1;
            continue;
        }
        if let Some(start) = text.strip_prefix("@@ ").and_then(hunk_start) {
            line = start;
            continue;
        }
        match text.as_bytes().first() {
            Some(b'+') => {
                let added = &text[1..];
                let matching = RULES
                    .iter()
                    .filter(|rule| focus.is_empty() || focus.contains(&rule.focus))
                    .filter(|rule| added.contains(rule.needle));
                findings.extend(matching.map(|rule| Finding {
                    file: file.clone(),
                    line,
                    severity: rule.severity,
                    message: rule.message,
                }));
                line += 1;
            }
            // Removed lines and "\ No newline at end of file" are not in the new file.
            Some(b'-' | b'\\') => {}
            _ => line += 1,
        }
    }
    findings
}

/// The new-file start line of a hunk header's `+c,d` range.
fn hunk_start(header: &str) -> Option<u64> {
    let range = header.split_whitespace().find_map(|word| word.strip_prefix('+'))?;
    range.split(',').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -10,3 +10,5 @@ fn main() {
 let a = 1;
-let b = 2;
+let b = input.parse::<u32>().unwrap();
+println!(\"{b}\");
 let c = 3;
+let d = c.clone(); // TODO
";

    #[test]
    fn finds_patterns_on_added_lines_with_new_line_numbers() {
        let found = scan(DIFF, &[]);
        let summary: Vec<_> = found.iter().map(|f| (f.file.as_str(), f.line, f.severity)).collect();
        assert_eq!(
            summary,
            [
                ("src/lib.rs", 11, "warning"),
                ("src/lib.rs", 12, "info"),
                ("src/lib.rs", 14, "info"),
                ("src/lib.rs", 14, "info"),
            ]
        );
    }

    #[test]
    fn focus_limits_the_rules() {
        let found = scan(DIFF, &[Focus::Correctness]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 11);
        assert!(scan(DIFF, &[Focus::Security]).is_empty());
    }

    #[test]
    fn plain_text_counts_lines_from_one() {
        let found = scan("+fine\n+x.unwrap()", &[]);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].file.as_str(), found[0].line), ("(diff)", 2));
    }
}
