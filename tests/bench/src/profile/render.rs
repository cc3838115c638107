//! The profile's section of `BENCHMARKS.md`.

use std::fmt::Write as _;

use super::{Entry, Profile};

impl Profile {
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(out, "\n## Profile: {}\n", self.scenario);
        let per_request = self.total as f64 / self.requests.max(1) as f64;
        let _ = writeln!(
            out,
            "Tool: {}. {} requests measured after warm-up; {} counted in all, **{:.0} per request** \
             (all of the gateway's threads, idle work included). Raw profile: `{}`.\n",
            self.tool,
            self.requests,
            group(self.total),
            per_request,
            self.output.strip_prefix(crate::repo_root()).unwrap_or(&self.output).display()
        );
        for note in &self.notes {
            let _ = writeln!(out, "- {note}");
        }
        let _ = writeln!(out, "\nBy crate (self cost summed over all functions):\n");
        let _ = writeln!(out, "| crate / object | % |\n|---|---|");
        for (krate, percent) in &self.by_crate {
            let _ = writeln!(out, "| {krate} | {percent:.1} |");
        }
        let _ = writeln!(out, "\nTop functions by self cost:\n");
        entries_table(out, &self.self_top, per_request, self.requests);
        if !self.own_inclusive.is_empty() {
            let _ = writeln!(
                out,
                "\nThe gateway's own functions by inclusive cost (what each step costs with everything it calls):\n"
            );
            entries_table(out, &self.own_inclusive, per_request, self.requests);
        }
        if !self.inclusive_top.is_empty() {
            let _ = writeln!(out, "\nTop functions by inclusive cost (thread and runtime entry frames left out):\n");
            entries_table(out, &self.inclusive_top, per_request, self.requests);
        }
    }
}

fn entries_table(out: &mut String, entries: &[Entry], _per_request: f64, requests: u64) {
    let _ = writeln!(out, "| % | per request | function |\n|---|---|---|");
    for e in entries {
        let _ = writeln!(
            out,
            "| {:.2} | {:.0} | `{}` |",
            e.percent,
            e.count as f64 / requests.max(1) as f64,
            e.name.replace('|', "\\|").replace('`', "'")
        );
    }
}

pub(super) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
