//! `echo`: returns the message's text as an artifact named `echo` and completes.

use crate::model::{Part, TaskState};
use crate::store::TaskClosed;
use crate::turn::{TurnInput, Updater};

pub fn run(input: &TurnInput, updater: &mut Updater) -> Result<(), TaskClosed> {
    updater.artifact("echo", vec![Part::text(input.message.joined_text())])?;
    updater.status(TaskState::Completed, None)
}
