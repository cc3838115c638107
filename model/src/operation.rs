//! The A2A operations, named as in A2A 1.0: what a request asks for, whichever binding or dialect
//! carried it.

use std::fmt;

/// An A2A operation, named as in A2A 1.0 (the gRPC method names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
}

impl Operation {
    /// Every operation, in the order of the specification.
    pub const ALL: [Operation; 11] = [
        Operation::SendMessage,
        Operation::SendStreamingMessage,
        Operation::GetTask,
        Operation::ListTasks,
        Operation::CancelTask,
        Operation::SubscribeToTask,
        Operation::CreateTaskPushNotificationConfig,
        Operation::GetTaskPushNotificationConfig,
        Operation::ListTaskPushNotificationConfigs,
        Operation::DeleteTaskPushNotificationConfig,
        Operation::GetExtendedAgentCard,
    ];

    /// The A2A 1.0 JSON-RPC method name.
    pub fn method_name(self) -> &'static str {
        match self {
            Operation::SendMessage => "SendMessage",
            Operation::SendStreamingMessage => "SendStreamingMessage",
            Operation::GetTask => "GetTask",
            Operation::ListTasks => "ListTasks",
            Operation::CancelTask => "CancelTask",
            Operation::SubscribeToTask => "SubscribeToTask",
            Operation::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Operation::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Operation::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Operation::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            Operation::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// Looks an operation up by its A2A 1.0 JSON-RPC method name.
    pub fn from_method_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| op.method_name() == name)
    }

    /// Whether the answer is an SSE stream.
    pub fn is_streaming(self) -> bool {
        matches!(self, Operation::SendStreamingMessage | Operation::SubscribeToTask)
    }

    /// Whether the operation creates or continues a task with a message.
    pub fn is_send(self) -> bool {
        matches!(self, Operation::SendMessage | Operation::SendStreamingMessage)
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method_name())
    }
}
