//! `verify_files` on real files: intact, altered, cut, reordered, rotated, resumed.

use super::*;

#[tokio::test]
async fn verify_names_the_altered_record() {
    let dir = TempDir::new("alter");
    let config = file_config(&dir, 1 << 20, 10);
    write_records(&config, 10).await;
    let active = dir.path().join("audit.jsonl");
    let report = verify_files(std::slice::from_ref(&active));
    assert!(report.is_ok(), "{report}");
    // The anchor, ten records and the shutdown seal.
    assert_eq!(report.records, 12);

    // One byte in record 5 (line 5): `caller-3` becomes `caller-X`.
    let mut bytes = std::fs::read(&active).unwrap();
    let at = bytes.windows(8).position(|w| w == b"caller-3").unwrap() + 7;
    bytes[at] = b'X';
    std::fs::write(&active, &bytes).unwrap();
    let report = verify_files(std::slice::from_ref(&active));
    let broken = report.broken.clone().expect("broken");
    assert_eq!((broken.line, broken.record, &broken.problem), (5, 5, &Problem::Altered), "{report}");
    assert_eq!(broken.file, active);
    assert!(report.to_string().contains("audit.jsonl:5: record 5: altered"), "{report}");

    // A byte that breaks the JSON is named as not a record.
    bytes[at] = b'"';
    std::fs::write(&active, &bytes).unwrap();
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (5, Problem::NotARecord));
}

#[tokio::test]
async fn verify_finds_a_deleted_line_and_a_changed_prev() {
    let dir = TempDir::new("delete");
    let config = file_config(&dir, 1 << 20, 10);
    write_records(&config, 10).await;
    let active = dir.path().join("audit.jsonl");
    let original = lines(&active);

    let mut deleted = original.clone();
    deleted.remove(6);
    write_lines(&active, &deleted);
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (7, Problem::Missing { count: 1 }));

    // Changing the `prev` of record 4 breaks the links on both sides of it: record 4 is named.
    let mut changed = original.clone();
    let prev_at = changed[3].rfind("\"prev\":\"").unwrap() + 8;
    let digit = if &changed[3][prev_at..=prev_at] == "0" { "1" } else { "0" };
    changed[3].replace_range(prev_at..=prev_at, digit);
    write_lines(&active, &changed);
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (4, Problem::Altered));

    // Swapping two records.
    let mut swapped = original.clone();
    swapped.swap(3, 4);
    write_lines(&active, &swapped);
    assert!(verify_files(std::slice::from_ref(&active)).broken.is_some());

    // Removing the anchor.
    write_lines(&active, &original[1..]);
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (1, Problem::NotAnchored));

    let missing = dir.path().join("nope.jsonl");
    let broken = verify_files(&[missing]).broken.unwrap();
    assert!(matches!(broken.problem, Problem::Unreadable(_)));
}

#[tokio::test]
async fn the_chain_runs_across_rotated_files() {
    let dir = TempDir::new("rotate");
    let config = file_config(&dir, 1024, 100);
    write_records(&config, 40).await;
    let active = dir.path().join("audit.jsonl");
    let files = chain_files(&active).unwrap();
    assert!(files.len() >= 5, "{files:?}");
    for file in &files {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size <= 1024, "{} holds {size} bytes", file.display());
        let first: Value = serde_json::from_str(&lines(file)[0]).unwrap();
        assert_eq!(first["event"], "chain_anchor");
    }
    let second: Value = serde_json::from_str(&lines(&files[1])[0]).unwrap();
    assert_eq!((&second["reason"], &second["prev_file"]), (&json!("rotate"), &json!("audit.jsonl.00000001")));
    let report = verify_files(&files);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.files.len(), files.len());
    assert_eq!(report.records as usize, files.iter().map(|f| lines(f).len()).sum::<usize>());
    assert_eq!(events(&active).len(), 40);

    // The last record of a middle file, altered: named in that file.
    let middle = &files[2];
    let mut middle_lines = lines(middle);
    // (The very last line is the file's seal.)
    let last = middle_lines.len() - 2;
    let at = middle_lines[last].find("caller-").unwrap() + 7;
    middle_lines[last].replace_range(at..=at, "Z");
    write_lines(middle, &middle_lines);
    let broken = verify_files(&files).broken.unwrap();
    assert_eq!((&broken.file, broken.line, broken.problem), (middle, last as u64 + 1, Problem::Altered));

    // A rotated file left out, or the files out of order.
    let without: Vec<_> = files.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, f)| f.clone()).collect();
    let broken = verify_files(&without).broken.unwrap();
    assert_eq!((&broken.file, broken.line), (&files[3], 1));
    let mut reversed = files.clone();
    reversed.swap(0, 1);
    assert!(verify_files(&reversed).broken.is_some());
}

#[tokio::test]
async fn rotation_keeps_max_files_and_the_rest_still_verifies() {
    let dir = TempDir::new("prune");
    let config = file_config(&dir, 1024, 2);
    write_records(&config, 40).await;
    let files = chain_files(&dir.path().join("audit.jsonl")).unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    let report = verify_files(&files);
    assert!(report.is_ok(), "{report}");
    assert!(matches!(report.start, Some(ChainStart::Continues { prev_file: Some(_) })), "{report}");
}

#[tokio::test]
async fn a_restart_continues_the_chain() {
    let dir = TempDir::new("restart");
    let config = file_config(&dir, 1 << 20, 10);
    write_records(&config, 3).await;
    write_records(&config, 2).await;
    let active = dir.path().join("audit.jsonl");
    let records = read_records(&active);
    // Each run: its anchor, its records and its shutdown seal.
    assert_eq!(records.len(), 9);
    assert_eq!(records[4]["event"], "chain_seal");
    assert_eq!((&records[5]["event"], &records[5]["reason"]), (&json!("chain_anchor"), &json!("start")));
    let seqs: Vec<_> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(verify_files(std::slice::from_ref(&active)).is_ok());

    // A torn last line (a crash mid-write) stays, is linked to, and is what verify reports.
    let mut file = std::fs::OpenOptions::new().append(true).open(&active).unwrap();
    io::Write::write_all(&mut file, b"{\"ts\":\"2026-").unwrap();
    drop(file);
    write_records(&config, 1).await;
    let broken = verify_files(std::slice::from_ref(&active)).broken.unwrap();
    assert_eq!((broken.line, broken.problem), (10, Problem::NotARecord));
    assert_eq!(lines(&active).len(), 13);
}

#[tokio::test]
async fn a_missing_directory_is_named_at_start() {
    let dir = TempDir::new("missing");
    let mut config = file_config(&dir, 1 << 20, 10);
    let path = dir.path().join("no-such-dir").join("audit.jsonl");
    config.file.as_mut().unwrap().path = path.clone();
    let error = Audit::start(&config).await.unwrap_err();
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");
    config.queue = 0;
    assert!(matches!(Audit::start(&config).await.unwrap_err(), AuditError::Config(_)));
}
