//! Tests across dialects: proptest round trips through each dialect (1.0 → other → 1.0 keeps every
//! field the other can carry — the `carry_*` functions are the README's table in code) and the real
//! captures of the reference SDK (0.3 bodies translated and compared with the 1.0 bodies of the same
//! exchange, and back).

mod captures;
mod early_captures;
mod early_props;
mod malformed;
mod strategies;
mod v03_props;
