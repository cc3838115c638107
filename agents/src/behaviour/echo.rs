//! `echo`: returns the message's text as an artifact named `echo` and completes.

use a2a_model::{Part, TaskState};

use crate::model::MessageExt;
use crate::store::TaskClosed;
use crate::turn::{TurnInput, Updater};

pub fn run(input: &TurnInput, updater: &mut Updater) -> Result<(), TaskClosed> {
    updater.artifact("echo", vec![Part::text(input.message.joined_text())])?;
    updater.status(TaskState::Completed, None)
}
