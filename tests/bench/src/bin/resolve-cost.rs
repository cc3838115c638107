//! The cost of resolving the skill of a message that names none (`routing.resolve: lexical`) on a
//! 50-skill fleet (issue goal: at most 5 µs per message). The index is built once, as the gateway
//! builds it when cards change; each round scores one message against it.
//!
//! Run: `cargo build --release -p a2a-bench --bin resolve-cost && target/release/resolve-cost`

use std::time::Instant;

use a2a_gateway::resolve::{ResolveMode, SkillIndex};
use serde_json::{Value, json};

const WORDS: [&str; 10] =
    ["invoice", "weather", "translate", "summarize", "review", "deploy", "search", "calendar", "email", "image"];

fn fleet() -> Vec<Value> {
    (0..10)
        .map(|agent| {
            let skills: Vec<Value> = (0..5)
                .map(|i| {
                    let w = WORDS[(agent + i) % WORDS.len()];
                    json!({"id": format!("skill-{agent}-{i}"), "name": format!("{w} helper {i}"),
                        "description": format!("Handles {w} requests of kind {i} for team {agent}"),
                        "tags": [w, format!("team{agent}")], "examples": [format!("please {w} this for me")]})
                })
                .collect();
            json!({"defaultInputModes": ["text/plain"], "skills": skills})
        })
        .collect()
}

fn main() {
    let cards = fleet();
    let index = SkillIndex::build(cards.iter());
    let messages = [
        ("resolved", "Could you summarize the weather report for team3 and email it to me"),
        ("refused (no clear winner)", "lorem ipsum dolor sit amet"),
    ];
    let rounds = 200_000u32;
    println!("| message ({rounds} rounds × 5 runs, 50 skills) | best ns/message | median ns/message |");
    println!("|---|---|---|");
    for (label, text) in messages {
        let mut runs: Vec<u128> = (0..5)
            .map(|_| {
                let started = Instant::now();
                let mut resolved = 0u32;
                for _ in 0..rounds {
                    if index
                        .resolve(ResolveMode::Lexical, 0.3, std::hint::black_box(text), &["text/plain"], |_| true)
                        .is_ok()
                    {
                        resolved += 1;
                    }
                }
                std::hint::black_box(resolved);
                started.elapsed().as_nanos() / u128::from(rounds)
            })
            .collect();
        runs.sort_unstable();
        println!("| {label} | {} | {} |", runs[0], runs[2]);
    }
}
