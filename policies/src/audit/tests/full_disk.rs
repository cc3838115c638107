//! A target on a full disk: a line reaches the chain only once it is written, a torn line is cut
//! off, `fail_closed` keeps what it could not write and `fail_open` reports the exact loss.

use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;

use super::*;
use crate::audit::chain::{Chain, ChainKey, Link};
use crate::audit::sink::{ChainWriter, LineOut};

/// An in-memory file on a disk with `room` bytes free: a write takes what fits, then fails.
struct Disk {
    data: Vec<u8>,
    room: Rc<Cell<usize>>,
}

impl Write for Disk {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.room.get());
        if n == 0 {
            return Err(io::Error::from_raw_os_error(28)); // ENOSPC
        }
        self.room.set(self.room.get() - n);
        self.data.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl LineOut for Disk {
    fn cut(&mut self, len: u64) -> io::Result<()> {
        let freed = self.data.len() - len as usize;
        self.data.truncate(len as usize);
        self.room.set(self.room.get() + freed);
        Ok(())
    }
}

fn writer(policy: OnWriteFailure, room: &Rc<Cell<usize>>) -> ChainWriter<Disk> {
    let disk = Disk { data: Vec::new(), room: room.clone() };
    ChainWriter::new(disk, Chain::genesis(ChainKey::default()), 0, policy)
}

/// The lines on the disk, checked to form one unbroken chain; as JSON.
fn chained_lines(disk: &Disk) -> Vec<Value> {
    assert!(disk.data.is_empty() || disk.data.ends_with(b"\n"), "no torn line stays");
    let lines: Vec<&[u8]> = disk.data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    for (i, pair) in lines.windows(2).enumerate() {
        let (a, b) = (Link::parse(pair[0]).unwrap(), Link::parse(pair[1]).unwrap());
        assert_eq!(b.seq, a.seq + 1, "line {}", i + 2);
        assert_eq!(b.prev, ChainKey::default().hash(pair[0]), "line {} links to the line before it", i + 2);
    }
    lines.iter().map(|l| serde_json::from_slice(l).unwrap()).collect()
}

fn ids(lines: &[Value]) -> Vec<String> {
    lines.iter().filter_map(|l| l["request_id"].as_str().map(str::to_owned)).collect()
}

#[test]
fn fail_open_reports_the_exact_loss_when_writing_works_again_and_the_chain_stays_whole() {
    let room = Rc::new(Cell::new(usize::MAX));
    let mut w = writer(OnWriteFailure::FailOpen, &room);
    for i in 0..3 {
        w.write(&numbered(i).written()).unwrap();
    }
    w.flush().unwrap();
    // The disk fills up in the middle of a line.
    room.set(40);
    for i in 3..8 {
        w.write(&numbered(i).written()).unwrap();
    }
    assert!(w.flush().is_err());
    assert!(w.failing());
    // Still full: each record is tried and lost, and nothing claims the log writes again.
    for i in 8..10 {
        assert!(w.write(&numbered(i).written()).is_err());
        assert!(w.failing(), "not writing while the disk is full");
    }
    room.set(usize::MAX);
    w.write(&numbered(10).written()).unwrap();
    assert!(!w.failing());
    let lines = chained_lines(&w.out);
    assert_eq!(ids(&lines), ["n0", "n1", "n2", "n10"]);
    let report = &lines[3];
    assert_eq!(
        (&report["event"], &report["count"], &report["cause"]),
        (&json!("audit.dropped"), &json!(7), &json!("write_failed"))
    );
    assert!(report["first_ts"].is_string() && report["last_ts"].is_string(), "{report}");
}

#[test]
fn a_loss_is_reported_even_when_no_record_comes_after_it() {
    let room = Rc::new(Cell::new(0));
    let mut w = writer(OnWriteFailure::FailOpen, &room);
    w.write(&numbered(0).written()).unwrap();
    assert!(w.flush().is_err() && w.failing());
    room.set(usize::MAX);
    w.flush().unwrap();
    let lines = chained_lines(&w.out);
    assert_eq!((lines.len(), &lines[0]["count"]), (1, &json!(1)));
}

#[test]
fn fail_closed_keeps_every_record_and_writes_them_in_order_once_it_can() {
    let room = Rc::new(Cell::new(usize::MAX));
    let mut w = writer(OnWriteFailure::FailClosed, &room);
    w.write(&numbered(0).written()).unwrap();
    w.flush().unwrap();
    room.set(100);
    for i in 1..6 {
        w.write(&numbered(i).written()).unwrap();
    }
    assert!(w.flush().is_err());
    assert!(w.failing(), "records wait");
    assert!(w.flush().is_err() && w.failing(), "still full");
    room.set(usize::MAX);
    w.flush().unwrap();
    assert!(!w.failing());
    let lines = chained_lines(&w.out);
    assert_eq!(ids(&lines), ["n0", "n1", "n2", "n3", "n4", "n5"]);
    assert!(lines.iter().all(|l| l["event"] != "audit.dropped"));
}
