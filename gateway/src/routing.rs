//! Just over 400 lines: the router's rules read in order in one place; the layer is in [`layer`].
//!
//! Route resolution, right after authentication: chooses the backend for a call and records it as a
//! [`RouteHint`] for the policies and the forwarder. In order: the owner of the task the call names;
//! the agent of a per-agent path; a healthy backend declaring the explicit skill (`metadata.skillId`);
//! the owner of a known context; the configured default skill. Anything else is refused with the list
//! of skills on offer. A task or context that belongs to another caller does not exist for this one.

use std::sync::Arc;
use std::task::{Context, Poll};

use a2a_core::{A2aCall, A2aError, AuthMethod, CallRequest, Caller, Operation, RouteHint};
use futures::future::BoxFuture;
use serde_json::json;
use tower::{Layer, Service, ServiceExt};

use crate::directory::{ContextEntry, TaskDirectory};
use crate::protocol::decode::Checked;
use crate::protocol::early_ids::{EarlyIds, EarlyScope};
use crate::registry::{Backend, Registry, Snapshot};
use crate::resolve::{Decision, ResolveMode};
use a2a_model::{Message, PartContent, Request as A2aRequest};
use a2a_policies::authorize::Permissions;

// The setting lives with the config (config must not import routing: routing reads the registry,
// which reads the config).
pub use crate::config::Isolation;

/// The owner key of tasks a caller creates. Anonymous callers (no authentication configured) own
/// nothing: without identities there is nothing to isolate by.
pub fn owner_key(caller: Option<&Caller>, isolation: Isolation) -> Option<Arc<str>> {
    let caller = caller?;
    if caller.auth == AuthMethod::Anonymous {
        return None;
    }
    match (isolation, &caller.tenant) {
        // A tenant is the issuer's: another issuer naming the same tenant is another tenant.
        (Isolation::Tenant, Some(_)) => caller.qualified_tenant().map(|t| Arc::from(format!("tenant:{t}"))),
        _ => Some(caller.id.clone()),
    }
}

/// Everything routing reads.
pub struct Router<'a> {
    pub snapshot: &'a Snapshot,
    pub registry: &'a Registry,
    pub directory: &'a dyn TaskDirectory,
    pub default_skill: Option<&'a str>,
    /// The caller's owner key (see [`owner_key`]).
    pub owner: Option<&'a Arc<str>>,
    /// What the resolver needs to find the skill of a message that names none.
    pub resolving: Option<Resolving<'a>>,
}

/// A message that names no skill, and how to find it one (see [`crate::resolve`]).
pub struct Resolving<'a> {
    pub mode: ResolveMode,
    pub margin: f32,
    pub permissions: &'a Permissions,
    pub caller: &'a Caller,
    pub message: &'a Message,
}

/// The chosen backend, the skill the call uses when known, and every skill it may exercise there.
pub struct Route {
    pub backend: Arc<Backend>,
    pub skill: Option<String>,
    pub skills: Vec<String>,
    /// How the resolver chose the skill, when the call named none.
    pub decision: Option<Decision>,
}

impl Route {
    /// A route that names `skill` (which the backend must offer) or else covers all the backend's.
    fn to(backend: &Arc<Backend>, named: Option<&str>) -> Result<Route, A2aError> {
        match named {
            Some(skill) => {
                offers(backend, skill)?;
                let skills = vec![skill.to_owned()];
                Ok(Route { backend: usable(backend)?, skill: Some(skill.to_owned()), skills, decision: None })
            }
            None => Ok(Route {
                backend: usable(backend)?,
                skill: only_skill(backend),
                skills: backend.skills.clone(),
                decision: None,
            }),
        }
    }
}

impl Router<'_> {
    pub async fn route(&self, call: &A2aCall) -> Result<Route, A2aError> {
        if let Some(task_id) = &call.task_id {
            return self.task_owner(call, task_id).await;
        }
        if let Some(agent) = &call.agent {
            let backend = self.snapshot.backend(agent).ok_or_else(|| A2aError::AgentNotFound(agent.clone()))?;
            if backend.draining && call.operation.is_send() {
                // A draining agent finishes its tasks and takes no new ones.
                return Err(self.outage(format!("the agent '{agent}' is draining and takes no new tasks")));
            }
            return Route::to(backend, call.skill_id.as_deref()).map_err(|e| self.retry_hint(e));
        }
        if let Some(skill) = &call.skill_id {
            return self.by_skill(skill);
        }
        if let Some(context_id) = &call.context_id
            && let Some(entry) = self.directory.context(context_id).await?
            && entry.owner.as_ref() == self.owner
            && let Some(backend) = self.snapshot.backend(&entry.backend)
        {
            // A follow-up in a context keeps to the skill its first task was routed by.
            let skill = entry.skill.as_deref().filter(|s| backend.skills.iter().any(|b| b == s));
            return Route::to(backend, skill).map_err(|e| self.retry_hint(e));
        }
        if let Some(skill) = self.default_skill {
            return self.by_skill(skill);
        }
        match &self.resolving {
            Some(resolving) if call.operation.is_send() => self.resolve(resolving),
            _ => Err(self.no_route("name a skill in the message's metadata.skillId")),
        }
    }

    /// The skill of a message that names none, if the resolver can tell (see [`crate::resolve`]).
    fn resolve(&self, resolving: &Resolving<'_>) -> Result<Route, A2aError> {
        let (text, media_types) = describe(resolving.message);
        let allowed = |skill: &str| resolving.permissions.may_use(resolving.caller, skill);
        let index = &self.snapshot.skill_index;
        match index.resolve(resolving.mode, resolving.margin, &text, &media_types, allowed) {
            Ok(decision) => {
                let mut route = self.by_skill(decision.skill())?;
                route.decision = Some(decision);
                Ok(route)
            }
            Err(undecided) if undecided.candidates.is_empty() => {
                Err(self.no_route("name a skill in the message's metadata.skillId"))
            }
            Err(undecided) if resolving.mode == ResolveMode::Explicit => {
                let ids: Vec<&str> = undecided.candidates.iter().map(|(id, _)| &**id).collect();
                let listing: Vec<String> =
                    undecided.candidates.iter().map(|(id, description)| format!("{id}: {description}")).collect();
                Err(A2aError::InvalidParams {
                    message: format!(
                        "this gateway routes only by a named skill; name one in the message's metadata.skillId: [{}]",
                        listing.join("; ")
                    ),
                    detail: Some(json!({ "availableSkills": ids.join(",") })),
                })
            }
            Err(undecided) => {
                let candidates: Vec<(String, String)> = undecided
                    .candidates
                    .iter()
                    .map(|(id, description)| (id.to_string(), description.to_string()))
                    .collect();
                let listing: Vec<String> =
                    candidates.iter().map(|(id, description)| format!("{id}: {description}")).collect();
                // Answered as a rejected task that lists the skills (see `stack::undecided`).
                Err(A2aError::SkillUndecided {
                    message: format!(
                        "this message names no skill and could be meant for more than one; name one in the message's metadata.skillId: [{}]",
                        listing.join("; ")
                    ),
                    candidates,
                })
            }
        }
    }

    /// The owner of a task. A task the gateway never saw, one that belongs to another caller, or one
    /// asked for under another agent's path, does not exist for the caller. The call may use the
    /// task's skill and any skill it names (which the owning agent must offer).
    async fn task_owner(&self, call: &A2aCall, task_id: &str) -> Result<Route, A2aError> {
        let entry = self.directory.task(task_id).await?.ok_or(A2aError::TaskNotFound)?;
        if entry.owner.as_ref() != self.owner {
            return Err(A2aError::TaskNotFound);
        }
        if call.agent.as_deref().is_some_and(|agent| agent != &*entry.backend) {
            return Err(A2aError::TaskNotFound);
        }
        let backend = self.snapshot.backend(&entry.backend).ok_or(A2aError::TaskNotFound)?;
        let mut skills = match &entry.skill {
            Some(skill) => vec![skill.to_string()],
            None => backend.skills.clone(),
        };
        if let Some(named) = &call.skill_id {
            offers(backend, named)?;
            if !skills.contains(named) {
                skills.push(named.clone());
            }
        }
        let skill =
            call.skill_id.clone().or_else(|| entry.skill.as_deref().map(str::to_owned)).or_else(|| only_skill(backend));
        let backend = usable(backend).map_err(|e| self.retry_hint(e))?;
        Ok(Route { backend, skill, skills, decision: None })
    }

    fn by_skill(&self, skill: &str) -> Result<Route, A2aError> {
        let candidates = self.snapshot.with_skill(skill);
        match self.registry.pick(&candidates) {
            Some(backend) => Ok(Route {
                backend: backend.clone(),
                skill: Some(skill.to_string()),
                skills: vec![skill.to_string()],
                decision: None,
            }),
            None if self.snapshot.skill_resting(skill) => Err(self.outage(self.resting_reason(skill))),
            None => Err(self.no_route(&format!("no agent offers the skill '{skill}'"))),
        }
    }

    /// Why no agent can take a skill that is (or may be) on offer.
    fn resting_reason(&self, skill: &str) -> String {
        match self.snapshot.unread() {
            [] => format!("the agents that offer the skill '{skill}' are unavailable"),
            unread => format!(
                "no available agent offers the skill '{skill}', and {} could not be reached yet and may offer it",
                unread.iter().map(|name| format!("'{name}'")).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// An outage: nothing was sent, so the caller may retry once a health check may have passed.
    fn outage(&self, reason: String) -> A2aError {
        A2aError::AgentUnavailable {
            message: format!("{reason}; retry later"),
            retry_after: self.registry.retry_hint(),
        }
    }

    /// Stamps the retry hint on an outage found by a helper that has no registry at hand.
    fn retry_hint(&self, error: A2aError) -> A2aError {
        match error {
            A2aError::AgentUnavailable { message, .. } => {
                A2aError::AgentUnavailable { message, retry_after: self.registry.retry_hint() }
            }
            other => other,
        }
    }

    fn no_route(&self, reason: &str) -> A2aError {
        let skills = self.snapshot.skill_ids().join(",");
        A2aError::InvalidParams {
            message: format!("{reason}; available skills: [{skills}]"),
            detail: Some(json!({ "availableSkills": skills })),
        }
    }
}

/// What the resolver reads of a message: its words (text parts, data keys, file names) and the
/// media types of its parts.
fn describe(message: &Message) -> (String, Vec<&str>) {
    fn keys(value: &serde_json::Value, text: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    text.push(' ');
                    text.push_str(key);
                    keys(value, text);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| keys(item, text)),
            _ => {}
        }
    }
    let mut text = String::new();
    let mut media_types: Vec<&str> = Vec::new();
    for part in &message.parts {
        let media_type = match &part.content {
            PartContent::Text(words) => {
                text.push(' ');
                text.push_str(words);
                "text/plain"
            }
            PartContent::Data(data) => {
                keys(data, &mut text);
                "application/json"
            }
            PartContent::Raw(_) | PartContent::Url(_) => "application/octet-stream",
        };
        if let Some(name) = &part.filename {
            text.push(' ');
            text.push_str(name);
        }
        let media_type = part.media_type.as_deref().unwrap_or(media_type);
        if !media_types.contains(&media_type) {
            media_types.push(media_type);
        }
    }
    (text, media_types)
}

/// A named skill must be one the agent offers: an agent may dispatch on the name it is given.
fn offers(backend: &Backend, skill: &str) -> Result<(), A2aError> {
    if backend.skills.iter().any(|s| s == skill) {
        return Ok(());
    }
    let skills = backend.skills.join(",");
    Err(A2aError::InvalidParams {
        message: format!("the agent '{}' does not offer the skill named; its skills: [{skills}]", backend.name),
        detail: Some(json!({ "availableSkills": skills })),
    })
}

fn only_skill(backend: &Backend) -> Option<String> {
    match backend.skills.as_slice() {
        [only] => Some(only.clone()),
        _ => None,
    }
}

/// The backend, unless it is unhealthy: then an outage (the retry hint is set by the router).
fn usable(backend: &Arc<Backend>) -> Result<Arc<Backend>, A2aError> {
    if backend.healthy {
        Ok(backend.clone())
    } else {
        Err(A2aError::AgentUnavailable {
            message: format!("the agent '{}' is unavailable; retry later", backend.name),
            retry_after: std::time::Duration::ZERO,
        })
    }
}

/// Amends the checked request with what only the caller's identity settles, before the route is
/// chosen (the agent's body is written from it later, by the leg that sends it):
/// - an early caller's task id becomes the agent's task it stands for, among the caller's own ids
///   (a new task may not reuse an id of the same caller);
/// - a context is kept, never replaced (A2A §3.4.1): the caller's own goes on, one never seen goes
///   on and becomes the caller's once routed ([`claim_context`]), another caller's is refused with
///   [`context_not_available`] — two callers naming the same string never share a context;
/// - every task a message refers to must be the caller's.
pub async fn amend(
    state: &RouteState,
    owner: Option<&Arc<str>>,
    call: &mut A2aCall,
    checked: &mut Checked,
) -> Result<(), A2aError> {
    if let Some(early) = &checked.early {
        let scope = owner.map_or("", |o| &**o);
        if early.new_task {
            if state.early_ids.contains(scope, &early.id).await? {
                return Err(A2aError::invalid_params("the task id is already in use; a new task needs a new id"));
            }
        } else if let Some(task) = state.early_ids.get(scope, &early.id).await? {
            set_task(&mut checked.request, &task.task_id, task.context_id.as_deref());
            call.task_id = Some(task.task_id);
        }
    }
    let (A2aRequest::SendMessage(send) | A2aRequest::SendStreamingMessage(send)) = &mut checked.request else {
        return Ok(());
    };
    if owner.is_none() {
        // Without identities (no authentication configured) there is nothing to isolate by.
        return Ok(());
    }
    if let Some(context_id) = &send.message.context_id
        && state.directory.context(context_id).await?.is_some_and(|entry| entry.owner.as_ref() != owner)
    {
        return Err(context_not_available());
    }
    for task_id in &send.message.reference_task_ids {
        let owned = state.directory.task(task_id).await?.is_some_and(|entry| entry.owner.as_ref() == owner);
        if !owned {
            return Err(A2aError::TaskNotFound);
        }
    }
    Ok(())
}

/// The refusal of a contextId that another caller holds (or won a moment ago). The specification
/// has an agent that cannot accept a client's contextId reject the request, never replace the id.
fn context_not_available() -> A2aError {
    A2aError::invalid_params(
        "this contextId is not available to you; leave it out to start a new context, or choose another id",
    )
}

/// Makes a message's contextId the caller's once its route is known: an unseen context is adopted
/// (first use), the caller's own is kept, and one another caller claimed first is refused. Anonymous
/// callers own nothing and claim nothing.
pub async fn claim_context(
    directory: &dyn TaskDirectory,
    owner: Option<&Arc<str>>,
    call: &A2aCall,
    route: &Route,
) -> Result<(), A2aError> {
    let (Some(owner), Some(context_id)) = (owner, &call.context_id) else { return Ok(()) };
    if !call.operation.is_send() {
        return Ok(());
    }
    let entry = ContextEntry {
        backend: route.backend.name.clone(),
        owner: Some(owner.clone()),
        skill: route.skill.as_deref().map(Arc::from),
    };
    match directory.claim_context(context_id, entry).await? {
        true => Ok(()),
        false => Err(context_not_available()),
    }
}

/// Writes the skill the resolver chose into the message's metadata (`skillId`).
fn name_skill(request: &mut A2aRequest, skill: &str) {
    if let A2aRequest::SendMessage(send) | A2aRequest::SendStreamingMessage(send) = request {
        let metadata = send.message.metadata.get_or_insert_with(Default::default);
        metadata.insert("skillId".to_owned(), serde_json::Value::String(skill.to_owned()));
    }
}

/// Points a request at another task id (and, for a message, that task's context).
fn set_task(request: &mut A2aRequest, task_id: &str, context_id: Option<&str>) {
    match request {
        A2aRequest::SendMessage(send) | A2aRequest::SendStreamingMessage(send) => {
            send.message.task_id = Some(task_id.to_owned());
            if let Some(context_id) = context_id {
                send.message.context_id = Some(context_id.to_owned());
            }
        }
        A2aRequest::GetTask(r) => r.id = task_id.to_owned(),
        A2aRequest::CancelTask(r) => r.id = task_id.to_owned(),
        A2aRequest::SubscribeToTask(r) => r.id = task_id.to_owned(),
        _ => {}
    }
}

/// A push-notification config call on an address whose card promises no push notifications is
/// refused as the card says, before any task is looked up (so the answer is the same for every task
/// id). The address is the agent of a per-agent path, or the gateway itself; an unknown agent is left
/// to routing, which names it.
fn refuse_unpromised_push(snapshot: &crate::registry::Snapshot, call: &A2aCall) -> Result<(), A2aError> {
    let push_call = matches!(
        call.operation,
        Operation::CreateTaskPushNotificationConfig
            | Operation::GetTaskPushNotificationConfig
            | Operation::ListTaskPushNotificationConfigs
            | Operation::DeleteTaskPushNotificationConfig
    );
    if !push_call {
        return Ok(());
    }
    let card = match call.agent.as_deref() {
        None => Some(&snapshot.gateway_card),
        Some(name) => snapshot.agent_card(name),
    };
    match card {
        Some(card) if !card.push => Err(A2aError::PushNotificationNotSupported),
        _ => Ok(()),
    }
}

mod layer;
pub use self::layer::RouteLayer;
pub use self::layer::RouteService;
pub use self::layer::RouteState;
