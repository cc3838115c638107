//! What each example agent does with a turn. The protocol machinery (store, bindings, streams)
//! is shared; only this differs between the four agents.

mod clarify;
mod echo;
mod review;
mod slow;

use std::time::Duration;

use a2a_model::Message;
use futures::future::BoxFuture;

use crate::error::A2aError;
use crate::store::TaskClosed;
use crate::turn::{TurnInput, Updater, Work};
use crate::{AgentKind, AgentOptions};

pub use review::input_schema as review_input_schema;

/// One agent's behaviour with its settings.
#[derive(Debug, Clone)]
pub enum Behaviour {
    Echo,
    Review { step_delay: Duration },
    Clarify,
    Slow { duration: Duration },
}

impl Behaviour {
    pub fn new(kind: AgentKind, options: &AgentOptions) -> Self {
        match kind {
            AgentKind::Echo => Self::Echo,
            AgentKind::Review => Self::Review { step_delay: options.step_delay },
            AgentKind::Clarify => Self::Clarify,
            AgentKind::Slow => Self::Slow { duration: options.slow_duration },
        }
    }

    /// Refuses input the agent cannot work with before any task is created.
    pub fn check(&self, message: &Message) -> Result<(), A2aError> {
        match self {
            Self::Review { .. } => review::check(message),
            Self::Echo | Self::Clarify | Self::Slow { .. } => Ok(()),
        }
    }

    /// Runs one turn; returns early with [`TaskClosed`] when the task was canceled meanwhile.
    pub async fn run(&self, input: &TurnInput, updater: &mut Updater) -> Result<(), TaskClosed> {
        match self {
            Self::Echo => echo::run(input, updater),
            Self::Review { step_delay } => review::run(input, updater, *step_delay).await,
            Self::Clarify => clarify::run(input, updater),
            Self::Slow { duration } => slow::run(updater, *duration).await,
        }
    }
}

impl Work for Behaviour {
    fn run<'a>(&'a self, input: &'a TurnInput, updater: &'a mut Updater) -> BoxFuture<'a, Result<(), TaskClosed>> {
        Box::pin(Behaviour::run(self, input, updater))
    }
}
