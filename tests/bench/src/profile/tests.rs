use super::callgrind::parse_callgrind;
use super::perf::parse_perf;
use super::render::group;
use super::symbols::by_crate;

const ANNOTATE: &str = "\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                  file:function
--------------------------------------------------------------------------------
  250,000 (25.00%)  ???:hyper::proto::h1::role::Server::parse [/x/target/release/a2a-gateway]
  100,000 (10.00%)  ./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:__memmove_avx_unaligned_erms [/usr/lib/x86_64-linux-gnu/libc.so.6]
   50,000 ( 5.00%)  ???:<serde_json::de::Deserializer<R> as serde::Deserializer>::deserialize_any [/x/target/release/a2a-gateway]
";

#[test]
fn callgrind_annotate_output_is_parsed() {
    let (total, entries) = parse_callgrind(ANNOTATE);
    assert_eq!(total, 1_000_000);
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].name, "hyper::proto::h1::role::Server::parse");
    assert!((entries[0].percent - 25.0).abs() < 1e-9);
    assert_eq!(entries[1].name, "__memmove_avx_unaligned_erms [libc.so.6]");
    let crates = by_crate(&entries);
    assert_eq!(crates[0].0, "hyper");
    assert!(crates.iter().any(|(k, _)| k == "serde_json"));
    assert!(crates.iter().any(|(k, _)| k == "libc.so.6"));
}

#[test]
fn perf_report_output_is_parsed() {
    let text =
        "# Event count (approx.): 2000\n#\n    50.00%  [.] hyper::proto::h1::encode\n    10.00%  [k] do_syscall_64\n";
    let (total, entries) = parse_perf(text);
    assert_eq!(total, 2000);
    assert_eq!(entries[0].name, "hyper::proto::h1::encode");
    assert_eq!(entries[0].count, 1000);
    assert_eq!(entries[1].name, "do_syscall_64");
}

#[test]
fn numbers_are_grouped() {
    assert_eq!(group(1234567), "1,234,567");
    assert_eq!(group(12), "12");
}
