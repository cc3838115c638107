//! The early agent card at `/.well-known/agent.json`, in the seed's shape: `name`, `description`,
//! `url`, `version`, `capabilities`, `authentication`, `defaultInputModes` / `defaultOutputModes`,
//! `skills`. The early-echo skill carries an `inputSchema`, as the seed document puts one on skills.

use serde_json::{Value, json};

use super::skills::{CLARIFY, ECHO};

pub const PATH: &str = "/.well-known/agent.json";

/// The card of an early agent reached at `base_url`.
pub fn describe(base_url: &str) -> Value {
    json!({
        "name": "Early Agent",
        "description": "An agent speaking the early A2A REST dialect: tasks/send, tasks/sendSubscribe.",
        "url": format!("{}/", base_url.trim_end_matches('/')),
        "version": "0.1.0",
        "capabilities": {"streaming": true, "pushNotifications": false, "stateTransitionHistory": false},
        "authentication": {"schemes": []},
        "defaultInputModes": ["text", "text/plain"],
        "defaultOutputModes": ["text", "text/plain"],
        "skills": [
            {
                "id": ECHO,
                "name": "Echo (early)",
                "description": "Sends the message's parts back as an artifact named echo.",
                "tags": ["test", "echo", "early"],
                "examples": ["hello"],
                "inputSchema": {"type": "object"}
            },
            {
                "id": CLARIFY,
                "name": "Clarify (early)",
                "description": "Asks which environment (input-required), then completes with the answer.",
                "tags": ["test", "multi-turn", "early"],
                "examples": ["deploy my service"]
            }
        ]
    })
}
