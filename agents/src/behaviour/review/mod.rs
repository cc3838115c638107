//! `review-pr`: three progress steps, then a data artifact `review` with findings, then done.
//!
//! Input is either plain text naming the change (answered with example findings) or, in the
//! message's first data part, a JSON object matching [`input_schema`] with the diff to scan.

mod findings;
mod input;

use std::time::Duration;

use a2a_model::{Message, TaskState};
use serde_json::json;

use crate::error::A2aError;
use crate::model::data_part;
use crate::store::TaskClosed;
use crate::turn::{TurnInput, Updater};

pub use input::input_schema;

const STEPS: [&str; 3] = ["step 1/3: fetching diff", "step 2/3: analysing changes", "step 3/3: writing findings"];

pub fn check(message: &Message) -> Result<(), A2aError> {
    input::ReviewInput::from_message(message).map(|_| ())
}

pub async fn run(input: &TurnInput, updater: &mut Updater, step_delay: Duration) -> Result<(), TaskClosed> {
    for (index, step) in STEPS.iter().enumerate() {
        if index > 0 {
            tokio::time::sleep(step_delay).await;
        }
        updater.status(TaskState::Working, Some(step))?;
    }
    tokio::time::sleep(step_delay).await;
    let report = match input::ReviewInput::from_message(&input.message) {
        Ok(review) => json!({
            "findings": review.findings(),
            "pr": review.pr_name(&input.message),
        }),
        // Checked before the task was created; kept as a failure rather than a panic.
        Err(error) => return updater.status(TaskState::Failed, Some(&error.to_string())),
    };
    updater.artifact("review", vec![data_part(report)])?;
    updater.status(TaskState::Completed, Some("review done"))
}
