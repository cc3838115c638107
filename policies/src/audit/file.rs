//! The append-only audit file with size-based rotation. The active file keeps its configured name;
//! when the next record would take it past `max_bytes` it is synced and renamed `<name>.<n>` (n
//! counting up, 8 digits, so names sort in chain order and never change afterwards), and the new
//! active file opens with a `chain_anchor` record naming that file and linking to its last line.
//! Only the newest `max_files` rotated files are kept.
//!
//! On start the chain resumes: after the active file's last line if it has one, else after the
//! newest rotated file's last line, else from genesis; either way a `chain_anchor` record with
//! reason `start` marks the restart.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::chain::{Chain, ChainKey};
use super::config::{FileConfig, OnWriteFailure};
use super::record::{Kind, Record, Written};
use super::sink::{AuditError, ChainWriter, Target};

/// Bytes a `chain_seal` line takes at most.
const SEAL_ROOM: u64 = 256;

pub(crate) struct FileTarget {
    path: PathBuf,
    dir: PathBuf,
    name: String,
    max_bytes: u64,
    max_files: usize,
    writer: ChainWriter<File>,
    next_index: u64,
}

impl FileTarget {
    pub fn open(config: &FileConfig, key: ChainKey, policy: OnWriteFailure) -> Result<FileTarget, AuditError> {
        let path = config.path.clone();
        let fail = |source: io::Error| AuditError::Open { path: path.clone(), source };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| fail(io::Error::new(io::ErrorKind::InvalidInput, "the path names no UTF-8 file name")))?
            .to_owned();
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let rotated = rotated_indices(&dir, &name).map_err(fail)?;
        let mut file = open_append(&path).map_err(fail)?;
        let mut size = file.metadata().map_err(fail)?.len();
        let (chain, prev_file) = if size > 0 {
            let (last, terminated) = last_line(&mut file).map_err(fail)?;
            if !terminated {
                // A torn last line (crash mid-write) stays as it is, for verify to report.
                file.write_all(b"\n").map_err(fail)?;
                size += 1;
            }
            (Chain::after(&last, key.clone()), None)
        } else if let Some(&newest) = rotated.last() {
            let previous = rotated_name(&name, newest);
            let mut old = File::open(dir.join(&previous)).map_err(fail)?;
            let (last, _) = last_line(&mut old).map_err(fail)?;
            let chain = if last.is_empty() { Chain::genesis(key.clone()) } else { Chain::after(&last, key.clone()) };
            (chain, Some(previous))
        } else {
            (Chain::genesis(key.clone()), None)
        };
        let mut target = FileTarget {
            dir,
            name,
            max_bytes: config.max_bytes,
            max_files: config.max_files,
            writer: ChainWriter::new(file, chain, size, policy),
            next_index: rotated.last().map_or(1, |n| n + 1),
            path: path.clone(),
        };
        target.anchor("start", prev_file).and_then(|()| target.writer.flush()).map_err(fail)?;
        Ok(target)
    }

    fn anchor(&mut self, reason: &'static str, prev_file: Option<String>) -> io::Result<()> {
        let keyed = self.writer.key().is_keyed();
        self.writer.write(&Record::meta(Kind::Anchor { reason, prev_file, keyed }).written())
    }

    fn rotate(&mut self) -> io::Result<()> {
        // The rotated file ends with a seal: a tail cut off it shows.
        self.writer.write(&Record::meta(Kind::Seal { reason: "rotate" }).written())?;
        self.writer.sync()?;
        let rotated = rotated_name(&self.name, self.next_index);
        std::fs::rename(&self.path, self.dir.join(&rotated))?;
        self.next_index += 1;
        let file = open_append(&self.path)?;
        sync_dir(&self.dir);
        // Closes the old handle, now the rotated file; it was synced above.
        self.writer.replace_out(file);
        self.anchor("rotate", Some(rotated))?;
        self.prune();
        Ok(())
    }

    /// Removes the oldest rotated files beyond `max_files`.
    fn prune(&self) {
        let indices = match rotated_indices(&self.dir, &self.name) {
            Ok(indices) => indices,
            Err(error) => {
                tracing::warn!(%error, dir = %self.dir.display(), "cannot list rotated audit files");
                return;
            }
        };
        let excess = indices.len().saturating_sub(self.max_files);
        for &index in &indices[..excess] {
            let old = self.dir.join(rotated_name(&self.name, index));
            if let Err(error) = std::fs::remove_file(&old)
                && error.kind() != io::ErrorKind::NotFound
            {
                tracing::warn!(%error, file = %old.display(), "cannot remove an old audit file");
            }
        }
    }
}

impl Target for FileTarget {
    fn write(&mut self, record: &Written) -> io::Result<()> {
        let len = self.writer.prepare(record) as u64;
        let size = self.writer.len();
        // Room is kept for the seal that closes the file. A failing file is not rotated: what
        // waits for it belongs to it.
        let mut rotated = Ok(());
        if size > 0 && size + len + SEAL_ROOM > self.max_bytes && !self.writer.failing() {
            rotated = self.rotate();
            // The record now follows the new file's anchor (or, if rotating failed, the old file's end).
            self.writer.prepare(record);
        }
        let committed = self.writer.commit(record);
        rotated.and(committed)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    fn failing(&self) -> bool {
        self.writer.failing()
    }

    fn lost(&self) -> u64 {
        self.writer.lost_total()
    }

    fn seal(&mut self) -> io::Result<()> {
        self.writer.write(&Record::meta(Kind::Seal { reason: "shutdown" }).written())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.writer.sync()
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true).read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o640);
    options.open(path)
}

/// Makes a rename durable (best effort: not every platform can sync a directory).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Err(error) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(%error, dir = %dir.display(), "cannot sync the audit directory");
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn rotated_name(name: &str, index: u64) -> String {
    format!("{name}.{index:08}")
}

/// The indexes of `<name>.<digits>` files in `dir`, ascending.
fn rotated_indices(dir: &Path, name: &str) -> io::Result<Vec<u64>> {
    let prefix = format!("{name}.");
    let mut indices = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        if !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
            && let Ok(index) = rest.parse::<u64>()
        {
            indices.push(index);
        }
    }
    indices.sort_unstable();
    Ok(indices)
}

/// The files of the log whose active file is `active`, in chain order: the rotated ones oldest
/// first, then the active one. What `audit verify` checks when given only the active file.
pub fn chain_files(active: &Path) -> io::Result<Vec<PathBuf>> {
    let name = active
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no UTF-8 file name"))?;
    let dir = match active.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut files: Vec<PathBuf> =
        rotated_indices(&dir, name)?.into_iter().map(|i| dir.join(rotated_name(name, i))).collect();
    if active.exists() {
        files.push(active.to_path_buf());
    }
    Ok(files)
}

/// The last line of `file` without its line break, and whether the file ends with one. Reads
/// backwards in blocks, so resuming a large file costs one block in the usual case.
fn last_line(file: &mut File) -> io::Result<(Vec<u8>, bool)> {
    const BLOCK: u64 = 8 * 1024;
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok((Vec::new(), true));
    }
    let mut last = [0u8];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    let terminated = last[0] == b'\n';
    let end = if terminated { len - 1 } else { len };
    let mut start = end;
    let mut tail: Vec<u8> = Vec::new();
    while start > 0 {
        let from = start.saturating_sub(BLOCK);
        let mut block = vec![0u8; (start - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut block)?;
        if let Some(newline) = block.iter().rposition(|&b| b == b'\n') {
            block.drain(..=newline);
            block.extend_from_slice(&tail);
            return Ok((block, terminated));
        }
        block.extend_from_slice(&tail);
        tail = block;
        start = from;
    }
    Ok((tail, terminated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_line_reads_across_blocks_and_notices_a_torn_end() {
        let dir = crate::audit::tests::TempDir::new("last-line");
        let path = dir.path().join("f");
        let long = vec![b'x'; 20_000];
        let mut content = b"first\n".to_vec();
        content.extend_from_slice(&long);
        content.push(b'\n');
        std::fs::write(&path, &content).unwrap();
        assert_eq!(last_line(&mut File::open(&path).unwrap()).unwrap(), (long.clone(), true));
        std::fs::write(&path, b"a\nb").unwrap();
        assert_eq!(last_line(&mut File::open(&path).unwrap()).unwrap(), (b"b".to_vec(), false));
        std::fs::write(&path, b"only\n").unwrap();
        assert_eq!(last_line(&mut File::open(&path).unwrap()).unwrap(), (b"only".to_vec(), true));
    }

    #[test]
    fn chain_files_lists_rotated_files_oldest_first_then_the_active_one() {
        let dir = crate::audit::tests::TempDir::new("chain-files");
        for name in ["audit.jsonl.00000010", "audit.jsonl.00000002", "audit.jsonl.x", "other", "audit.jsonl"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let files = chain_files(&dir.path().join("audit.jsonl")).unwrap();
        let names: Vec<_> = files.iter().map(|p| p.file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["audit.jsonl.00000002", "audit.jsonl.00000010", "audit.jsonl"]);
    }
}
