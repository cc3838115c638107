//! The small types of A2A 0.3 JSON: the `kind` discriminators, roles `user` / `agent`, kebab-case
//! task states — and their 1.0 counterparts. `ROLE_UNSPECIFIED` becomes `agent`;
//! `TASK_STATE_UNSPECIFIED` becomes `unknown` and back; a state 0.3 does not know reads as `unknown`.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate as model;

/// A `kind` discriminator that always writes its one value and, when present, must read it.
macro_rules! kind_tag {
    ($name:ident = $value:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let kind = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                if kind == $value {
                    Ok($name)
                } else {
                    Err(de::Error::custom(format!(concat!("expected kind '", $value, "', found '{}'"), kind)))
                }
            }
        }
    };
}

kind_tag!(TaskKind = "task");
kind_tag!(MessageKind = "message");
kind_tag!(StatusUpdateKind = "status-update");
kind_tag!(ArtifactUpdateKind = "artifact-update");

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

impl From<model::Role> for Role {
    fn from(role: model::Role) -> Role {
        match role {
            model::Role::User => Role::User,
            // 0.3 has no "unspecified"; the SDK makes everything else an agent message.
            model::Role::Agent | model::Role::Unspecified => Role::Agent,
        }
    }
}

impl From<Role> for model::Role {
    fn from(role: Role) -> model::Role {
        match role {
            Role::User => model::Role::User,
            Role::Agent => model::Role::Agent,
        }
    }
}

/// A task state, lower-case kebab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Canceled,
    Failed,
    Rejected,
    AuthRequired,
    Unknown,
}

impl TaskState {
    pub const ALL: [TaskState; 9] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
        TaskState::Rejected,
        TaskState::AuthRequired,
        TaskState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TaskState, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TaskState;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a task state")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TaskState, E> {
                // A state from a later version is not a reason to drop the whole answer.
                Ok(TaskState::ALL.into_iter().find(|s| s.as_str() == v).unwrap_or(TaskState::Unknown))
            }
        }
        d.deserialize_str(V)
    }
}

impl From<model::TaskState> for TaskState {
    fn from(state: model::TaskState) -> TaskState {
        match state {
            model::TaskState::Unspecified => TaskState::Unknown,
            model::TaskState::Submitted => TaskState::Submitted,
            model::TaskState::Working => TaskState::Working,
            model::TaskState::Completed => TaskState::Completed,
            model::TaskState::Failed => TaskState::Failed,
            model::TaskState::Canceled => TaskState::Canceled,
            model::TaskState::InputRequired => TaskState::InputRequired,
            model::TaskState::Rejected => TaskState::Rejected,
            model::TaskState::AuthRequired => TaskState::AuthRequired,
        }
    }
}

impl From<TaskState> for model::TaskState {
    fn from(state: TaskState) -> model::TaskState {
        match state {
            TaskState::Unknown => model::TaskState::Unspecified,
            TaskState::Submitted => model::TaskState::Submitted,
            TaskState::Working => model::TaskState::Working,
            TaskState::Completed => model::TaskState::Completed,
            TaskState::Failed => model::TaskState::Failed,
            TaskState::Canceled => model::TaskState::Canceled,
            TaskState::InputRequired => model::TaskState::InputRequired,
            TaskState::Rejected => model::TaskState::Rejected,
            TaskState::AuthRequired => model::TaskState::AuthRequired,
        }
    }
}
