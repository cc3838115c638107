//! Chooses the backend for a call, in this order: the owner of the task the call names; the agent of
//! a per-agent path; a healthy backend declaring the explicit skill (`metadata.skillId`); the owner
//! of a known context; the configured default skill. Anything else is refused with the list of
//! skills on offer.

use std::sync::Arc;

use a2a_policies::{A2aCall, A2aError};
use serde_json::json;

use crate::directory::TaskDirectory;
use crate::registry::{Backend, Registry, Snapshot};

/// Everything routing reads.
pub struct Router<'a> {
    pub snapshot: &'a Snapshot,
    pub registry: &'a Registry,
    pub directory: &'a dyn TaskDirectory,
    pub default_skill: Option<&'a str>,
}

impl Router<'_> {
    pub async fn route(&self, call: &A2aCall) -> Result<Arc<Backend>, A2aError> {
        if let Some(task_id) = &call.task_id {
            return self.task_owner(call, task_id).await;
        }
        if let Some(agent) = &call.agent {
            let backend = self.snapshot.backend(agent).ok_or_else(|| A2aError::AgentNotFound(agent.clone()))?;
            return usable(backend);
        }
        if let Some(skill) = &call.skill_id {
            return self.by_skill(skill);
        }
        if let Some(context_id) = &call.context_id
            && let Some(owner) = self.directory.context_owner(context_id).await
            && let Some(backend) = self.snapshot.backend(&owner)
        {
            return usable(backend);
        }
        if let Some(skill) = self.default_skill {
            return self.by_skill(skill);
        }
        Err(self.no_route("name a skill in the message's metadata.skillId"))
    }

    /// The owner of a task; a task the gateway never saw, or one owned by an agent other than the
    /// per-agent path names, does not exist for the caller.
    async fn task_owner(&self, call: &A2aCall, task_id: &str) -> Result<Arc<Backend>, A2aError> {
        let entry = self.directory.task(task_id).await.ok_or(A2aError::TaskNotFound)?;
        if call.agent.as_deref().is_some_and(|agent| agent != &*entry.backend) {
            return Err(A2aError::TaskNotFound);
        }
        let backend = self.snapshot.backend(&entry.backend).ok_or(A2aError::TaskNotFound)?;
        usable(backend)
    }

    fn by_skill(&self, skill: &str) -> Result<Arc<Backend>, A2aError> {
        let candidates = self.snapshot.with_skill(skill);
        match self.registry.pick(&candidates) {
            Some(backend) => Ok(backend.clone()),
            None => Err(self.no_route(&format!("no available agent offers the skill '{skill}'"))),
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

fn usable(backend: &Arc<Backend>) -> Result<Arc<Backend>, A2aError> {
    if backend.healthy {
        Ok(backend.clone())
    } else {
        Err(A2aError::BackendUnavailable(format!("the agent '{}' is unavailable; try again later", backend.name)))
    }
}
