//! The model's proto enums (`ROLE_*`, `TASK_STATE_*`), written by name and read leniently: an
//! unknown name or number reads as `*_UNSPECIFIED` instead of failing the whole answer.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// Declares a proto enum serialised by name, read leniently (unknown names → the first variant).
macro_rules! proto_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The proto enum name, as it appears on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            /// Looks a variant up by its proto name.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " name or number"))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::from_name(v).unwrap_or_default())
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        // ProtoJSON parsers accept the enum number too.
                        Ok(usize::try_from(v).ok().and_then(|i| $name::BY_NUMBER.get(i).copied()).unwrap_or_default())
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        match u64::try_from(v) {
                            Ok(v) => self.visit_u64(v),
                            Err(_) => Ok($name::default()),
                        }
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

proto_enum! {
    /// Who wrote a message.
    Role {
        Unspecified = "ROLE_UNSPECIFIED",
        User = "ROLE_USER",
        Agent = "ROLE_AGENT",
    }
}

impl Role {
    const BY_NUMBER: &'static [Role] = &[Role::Unspecified, Role::User, Role::Agent];
}

proto_enum! {
    /// The lifecycle state of a task.
    TaskState {
        Unspecified = "TASK_STATE_UNSPECIFIED",
        Submitted = "TASK_STATE_SUBMITTED",
        Working = "TASK_STATE_WORKING",
        Completed = "TASK_STATE_COMPLETED",
        Failed = "TASK_STATE_FAILED",
        Canceled = "TASK_STATE_CANCELED",
        InputRequired = "TASK_STATE_INPUT_REQUIRED",
        Rejected = "TASK_STATE_REJECTED",
        AuthRequired = "TASK_STATE_AUTH_REQUIRED",
    }
}

impl TaskState {
    /// Proto numbering (`a2a.proto`): the order of declaration above.
    const BY_NUMBER: &'static [TaskState] = TaskState::ALL;

    /// No further change can happen to a task in this state.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected)
    }

    /// The agent waits for the caller.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// A stream ends after an event carrying this state.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }

    /// Live states hold a concurrency lease: the task is running or waiting on the caller.
    pub fn is_live(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working | TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Reads a wire name leniently: an unknown name is `Unspecified`.
    pub fn from_wire(name: &str) -> TaskState {
        TaskState::from_name(name).unwrap_or_default()
    }
}
