//! Which skill a message means when it names none (`routing.resolve`).
//!
//! A2A messages carry no skill field, and the gateway's fleet card invites callers to use any of
//! its skills; an unmodified SDK client therefore sends messages that name none. After the explicit
//! rules (task owner, agent path, `metadata.skillId`, the caller's context, the default skill), the
//! resolver takes the skills the caller may use on healthy agents that accept the message's part
//! media types. One left is the skill (`single`). Otherwise (`lexical`) each candidate is scored
//! with BM25 against a document built from its card — id, name, description, tags, examples — when
//! the cards change, and the best is taken only when it beats the runner-up by the configured
//! margin. Anything else is refused with the list of candidates: a wrong guess would send a
//! caller's data to an agent it did not mean to reach.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

/// `routing.resolve`: how far the gateway goes to find the skill of a message that names none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResolveMode {
    /// Only explicit rules: a message that names no skill is refused with the list of skills.
    Explicit,
    /// Also the only skill the caller may use that accepts the message.
    Single,
    /// Also a clear lexical winner among several.
    #[default]
    Lexical,
}

/// How a skill was chosen, for the audit log, spans and metrics.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The only candidate.
    Single(String),
    /// The best lexical match, with its score and the runner-up's.
    Lexical { skill: String, score: f32, runner_up: f32 },
}

impl Decision {
    pub fn skill(&self) -> &str {
        match self {
            Decision::Single(skill) | Decision::Lexical { skill, .. } => skill,
        }
    }

    /// The rule that decided, as metrics label it.
    pub fn rule(&self) -> &'static str {
        match self {
            Decision::Single(_) => "single",
            Decision::Lexical { .. } => "lexical",
        }
    }

    /// A line saying why, for the audit record and the span.
    pub fn reason(&self) -> String {
        match self {
            Decision::Single(_) => "resolved: the only skill that fits".to_owned(),
            Decision::Lexical { score, runner_up, .. } => {
                format!("resolved: lexical score {score:.2} against runner-up {runner_up:.2}")
            }
        }
    }
}

/// Why no skill could be chosen: the candidates the caller may pick from (id, description).
#[derive(Debug, Clone, PartialEq)]
pub struct Undecided {
    /// Each candidate's id and description (shared with the index: a refusal copies no text).
    pub candidates: Vec<(Arc<str>, Arc<str>)>,
}

/// One skill of the fleet as the resolver sees it.
#[derive(Debug)]
struct SkillDoc {
    id: Arc<str>,
    description: Arc<str>,
    /// Media types it accepts (its `inputModes`, else its card's defaults); empty accepts any.
    input_modes: Vec<String>,
    terms: HashMap<String, u32>,
    length: u32,
}

/// The fleet's skills, indexed for resolution. Built once per registry snapshot: scoring a message
/// walks only the postings of its own words.
#[derive(Debug, Default)]
pub struct SkillIndex {
    skills: Vec<SkillDoc>,
    /// Term → its inverse document frequency and, per skill that has it, the BM25 weight of the
    /// term in that skill (length normalisation folded in).
    postings: HashMap<String, Vec<(usize, f32)>>,
}

const K1: f32 = 1.2;
const B: f32 = 0.75;

impl SkillIndex {
    /// Indexes the skills of healthy backends' cards (a skill id hosted by several is one skill).
    pub fn build<'a>(cards: impl IntoIterator<Item = &'a Value>) -> SkillIndex {
        let mut skills: Vec<SkillDoc> = Vec::new();
        for card in cards {
            let defaults = strings(card.get("defaultInputModes"));
            for skill in card.get("skills").and_then(Value::as_array).into_iter().flatten() {
                let Some(id) = skill.get("id").and_then(Value::as_str) else { continue };
                if skills.iter().any(|s| &*s.id == id) {
                    continue;
                }
                let mut text = id.replace(['-', '_', '.'], " ");
                for key in ["name", "description"] {
                    if let Some(value) = skill.get(key).and_then(Value::as_str) {
                        text.push(' ');
                        text.push_str(value);
                    }
                }
                for key in ["tags", "examples"] {
                    for value in strings(skill.get(key)) {
                        text.push(' ');
                        text.push_str(&value);
                    }
                }
                let mut terms: HashMap<String, u32> = HashMap::new();
                let mut length = 0;
                for term in tokens(&text) {
                    *terms.entry(term).or_default() += 1;
                    length += 1;
                }
                let modes = strings(skill.get("inputModes"));
                skills.push(SkillDoc {
                    id: Arc::from(id),
                    description: Arc::from(skill.get("description").and_then(Value::as_str).unwrap_or("")),
                    input_modes: if modes.is_empty() { defaults.clone() } else { modes },
                    terms,
                    length,
                });
            }
        }
        let count = skills.len() as f32;
        let average_length =
            if skills.is_empty() { 1.0 } else { skills.iter().map(|s| s.length as f32).sum::<f32>() / count }.max(1.0);
        let mut postings: HashMap<String, Vec<(usize, f32)>> = HashMap::new();
        for (i, skill) in skills.iter().enumerate() {
            let norm = K1 * (1.0 - B + B * skill.length as f32 / average_length);
            for (term, &tf) in &skill.terms {
                let tf = tf as f32;
                postings.entry(term.clone()).or_default().push((i, tf * (K1 + 1.0) / (tf + norm)));
            }
        }
        for list in postings.values_mut() {
            let n = list.len() as f32;
            let idf = ((count - n + 0.5) / (n + 0.5) + 1.0).ln();
            for (_, weight) in list.iter_mut() {
                *weight *= idf;
            }
        }
        SkillIndex { skills, postings }
    }

    /// The skill `text` (the message's text and data keys) means, among the skills `allowed` says
    /// the caller may use that accept every media type in `media_types`.
    pub fn resolve(
        &self,
        mode: ResolveMode,
        margin: f32,
        text: &str,
        media_types: &[&str],
        allowed: impl Fn(&str) -> bool,
    ) -> Result<Decision, Undecided> {
        let candidates: Vec<usize> = (0..self.skills.len())
            .filter(|&i| {
                let skill = &self.skills[i];
                allowed(&skill.id) && media_types.iter().all(|m| accepts(&skill.input_modes, m))
            })
            .collect();
        let undecided = || Undecided {
            candidates: candidates
                .iter()
                .map(|&i| (self.skills[i].id.clone(), self.skills[i].description.clone()))
                .collect(),
        };
        match (mode, candidates.as_slice()) {
            (ResolveMode::Explicit, _) | (_, []) => Err(undecided()),
            (_, [only]) => Ok(Decision::Single(self.skills[*only].id.to_string())),
            (ResolveMode::Single, _) => Err(undecided()),
            (ResolveMode::Lexical, _) => {
                let mut scores = vec![0.0f32; self.skills.len()];
                let mut seen: Vec<String> = Vec::new();
                for term in tokens(text) {
                    if seen.contains(&term) {
                        continue;
                    }
                    if let Some(list) = self.postings.get(&term) {
                        for &(skill, weight) in list {
                            scores[skill] += weight;
                        }
                    }
                    seen.push(term);
                }
                // The best two, in one pass (ties go to the smaller id, as a sort would order them).
                let rank = |i: usize| (scores[i], std::cmp::Reverse(&self.skills[i].id));
                let mut best = candidates[0];
                let mut second: Option<usize> = None;
                for &i in &candidates[1..] {
                    if rank(i) > rank(best) {
                        second = Some(best);
                        best = i;
                    } else if second.is_none_or(|s| rank(i) > rank(s)) {
                        second = Some(i);
                    }
                }
                let runner_up = second.map_or(0.0, |i| scores[i]);
                let best_score = scores[best];
                if best_score > 0.0 && best_score - runner_up >= margin * best_score {
                    Ok(Decision::Lexical { skill: self.skills[best].id.to_string(), score: best_score, runner_up })
                } else {
                    Err(undecided())
                }
            }
        }
    }
}

/// Whether a skill with `modes` accepts `media_type` (`type/*` and `*/*` match whole families).
fn accepts(modes: &[String], media_type: &str) -> bool {
    modes.is_empty()
        || modes.iter().any(|mode| {
            mode == media_type
                || mode == "*/*"
                || mode.strip_suffix("/*").is_some_and(|family| media_type.split('/').next() == Some(family))
        })
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

/// Words too common to tell skills apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from", "i", "in", "is", "it", "me", "my", "of",
    "on", "or", "please", "that", "the", "this", "to", "with", "you", "your",
];

/// Lower-cased alphanumeric words, stop words left out, a plural `s` taken off.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).filter_map(|word| {
        let word = word.to_lowercase();
        if STOP_WORDS.contains(&word.as_str()) {
            return None;
        }
        Some(match word.strip_suffix('s') {
            Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
            _ => word,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fleet() -> Vec<Value> {
        vec![
            json!({"defaultInputModes": ["text/plain"], "skills": [
                {"id": "echo", "name": "Echo", "description": "Repeats the input text back", "tags": ["echo", "test"],
                 "examples": ["echo hello"]},
                {"id": "translate", "name": "Translate", "description": "Translates text into another language",
                 "tags": ["language", "translation"], "examples": ["translate good morning into French"]}]}),
            json!({"defaultInputModes": ["text/plain"], "skills": [
                {"id": "review-pr", "name": "Review a pull request", "description": "Reviews a diff and comments on code",
                 "tags": ["code", "review", "diff"], "inputModes": ["application/json"], "examples": ["review this diff"]},
                {"id": "weather", "name": "Weather", "description": "Forecasts the weather for a city",
                 "tags": ["forecast", "weather"], "examples": ["what is the weather in Paris"]}]}),
        ]
    }

    fn index() -> SkillIndex {
        SkillIndex::build(fleet().iter())
    }

    /// The scorer on a fixed fleet: each message, the media types it carries, and what it resolves to.
    #[test]
    fn table_of_messages_and_their_skills() {
        let index = index();
        let any = |_: &str| true;
        let table: &[(&str, &[&str], Option<&str>)] = &[
            ("translate good night into Spanish", &["text/plain"], Some("translate")),
            ("what's the weather forecast for Berlin tomorrow", &["text/plain"], Some("weather")),
            ("please echo this back", &["text/plain"], Some("echo")),
            ("diff", &["application/json"], Some("review-pr")),
            ("hello there", &["text/plain"], Some("echo")),
            ("lorem ipsum", &["text/plain"], None),
            ("", &["text/plain"], None),
            ("translate the weather report", &["text/plain"], None),
            ("anything", &["image/png"], None),
        ];
        for (text, media, expected) in table {
            let got = index.resolve(ResolveMode::Lexical, 0.3, text, media, any).ok();
            assert_eq!(got.as_ref().map(Decision::skill), *expected, "{text} {media:?}: {got:?}");
        }
    }

    #[test]
    fn one_fitting_skill_is_taken_without_scoring() {
        let index = index();
        let only_echo = |s: &str| s == "echo";
        let decision = index.resolve(ResolveMode::Single, 0.3, "hi", &["text/plain"], only_echo).unwrap();
        assert_eq!(decision, Decision::Single("echo".into()));
        // Several fit: `single` lists them; `explicit` never resolves.
        let undecided = index.resolve(ResolveMode::Single, 0.3, "weather", &["text/plain"], |_| true).unwrap_err();
        assert_eq!(undecided.candidates.len(), 3, "{undecided:?}");
        assert!(index.resolve(ResolveMode::Explicit, 0.3, "hi", &["text/plain"], only_echo).is_err());
    }

    #[test]
    fn the_margin_decides_close_calls() {
        let index = index();
        let text = "translate the weather forecast";
        let strict = index.resolve(ResolveMode::Lexical, 0.9, text, &["text/plain"], |_| true);
        assert!(strict.is_err(), "{strict:?}");
        let lax = index.resolve(ResolveMode::Lexical, 0.0, text, &["text/plain"], |_| true).unwrap();
        let Decision::Lexical { score, runner_up, .. } = lax else { panic!("{lax:?}") };
        assert!(score >= runner_up && runner_up > 0.0);
    }

    #[test]
    fn media_types_and_wildcards() {
        assert!(accepts(&[], "image/png"));
        assert!(accepts(&["image/*".into()], "image/png"));
        assert!(accepts(&["*/*".into()], "text/plain"));
        assert!(!accepts(&["text/plain".into()], "application/json"));
    }
}
