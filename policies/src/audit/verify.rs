//! Just over 400 lines: the report types and the checker are one reading of the chain.
//!
//! Checks the hash chain of audit files: every record's `prev` must be the SHA-256 of the line
//! before it, across the files in the order given (oldest first, as [`super::chain_files`] lists
//! them), and every file must begin with a `chain_anchor` record. Reports the first broken link
//! and, where the chain tells, which record was changed or where records went missing.
//!
//! What a hash chain cannot show: removal or change of the newest record (nothing links to it yet)
//! and truncation at the end of the newest file. Ship lines off the host for those.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use super::chain::{ChainKey, Hash, Link, seal_is_valid};

/// The result of [`verify_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The files read, with the records each held (up to the break).
    pub files: Vec<FileSummary>,
    /// Records checked in all files.
    pub records: u64,
    /// How the checked chain begins; `None` when no record was read.
    pub start: Option<ChainStart>,
    /// The first broken link, if any.
    pub broken: Option<BrokenLink>,
    /// Where the log says records were lost (its `audit.dropped` records), in chain order.
    pub gaps: Vec<Gap>,
}

/// Records the log could not keep, as its `audit.dropped` record at `file`:`line` states them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub file: PathBuf,
    pub line: u64,
    pub count: u64,
    /// `queue_full` or `write_failed`.
    pub cause: String,
    /// When the first and the last lost record were made (RFC 3339), when the log knows.
    pub first_ts: Option<String>,
    pub last_ts: Option<String>,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {} record(s) lost ({})", self.file.display(), self.line, self.count, self.cause)?;
        match (&self.first_ts, &self.last_ts) {
            (Some(first), Some(last)) => write!(f, ", made from {first} to {last}"),
            _ => Ok(()),
        }
    }
}

#[derive(serde::Deserialize)]
struct DroppedFields {
    event: String,
    count: u64,
    #[serde(default)]
    cause: Option<String>,
    #[serde(default)]
    first_ts: Option<String>,
    #[serde(default)]
    last_ts: Option<String>,
}

impl VerifyReport {
    fn empty() -> VerifyReport {
        VerifyReport { files: Vec::new(), records: 0, start: None, broken: None, gaps: Vec::new() }
    }

    pub fn is_ok(&self) -> bool {
        self.broken.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    pub path: PathBuf,
    pub records: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainStart {
    /// The first record is the log's genesis anchor: nothing came before.
    Genesis,
    /// The first record links to a record that was not checked, e.g. in a rotated file that has
    /// since been removed (named when the anchor says).
    Continues { prev_file: Option<String> },
}

/// Where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    pub file: PathBuf,
    /// 1-based line in `file` (0 when the file could not be opened).
    pub line: u64,
    /// 1-based position of the record among all records checked, across files.
    pub record: u64,
    pub problem: Problem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The file could not be read.
    Unreadable(String),
    /// The file holds no line at all.
    Empty,
    /// The line is not a record with `seq` and `prev` (edited, or torn by a crash mid-write).
    NotARecord,
    /// The file does not begin with a `chain_anchor` record.
    NotAnchored,
    /// This record's bytes differ from what the next record's `prev` holds: it was changed.
    Altered,
    /// Records are missing right before this one: its `seq` jumps past them.
    Missing { count: u64 },
    /// This record's `prev` matches no record before it: records were reordered or inserted, or
    /// the files were given out of chain order.
    Unlinked,
    /// A `chain_seal` whose `mac` does not match (forged, edited, or the wrong key).
    ForgedSeal,
    /// The file does not end with a `chain_seal`: records were cut off its end (or, for the
    /// active file of a running gateway, it is still open: verify with `--open`).
    Unsealed,
    /// The log is keyed and no key was given.
    KeyNeeded,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unreadable(error) => write!(f, "cannot read the file: {error}"),
            Problem::Empty => f.write_str("the file holds no records"),
            Problem::NotARecord => f.write_str("not an audit record (edited, or torn by a crash mid-write)"),
            Problem::NotAnchored => f.write_str("the file does not begin with a chain_anchor record"),
            Problem::Altered => f.write_str("altered: the next record's prev does not match this record's hash"),
            Problem::Missing { count } => write!(f, "{count} record(s) missing right before this one"),
            Problem::Unlinked => f.write_str(
                "prev matches no record before it (records reordered or inserted, or files out of chain order)",
            ),
            Problem::ForgedSeal => {
                f.write_str("the chain_seal's mac does not match (forged or edited, or another key)")
            }
            Problem::Unsealed => {
                f.write_str("the file does not end with a chain_seal: records were cut off (a live log: use --open)")
            }
            Problem::KeyNeeded => f.write_str("the chain is keyed: give its key (audit.chain_key)"),
        }
    }
}

impl fmt::Display for BrokenLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: record {}: {}", self.file.display(), self.line, self.record, self.problem)
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.broken {
            Some(broken) => write!(f, "BROKEN at {broken}"),
            None => {
                write!(f, "OK: {} records in {} file(s)", self.records, self.files.len())?;
                match &self.start {
                    Some(ChainStart::Continues { prev_file: Some(name) }) => {
                        write!(f, "; the chain continues from {name}, which was not checked")
                    }
                    Some(ChainStart::Continues { prev_file: None }) => {
                        f.write_str("; the chain continues from a record that was not checked")
                    }
                    _ => Ok(()),
                }?;
                if !self.gaps.is_empty() {
                    let lost: u64 = self.gaps.iter().map(|g| g.count).sum();
                    write!(f, "; the log records {lost} lost record(s) in {} gap(s):", self.gaps.len())?;
                    for gap in &self.gaps {
                        write!(f, "\n  {gap}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// How to check: the chain's key, and whether the last file may still be open (a running gateway's
/// active file has no closing seal yet).
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub key: ChainKey,
    pub open: bool,
}

/// Checks an unkeyed log whose last file may be open.
pub fn verify_files(paths: &[PathBuf]) -> VerifyReport {
    verify_files_with(paths, &VerifyOptions { key: ChainKey::default(), open: true })
}

/// Checks every link in `paths`, in order, and stops at the first broken one: every link (keyed
/// with `options.key`), every seal's mac, and that every file but an open last one ends sealed.
pub fn verify_files_with(paths: &[PathBuf], options: &VerifyOptions) -> VerifyReport {
    let mut report = check_links(paths, options);
    if report.broken.is_none() {
        report.broken = check_seals(paths, options);
    }
    report
}

/// Each file must end with a valid seal (the last one only when not `open`).
fn check_seals(paths: &[PathBuf], options: &VerifyOptions) -> Option<BrokenLink> {
    let mut record = 0u64;
    for (i, path) in paths.iter().enumerate() {
        let lines = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) => {
                return Some(BrokenLink {
                    file: path.clone(),
                    line: 0,
                    record,
                    problem: Problem::Unreadable(error.to_string()),
                });
            }
        };
        let lines: Vec<&[u8]> = lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
        record += lines.len() as u64;
        let last = lines.last().copied().unwrap_or_default();
        let sealed = Link::parse(last).is_some_and(|l| l.seal);
        let at = |problem| BrokenLink { file: path.clone(), line: lines.len() as u64, record, problem };
        if sealed && !seal_is_valid(last, &options.key) {
            return Some(at(Problem::ForgedSeal));
        }
        let may_be_open = options.open && i + 1 == paths.len();
        if !sealed && !may_be_open {
            return Some(at(Problem::Unsealed));
        }
    }
    None
}

fn check_links(paths: &[PathBuf], options: &VerifyOptions) -> VerifyReport {
    let mut report = VerifyReport::empty();
    let mut reader = Reader::new(paths, options.key.clone());
    // The two records before the current one: enough to tell which side of a break changed.
    let mut before: Option<Entry> = None;
    let mut last: Option<Entry> = None;
    loop {
        let entry = match reader.next(&mut report) {
            Ok(Some(entry)) => entry,
            Ok(None) => break,
            Err(broken) => {
                report.broken = Some(broken);
                break;
            }
        };
        report.records = entry.record;
        let Some(link) = &entry.link else {
            report.broken = Some(reader.broken_at(&entry, Problem::NotARecord));
            break;
        };
        if entry.line == 1 && !link.anchor {
            report.broken = Some(reader.broken_at(&entry, Problem::NotAnchored));
            break;
        }
        if link.anchor && link.keyed && !options.key.is_keyed() {
            report.broken = Some(reader.broken_at(&entry, Problem::KeyNeeded));
            break;
        }
        if link.seal && !seal_is_valid(reader.line_bytes(), &options.key) {
            report.broken = Some(reader.broken_at(&entry, Problem::ForgedSeal));
            break;
        }
        if let Some(gap) = reader.gap(&entry) {
            report.gaps.push(gap);
        }
        match &last {
            None => {
                report.start = Some(if link.anchor && link.prev == [0; 32] && link.prev_file.is_none() {
                    ChainStart::Genesis
                } else {
                    ChainStart::Continues { prev_file: link.prev_file.clone() }
                });
            }
            Some(previous) if previous.hash != link.prev => {
                // One record of lookahead, not counted in the report: it only sharpens the blame.
                let next = reader.next(&mut VerifyReport::empty()).ok().flatten();
                let (blamed, problem) = diagnose(before.as_ref(), previous, &entry, next.as_ref());
                report.broken = Some(reader.broken_at(blamed, problem));
                break;
            }
            Some(_) => {}
        }
        before = last.take();
        last = Some(entry);
    }
    report
}

/// Which record a broken link between `a` and `b` points at.
fn diagnose<'e>(before: Option<&Entry>, a: &'e Entry, b: &'e Entry, next: Option<&Entry>) -> (&'e Entry, Problem) {
    let (Some(la), Some(lb)) = (&a.link, &b.link) else { return (b, Problem::Unlinked) };
    // If the record after `b` does not link to `b` either, `b` itself changed (e.g. its `prev`).
    if let Some(Some(lc)) = next.map(|c| &c.link)
        && lc.prev != b.hash
    {
        return (b, Problem::Altered);
    }
    let a_seq_intact = match before.and_then(|e| e.link.as_ref()) {
        Some(l) => la.seq == l.seq.wrapping_add(1),
        None => true,
    };
    if lb.seq == la.seq.wrapping_add(1) || !a_seq_intact {
        (a, Problem::Altered)
    } else if lb.seq > la.seq {
        (b, Problem::Missing { count: lb.seq - la.seq - 1 })
    } else {
        (b, Problem::Unlinked)
    }
}

struct Entry {
    file: usize,
    /// 1-based line in its file.
    line: u64,
    /// 1-based position across files.
    record: u64,
    hash: Hash,
    link: Option<Link>,
}

/// Reads the lines of the files one after the other.
struct Reader<'p> {
    paths: &'p [PathBuf],
    key: ChainKey,
    file: usize,
    current: Option<BufReader<File>>,
    line: u64,
    record: u64,
    buf: Vec<u8>,
}

impl<'p> Reader<'p> {
    fn new(paths: &'p [PathBuf], key: ChainKey) -> Reader<'p> {
        Reader { paths, key, file: 0, current: None, line: 0, record: 0, buf: Vec::new() }
    }

    /// The bytes of the line read last.
    fn line_bytes(&self) -> &[u8] {
        &self.buf
    }

    fn path(&self, file: usize) -> &Path {
        &self.paths[file]
    }

    /// The loss the line read last reports, if it is an `audit.dropped` record.
    fn gap(&self, entry: &Entry) -> Option<Gap> {
        let needle: &[u8] = b"\"event\":\"audit.dropped\"";
        if !self.buf.windows(needle.len()).any(|w| w == needle) {
            return None;
        }
        let fields: DroppedFields = serde_json::from_slice(&self.buf).ok()?;
        (fields.event == "audit.dropped").then(|| Gap {
            file: self.path(entry.file).to_path_buf(),
            line: entry.line,
            count: fields.count,
            cause: fields.cause.unwrap_or_else(|| "queue_full".into()),
            first_ts: fields.first_ts,
            last_ts: fields.last_ts,
        })
    }

    fn broken_at(&self, entry: &Entry, problem: Problem) -> BrokenLink {
        BrokenLink { file: self.path(entry.file).to_path_buf(), line: entry.line, record: entry.record, problem }
    }

    fn next(&mut self, report: &mut VerifyReport) -> Result<Option<Entry>, BrokenLink> {
        loop {
            if self.current.is_none() {
                if self.file >= self.paths.len() {
                    return Ok(None);
                }
                let path = self.path(self.file).to_path_buf();
                let file = File::open(&path).map_err(|e| self.unreadable(0, e))?;
                self.current = Some(BufReader::new(file));
                self.line = 0;
                report.files.push(FileSummary { path, records: 0 });
            }
            self.buf.clear();
            let read = match self.current.as_mut().map(|r| r.read_until(b'\n', &mut self.buf)) {
                Some(Ok(read)) => read,
                Some(Err(error)) => return Err(self.unreadable(self.line + 1, error)),
                None => 0,
            };
            if read == 0 {
                if self.line == 0 {
                    return Err(BrokenLink {
                        file: self.path(self.file).to_path_buf(),
                        line: 1,
                        record: self.record + 1,
                        problem: Problem::Empty,
                    });
                }
                self.current = None;
                self.file += 1;
                continue;
            }
            if self.buf.last() == Some(&b'\n') {
                self.buf.pop();
            }
            self.line += 1;
            self.record += 1;
            if let Some(summary) = report.files.last_mut() {
                summary.records += 1;
            }
            return Ok(Some(Entry {
                file: self.file,
                line: self.line,
                record: self.record,
                hash: self.key.hash(&self.buf),
                link: Link::parse(&self.buf),
            }));
        }
    }

    fn unreadable(&self, line: u64, error: std::io::Error) -> BrokenLink {
        BrokenLink {
            file: self.path(self.file).to_path_buf(),
            line,
            record: self.record + 1,
            problem: Problem::Unreadable(error.to_string()),
        }
    }
}
