use super::*;

#[test]
fn template_notes_are_collected() {
    let notes = template_notes("# note: one\nlisteners: {}\n  # note: two\n");
    assert_eq!(notes, ["one", "two"]);
}
