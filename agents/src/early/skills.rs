//! What the early agent does with a turn: `early-echo` sends the message's parts back as an artifact;
//! `early-clarify` asks a question first (input-required) and completes with the answer, like the
//! reference harness's multiturn agent.

use super::model::{Artifact, Message, Role, TaskState};

pub const ECHO: &str = "early-echo";
pub const CLARIFY: &str = "early-clarify";
pub const SKILLS: [&str; 2] = [ECHO, CLARIFY];

pub const QUESTION: &str = "Which environment: staging or production?";

/// The end of a turn: the state it leaves the task in, the agent's word, new artifacts.
pub struct Outcome {
    pub state: TaskState,
    pub message: Option<Message>,
    pub artifacts: Vec<Artifact>,
}

/// Runs one turn of `skill`; `history` holds the task's messages, the new one last.
pub fn run(skill: &str, history: &[Message]) -> Outcome {
    let Some(latest) = history.last() else {
        return Outcome { state: TaskState::Failed, message: Some(Message::agent("no message")), artifacts: vec![] };
    };
    if skill == CLARIFY {
        let user_turns = history.iter().filter(|m| m.role == Role::User).count();
        if user_turns < 2 {
            return Outcome {
                state: TaskState::InputRequired,
                message: Some(Message::agent(QUESTION)),
                artifacts: vec![],
            };
        }
        let answer = latest.joined_text();
        let artifact = Artifact {
            name: Some("result".into()),
            description: None,
            parts: vec![super::model::Part::text(format!("deploying to {}", answer.trim()))],
        };
        return Outcome {
            state: TaskState::Completed,
            message: Some(Message::agent("done")),
            artifacts: vec![artifact],
        };
    }
    let artifact = Artifact { name: Some("echo".into()), description: None, parts: latest.parts.clone() };
    Outcome { state: TaskState::Completed, message: None, artifacts: vec![artifact] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::early::model::Part;

    fn user(text: &str) -> Message {
        Message { role: Role::User, parts: vec![Part::text(text)], metadata: None }
    }

    #[test]
    fn echo_returns_the_parts() {
        let outcome = run(ECHO, &[user("hello")]);
        assert_eq!(outcome.state, TaskState::Completed);
        assert_eq!(outcome.artifacts[0].parts, [Part::text("hello")]);
    }

    #[test]
    fn clarify_asks_then_completes() {
        let first = run(CLARIFY, &[user("deploy my service")]);
        assert_eq!(first.state, TaskState::InputRequired);
        let history = [user("deploy my service"), Message::agent(QUESTION), user("staging")];
        let second = run(CLARIFY, &history);
        assert_eq!(second.state, TaskState::Completed);
        assert_eq!(second.artifacts[0].parts, [Part::text("deploying to staging")]);
    }
}
