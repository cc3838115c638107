use super::stats::{noisy_verdict, spread};
use super::*;

#[test]
fn a_noisy_difference_decides_nothing() {
    let tight = spread([120.0, 130.0, 140.0]);
    assert_eq!(noisy_verdict(tight, 150.0), "**met**");
    let wide = spread([-300.0, 100.0, 2000.0]);
    assert!(noisy_verdict(wide, 150.0).starts_with("**undecided**"));
    assert_eq!(noisy_verdict(spread([400.0, 450.0]), 150.0), "**not met**");
    assert_eq!(noisy_verdict(spread([200.0, 5000.0]), 150.0), "**not met**", "all above the limit");
    assert_eq!(noisy_verdict(spread([100.0, 140.0, 90.0]), 150.0), "**met**");
}

#[test]
fn spread_takes_median_min_and_max() {
    let s = spread([3.0, 1.0, 2.0]).unwrap();
    assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
    let s = spread([4.0, 1.0]).unwrap();
    assert_eq!(s.median, 2.5);
    assert!(spread([f64::NAN]).is_none());
}

#[test]
fn findings_survive_regeneration() {
    let old = format!("x\n{FINDINGS_BEGIN}\nkeep me\n{FINDINGS_END}\ny");
    assert_eq!(kept_findings(&old).as_deref(), Some("keep me"));
    assert!(render(&Results::default(), Some("keep me")).contains("keep me"));
}

#[test]
fn quantiles_are_in_microseconds() {
    let mut h = crate::loadgen::histogram();
    for v in [10_000u64, 20_000, 30_000] {
        h.record(v).unwrap();
    }
    let q = Quantiles::of(&h);
    assert!((q.p50 - 20.0).abs() < 0.1, "{q:?}");
}

fn row(name: &str, rates: &[f64], cpu: &[f64]) -> ClosedLoop {
    ClosedLoop { name: name.into(), rates: rates.to_vec(), cpu_per_request: cpu.to_vec(), errors: 0 }
}

#[test]
fn saturation_compares_with_agentgateway_round_by_round_when_it_ran() {
    let rows = vec![
        row(DIRECT, &[100.0, 100.0], &[]),
        row(GATEWAY, &[30.0, 45.0], &[60.0, 50.0]),
        row(PEER, &[20.0, 30.0], &[40.0, 50.0]),
    ];
    let table = closed_loop_table(&rows);
    assert!(
        table.contains("| gateway, no policies | 37.5 (30.0–45.0) | 0.38 (0.30–0.45) | 55.0 (50.0–60.0) | 0 |"),
        "{table}"
    );
    assert!(table.contains("gateway, no policies against agentgateway, A2A policy: 1.50× the throughput"), "{table}");
    let report = render(&Results { closed_loop: rows, ..Results::default() }, None);
    assert!(report.contains("| throughput at saturation, gateway, no policies over agentgateway, A2A policy | ≥ 1.5× | 1.50× | **met** |"), "{report}");
    assert!(
        report.contains("over agentgateway, JWT + authorization + rate limit | ≥ 1.5× | – | not measured"),
        "{report}"
    );
    assert!(
        report.contains("at saturation, gateway, no policies | ≤ 25 µs | 55.0 (50.0–60.0) µs | **not met** |"),
        "{report}"
    );
}
