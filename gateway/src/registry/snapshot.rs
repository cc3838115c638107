//! What requests read of the registry: an immutable [`Snapshot`] of the fleet, rebuilt whole when a
//! backend's card or health changes.

use super::*;
use crate::hashing::{FastMap, FastSet};

/// Everything routing and the card endpoints need, swapped as a whole when anything changes.
pub struct Snapshot {
    /// In configuration order.
    pub backends: Vec<Arc<Backend>>,
    pub(super) by_name: FastMap<Arc<str>, usize>,
    /// Skill id → indices of healthy, not draining backends that declare it.
    by_skill: FastMap<String, Vec<usize>>,
    pub gateway_card: CardDoc,
    agent_cards: FastMap<Arc<str>, CardDoc>,
    /// Backend → skill id → what input validation needs of the skill (nested, so that a lookup
    /// borrows both names instead of building a key).
    skill_specs: FastMap<Arc<str>, FastMap<String, Arc<SkillSpec>>>,
    /// Healthy backends' skills, indexed to resolve messages that name none.
    pub skill_index: Arc<crate::resolve::SkillIndex>,
    /// Skills that known backends declare but none can take now (unhealthy or draining): a call
    /// for one meets an outage, not a wrong name.
    resting_skills: FastSet<String>,
    /// Backends whose card was never read: they may offer any skill.
    unread: Vec<Arc<str>>,
}

impl Snapshot {
    pub fn backend(&self, name: &str) -> Option<&Arc<Backend>> {
        self.by_name.get(name).map(|&i| &self.backends[i])
    }

    /// Healthy backends declaring `skill`.
    pub fn with_skill(&self, skill: &str) -> Vec<&Arc<Backend>> {
        self.by_skill.get(skill).map(|list| list.iter().map(|&i| &self.backends[i]).collect()).unwrap_or_default()
    }

    /// Skill ids of healthy backends, sorted.
    pub fn skill_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.by_skill.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }

    /// Whether a call for `skill`, which no backend can take now, meets an outage: a known backend
    /// declares it but is unhealthy or draining, or a backend was never read and may declare it.
    pub fn skill_resting(&self, skill: &str) -> bool {
        self.resting_skills.contains(skill) || !self.unread.is_empty()
    }

    /// Backends whose card was never read.
    pub fn unread(&self) -> &[Arc<str>] {
        &self.unread
    }

    /// What input validation needs to know about `skill` of `backend`.
    pub fn skill_spec(&self, backend: &str, skill: &str) -> Option<&Arc<SkillSpec>> {
        self.skill_specs.get(backend)?.get(skill)
    }

    /// The per-agent card of a healthy backend.
    pub fn agent_card(&self, name: &str) -> Option<&CardDoc> {
        self.agent_cards.get(name)
    }
}

/// The cards as routing and the card endpoints use them: a self-registered agent's card keeps only
/// the skills its credential grants, and none that a file-configured or admin-registered backend
/// declares unless the grant shares it (a card changed after admission loses the rest).
pub(super) fn granted_cards(states: &[BackendState]) -> Vec<Option<std::borrow::Cow<'_, Value>>> {
    let reserved: std::collections::HashSet<String> = states
        .iter()
        .filter(|s| s.config.skill_grant.is_none())
        .filter_map(|s| s.card.as_deref())
        .flat_map(skill_ids)
        .collect();
    states
        .iter()
        .map(|state| {
            let card = state.card.as_deref()?;
            let Some(grant) = &state.config.skill_grant else { return Some(std::borrow::Cow::Borrowed(card)) };
            let allowed = |id: &str| grant.allows(id, reserved.contains(id));
            if skill_ids(card).all(|id| allowed(&id)) {
                return Some(std::borrow::Cow::Borrowed(card));
            }
            let mut card = card.clone();
            if let Some(Value::Array(skills)) = card.get_mut("skills") {
                skills.retain(|s| s.get("id").and_then(Value::as_str).is_some_and(allowed));
            }
            Some(std::borrow::Cow::Owned(card))
        })
        .collect()
}

/// The address forms of a backend (its configured URL and the URLs its card names), for redaction
/// from the cards the gateway serves.
pub(super) fn redactor(state: &BackendState, card: &Value) -> Redactor {
    let mut urls = vec![state.base.as_str().to_owned(), state.card_url.as_str().to_owned()];
    if let Some(Value::Array(list)) = card.get("supportedInterfaces") {
        urls.extend(list.iter().filter_map(|i| Some(i.get("url")?.as_str()?.to_owned())));
    }
    if let Some(url) = card.get("url").and_then(Value::as_str) {
        urls.push(url.to_owned());
    }
    Redactor::new(urls.iter().map(String::as_str))
}

/// The routing view of `states`; cards whose content is unchanged keep `previous`'s date.
pub(super) fn build_snapshot(states: &[BackendState], cards: &CardSettings, previous: Option<&Snapshot>) -> Snapshot {
    let mut backends = Vec::with_capacity(states.len());
    let mut by_name = FastMap::default();
    let mut by_skill: FastMap<String, Vec<usize>> = FastMap::default();
    let mut agent_cards = FastMap::default();
    let mut healthy_cards = Vec::new();
    let mut resting_skills = FastSet::default();
    let mut unread = Vec::new();
    let granted = granted_cards(states);
    let redactors: Vec<(usize, Redactor)> =
        states.iter().enumerate().filter_map(|(i, s)| Some((i, redactor(s, granted[i].as_deref()?)))).collect();
    let no_redactor = Redactor::default();
    for (i, state) in states.iter().enumerate() {
        let name: Arc<str> = Arc::from(state.config.name.as_str());
        let card = granted[i].as_deref().filter(|_| state.healthy);
        let force = state.config.dialect.map(config::BackendDialect::dialect);
        let (dialect, jsonrpc, rest) = card.map(|c| interfaces_of(c, force)).unwrap_or((Dialect::V1, None, None));
        let skills: Vec<String> = card
            .and_then(|c| c.get("skills")?.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|s| Some(s.get("id")?.as_str()?.to_string()))
            .collect();
        for skill in skills.iter().filter(|_| !state.draining) {
            let list = by_skill.entry(skill.clone()).or_default();
            if !list.contains(&i) {
                list.push(i);
            }
        }
        if let Some(card) = card {
            healthy_cards.push((i, card));
        }
        match granted[i].as_deref() {
            None => unread.push(name.clone()),
            Some(known) if card.is_none() || state.draining => resting_skills.extend(skill_ids(known)),
            Some(_) => {}
        }
        let jsonrpc_url = jsonrpc.map(|p| on_origin(&state.base, &p));
        backends.push(Arc::new(Backend {
            name: name.clone(),
            healthy: card.is_some(),
            jsonrpc_uri: jsonrpc_url.as_ref().and_then(|url| http::Uri::try_from(url.as_str()).ok()),
            jsonrpc_url,
            rest_url: rest.map(|p| on_origin(&state.base, p.trim_end_matches('/'))),
            grpc: card.filter(|_| dialect == Dialect::V1).and_then(|c| grpc_interface(c, &state.base)),
            skills,
            dialect,
            draining: state.draining,
            half_open: state.ejection.is_some_and(|e| e.half_open),
        }));
        by_name.insert(name, i);
    }
    let views: Vec<BackendCard<'_>> = healthy_cards
        .iter()
        .map(|&(i, card)| BackendCard {
            name: &states[i].config.name,
            card,
            redactor: redactors.iter().find(|(j, _)| *j == i).map_or(&no_redactor, |(_, r)| r),
            // Every backend is offered in every binding: the gateway bridges the ones it lacks.
            has_jsonrpc: reachable(&backends[i]),
            has_rest: reachable(&backends[i]),
        })
        .collect();
    for view in &views {
        let before = previous.and_then(|p| p.agent_cards.get(view.name));
        let doc = CardDoc::signed(&card::agent_card(cards, view), cards.signer.as_ref()).since(before);
        agent_cards.insert(backends[by_name[view.name]].name.clone(), doc);
    }
    // A draining backend's skills are not on offer for new tasks.
    let offered: Vec<BackendCard<'_>> = views
        .iter()
        .filter(|v| !backends[by_name[v.name]].draining)
        .map(|v| BackendCard {
            name: v.name,
            card: v.card,
            redactor: v.redactor,
            has_jsonrpc: v.has_jsonrpc,
            has_rest: v.has_rest,
        })
        .collect();
    let gateway_card = CardDoc::signed(&card::gateway_card(cards, &offered), cards.signer.as_ref())
        .since(previous.map(|p| &p.gateway_card));
    let mut skill_specs = FastMap::default();
    for view in &views {
        let version = card_version(view.card);
        let defaults = string_list(view.card.get("defaultInputModes"));
        for skill in view.card.get("skills").and_then(Value::as_array).into_iter().flatten() {
            let Some(id) = skill.get("id").and_then(Value::as_str) else { continue };
            let modes = skill.get("inputModes").map(|m| string_list(Some(m))).unwrap_or_else(|| defaults.clone());
            let spec = SkillSpec {
                version,
                input_schema: skill.get("inputSchema").cloned().map(Arc::new),
                input_modes: modes,
            };
            let specs: &mut FastMap<String, Arc<SkillSpec>> = skill_specs.entry(Arc::from(view.name)).or_default();
            specs.insert(id.to_string(), Arc::new(spec));
        }
    }
    let skill_index = Arc::new(crate::resolve::SkillIndex::build(healthy_cards.iter().map(|&(_, card)| card)));
    Snapshot {
        backends,
        by_name,
        by_skill,
        gateway_card,
        agent_cards,
        skill_specs,
        skill_index,
        resting_skills,
        unread,
    }
}

/// A backend the gateway can send calls to in some binding (and so, bridging, in every binding).
pub(super) fn reachable(backend: &Backend) -> bool {
    backend.jsonrpc_url.is_some()
        || backend.rest_url.is_some()
        || backend.grpc.is_some()
        || backend.dialect != Dialect::V1
}

pub(super) fn card_version(card: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(card).unwrap_or_default().hash(&mut hasher);
    hasher.finish()
}

/// The skill ids a card declares.
pub(super) fn skill_ids(card: &Value) -> impl Iterator<Item = String> + '_ {
    card.get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| Some(s.get("id")?.as_str()?.to_string()))
}

pub(super) fn string_list(value: Option<&Value>) -> Vec<String> {
    value.and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect()
}
