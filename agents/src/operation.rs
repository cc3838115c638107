//! The 1.0 operations, decoded the same way from either binding, and their execution against
//! the agent's task store and behaviour.

use std::sync::Arc;

use a2a_model::{Message, StreamResponse, Task, TaskState, TaskStatus};
use futures::stream::{self, BoxStream, StreamExt};
use serde::Serialize;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;

use crate::behaviour::Behaviour;
use crate::error::A2aError;
use crate::listing::{self, ListTasksResponse};
use crate::model::{EventExt, TaskExt, new_id};
use crate::requests::{self, GetTaskRequest, ListTasksRequest, SendMessageRequest, TaskIdRequest};
use crate::store::{Subscription, TaskStore};
use crate::turn::{self, TurnInput};

/// A decoded request.
#[derive(Debug)]
pub enum Operation {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(TaskIdRequest),
    SubscribeToTask(TaskIdRequest),
    /// Any of the four push-notification-config operations: these agents have none.
    PushNotificationConfig,
    GetExtendedAgentCard,
}

/// A unary result, serialised bare (HTTP+JSON) or as a JSON-RPC `result`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Unary {
    /// SendMessage: `{"task": …}`.
    Sent(StreamResponse),
    Task(Task),
    List(ListTasksResponse),
}

/// What an operation produces.
pub enum Reply {
    Unary(Box<Unary>),
    Stream(BoxStream<'static, StreamResponse>),
}

/// The protocol side of one agent: its tasks, its behaviour and its shutdown signal.
pub struct Agent {
    pub store: Arc<TaskStore>,
    pub behaviour: Arc<Behaviour>,
    /// Cancelled at server shutdown: open streams and blocking sends stop waiting.
    pub shutdown: CancellationToken,
}

impl Agent {
    pub async fn execute(&self, operation: Operation) -> Result<Reply, A2aError> {
        match operation {
            Operation::SendMessage(request) => self.send(request).await.map(|sent| Reply::Unary(Box::new(sent))),
            Operation::SendStreamingMessage(request) => self.send_streaming(request).map(Reply::Stream),
            Operation::GetTask(request) => self.get(&request).map(|t| Reply::Unary(Box::new(Unary::Task(t)))),
            Operation::ListTasks(request) => {
                listing::list(&self.store, &request).map(|l| Reply::Unary(Box::new(Unary::List(l))))
            }
            Operation::CancelTask(request) => {
                requests::require_id(&request.id)?;
                let task = self.store.cancel(&request.id, "cancelled by request")?;
                Ok(Reply::Unary(Box::new(Unary::Task(task))))
            }
            Operation::SubscribeToTask(request) => {
                requests::require_id(&request.id)?;
                let subscription = self.store.subscribe(&request.id)?;
                let first = StreamResponse::Task(subscription.snapshot.clone());
                Ok(Reply::Stream(self.live(Some(first), subscription)))
            }
            Operation::PushNotificationConfig => Err(A2aError::PushNotificationNotSupported),
            Operation::GetExtendedAgentCard => Err(A2aError::ExtendedAgentCardNotConfigured),
        }
    }

    fn get(&self, request: &GetTaskRequest) -> Result<Task, A2aError> {
        requests::require_id(&request.id)?;
        let history_length = requests::history_length(request.history_length)?;
        let task = self.store.get(&request.id).ok_or(A2aError::TaskNotFound)?;
        Ok(task.with_history_length(history_length))
    }

    /// SendMessage: waits until the task rests (terminal or waiting for input) unless
    /// `returnImmediately` asks for the first snapshot.
    async fn send(&self, request: SendMessageRequest) -> Result<Unary, A2aError> {
        let history_length = request.history_length()?;
        let return_immediately = request.return_immediately();
        let (mut subscription, _) = self.start_turn(request)?;
        let task = if return_immediately {
            subscription.snapshot
        } else {
            let task_id = subscription.snapshot.id;
            self.wait_until_at_rest(&task_id, &mut subscription.events).await;
            self.store.get(&task_id).ok_or(A2aError::TaskNotFound)?
        };
        Ok(Unary::Sent(StreamResponse::Task(task.with_history_length(history_length))))
    }

    /// SendStreamingMessage: a new task starts with its snapshot, a follow-up does not.
    fn send_streaming(&self, request: SendMessageRequest) -> Result<BoxStream<'static, StreamResponse>, A2aError> {
        let history_length = request.history_length()?;
        let (subscription, is_new) = self.start_turn(request)?;
        let first =
            is_new.then(|| StreamResponse::Task(subscription.snapshot.clone().with_history_length(history_length)));
        Ok(self.live(first, subscription))
    }

    /// Validates the message, creates or continues its task, subscribes, then starts the turn
    /// (in that order, so the subscription sees every event of the turn).
    fn start_turn(&self, request: SendMessageRequest) -> Result<(Subscription, bool), A2aError> {
        request.validate()?;
        self.behaviour.check(&request.message)?;
        let (subscription, is_new) = match request.task_id().map(str::to_owned) {
            Some(task_id) => (self.store.continue_with(&task_id, request.message)?, false),
            None => (self.store.create(new_task(request.message)), true),
        };
        let message = subscription
            .snapshot
            .history
            .last()
            .cloned()
            .ok_or_else(|| A2aError::Internal("task without its message".into()))?;
        let input = TurnInput { task: subscription.snapshot.clone(), message };
        turn::spawn(Arc::clone(&self.store), Arc::clone(&self.behaviour), input);
        Ok((subscription, is_new))
    }

    async fn wait_until_at_rest(&self, task_id: &str, events: &mut broadcast::Receiver<StreamResponse>) {
        loop {
            let event = tokio::select! {
                _ = self.shutdown.cancelled() => return,
                event = events.recv() => event,
            };
            match event {
                Ok(event) if event.closes_stream() => return,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) if self.store.get(task_id).is_none_or(|t| at_rest(&t)) => return,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// Live events of a task after `first`, ending after the first terminal or interrupted
    /// status (or at shutdown).
    fn live(&self, first: Option<StreamResponse>, subscription: Subscription) -> BoxStream<'static, StreamResponse> {
        let follower = Follower {
            task_id: subscription.snapshot.id,
            events: subscription.events,
            store: Arc::clone(&self.store),
            shutdown: self.shutdown.clone(),
            done: false,
        };
        let head = stream::iter(first);
        let tail = stream::unfold(follower, Follower::next);
        head.chain(tail).boxed()
    }
}

fn at_rest(task: &Task) -> bool {
    task.status.state.is_terminal() || task.status.state.is_interrupted()
}

/// A new task in `TASK_STATE_SUBMITTED` holding the message; the caller's contextId is kept.
fn new_task(mut message: Message) -> Task {
    let id = new_id();
    let context_id = message.context_id.clone().filter(|c| !c.is_empty()).unwrap_or_else(new_id);
    message.task_id = Some(id.clone());
    message.context_id = Some(context_id.clone());
    Task {
        id,
        context_id,
        status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: None },
        artifacts: Vec::new(),
        history: vec![message],
        metadata: None,
    }
}

/// Follows one task's broadcast channel for a stream.
struct Follower {
    task_id: String,
    events: broadcast::Receiver<StreamResponse>,
    store: Arc<TaskStore>,
    shutdown: CancellationToken,
    done: bool,
}

impl Follower {
    async fn next(mut self) -> Option<(StreamResponse, Self)> {
        if self.done {
            return None;
        }
        let event = tokio::select! {
            _ = self.shutdown.cancelled() => return None,
            event = self.events.recv() => event,
        };
        match event {
            Ok(event) => {
                self.done = event.closes_stream();
                Some((event, self))
            }
            // Fell behind: resynchronise the reader with a fresh snapshot.
            Err(RecvError::Lagged(_)) => {
                let task = self.store.get(&self.task_id)?;
                self.done = at_rest(&task);
                Some((StreamResponse::Task(task), self))
            }
            Err(RecvError::Closed) => None,
        }
    }
}
