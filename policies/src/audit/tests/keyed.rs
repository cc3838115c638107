//! A keyed, sealed chain: what an attacker with write access but without the key can no longer hide.

use super::*;

const KEY: &str = "0123456789abcdef0123456789abcdef-test-key";

fn keyed_config(dir: &TempDir, max_bytes: u64) -> AuditConfig {
    AuditConfig { chain_key: Some(KEY.into()), ..file_config(dir, max_bytes, 100) }
}

fn strict() -> VerifyOptions {
    VerifyOptions { key: ChainKey::new(Some(KEY.as_bytes())), open: false }
}

/// Recomputes every link after an edit, as an attacker without the key would (plain SHA-256).
fn relink_unkeyed(lines: &mut [String]) {
    use sha2::{Digest, Sha256};
    for i in 1..lines.len() {
        let prev = hex::encode(Sha256::digest(lines[i - 1].as_bytes()));
        let at = lines[i].rfind("\"prev\":\"").unwrap() + 8;
        lines[i].replace_range(at..at + 64, &prev);
    }
}

async fn rotated_set(name: &str) -> (TempDir, Vec<PathBuf>) {
    let dir = TempDir::new(name);
    write_records(&keyed_config(&dir, 1024), 40).await;
    let files = chain_files(&dir.path().join("audit.jsonl")).unwrap();
    assert!(files.len() >= 4, "{files:?}");
    (dir, files)
}

#[tokio::test]
async fn an_untouched_rotated_set_verifies_and_every_file_is_sealed() {
    let (_dir, files) = rotated_set("keyed-ok").await;
    let report = verify_files_with(&files, &strict());
    assert!(report.is_ok(), "{report}");
    for file in &files {
        let last: Value = serde_json::from_str(lines(file).last().unwrap()).unwrap();
        assert_eq!(last["event"], "chain_seal", "{}", file.display());
    }
    let first: Value = serde_json::from_str(&lines(&files[0])[0]).unwrap();
    assert_eq!(first["keyed"], true);
    // Without the key, or with another, it does not verify.
    assert_eq!(verify_files_with(&files, &VerifyOptions::default()).broken.unwrap().problem, Problem::KeyNeeded);
    let other = VerifyOptions { key: ChainKey::new(Some(b"another key, also 32 bytes long....")), open: false };
    assert!(verify_files_with(&files, &other).broken.is_some());
}

#[tokio::test]
async fn an_edited_record_with_recomputed_hashes_is_found() {
    let (_dir, files) = rotated_set("keyed-edit").await;
    let middle = &files[1];
    let mut edited = lines(middle);
    let at = edited[1].find("caller-").unwrap() + 7;
    edited[1].replace_range(at..=at, "Z");
    relink_unkeyed(&mut edited);
    write_lines(middle, &edited);
    let broken = verify_files_with(&files, &strict()).broken.unwrap();
    assert_eq!(broken.file, *middle);
    assert!(broken.line <= 3, "{broken}");
}

#[tokio::test]
async fn reordered_records_are_found() {
    let (_dir, files) = rotated_set("keyed-order").await;
    let middle = &files[1];
    let mut swapped = lines(middle);
    let n = swapped.len();
    swapped.swap(1, n - 1);
    write_lines(middle, &swapped);
    assert!(verify_files_with(&files, &strict()).broken.is_some());
    relink_unkeyed(&mut swapped);
    write_lines(middle, &swapped);
    assert!(verify_files_with(&files, &strict()).broken.is_some());
}

#[tokio::test]
async fn a_dropped_tail_is_found() {
    let (_dir, files) = rotated_set("keyed-tail").await;
    let active = files.last().unwrap();
    let all = lines(active);
    write_lines(active, &all[..all.len() - 2]);
    let broken = verify_files_with(&files, &strict()).broken.unwrap();
    assert_eq!((&broken.file, broken.problem), (active, Problem::Unsealed));
    // A seal forged without the key does not help.
    let mut forged = all[..all.len() - 2].to_vec();
    let seal = all.last().unwrap().clone();
    forged.push(seal);
    write_lines(active, &forged);
    assert!(verify_files_with(&files, &strict()).broken.is_some());
    // Cut off a rotated file's end too.
    write_lines(active, &all);
    let first = &files[0];
    let rotated = lines(first);
    write_lines(first, &rotated[..rotated.len() - 1]);
    // (The next file's anchor links to the seal that is gone: found there, or as an unsealed end.)
    let broken = verify_files_with(&files, &strict()).broken.unwrap();
    assert!(broken.file == *first || broken.file == files[1], "{broken}");
}

#[tokio::test]
async fn a_deleted_middle_file_is_found() {
    let (_dir, files) = rotated_set("keyed-middle").await;
    let without: Vec<PathBuf> = files.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, f)| f.clone()).collect();
    let broken = verify_files_with(&without, &strict()).broken.unwrap();
    assert_eq!(broken.file, files[2]);
    std::fs::remove_file(&files[1]).unwrap();
    let found = chain_files(files.last().unwrap()).unwrap();
    assert!(verify_files_with(&found, &strict()).broken.is_some(), "{found:?}");
}

#[test]
fn line_separators_and_controls_are_escaped() {
    let common = Common { caller: Some(Arc::from("sub\u{2028}x\u{2029}y\u{85}z\u{7f}w\nv")), ..Common::default() };
    let mut line = Vec::new();
    Record::event(common, Kind::State { state: TaskState::Working, source: Source::Stream }).write_json(&mut line);
    let text = String::from_utf8(line).unwrap();
    for raw in ['\u{2028}', '\u{2029}', '\u{85}', '\u{7f}', '\n'] {
        assert!(!text.contains(raw), "{raw:?} written raw: {text}");
    }
    assert_eq!(text.lines().count(), 1);
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["caller"], "sub\u{2028}x\u{2029}y\u{85}z\u{7f}w\nv");
}
