//! `clarify`: a two-turn conversation. The first message gets a question and leaves the task
//! in `TASK_STATE_INPUT_REQUIRED`; the answer completes it with an artifact holding both the
//! original request and the answer.

use a2a_model::{Part, Role, TaskState};
use serde_json::json;

use crate::model::{MessageExt, data_part};
use crate::store::TaskClosed;
use crate::turn::{TurnInput, Updater};

pub const QUESTION: &str = "Which environment: staging or production?";

pub fn run(input: &TurnInput, updater: &mut Updater) -> Result<(), TaskClosed> {
    // The task's first user message is the request; any later one answers the question.
    let request = input.task.history.iter().find(|message| message.role == Role::User).unwrap_or(&input.message);
    if request.message_id == input.message.message_id {
        return updater.status(TaskState::InputRequired, Some(QUESTION));
    }
    let request = request.joined_text();
    let answer = input.message.joined_text();
    updater.artifact(
        "result",
        vec![
            Part::text(format!("request: {request}; answer: {answer}")),
            data_part(json!({"request": request, "answer": answer})),
        ],
    )?;
    updater.status(TaskState::Completed, Some("done"))
}
