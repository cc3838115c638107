//! What the gateway learned about a request when it decoded it: the request extension every policy
//! and the router read instead of parsing the body again.

use std::fmt;

use crate::{Caller, ClientAddress, ClientCertificate};

/// The wire binding a caller used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP POST.
    JsonRpc,
    /// HTTP+JSON ("REST") with operation-specific paths.
    Rest,
}

impl Binding {
    /// The binding's name as the specification's cards write it (`JSONRPC`, `HTTP+JSON`).
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::Rest => "HTTP+JSON",
        }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The generation of A2A a caller speaks. Policies always see the call in its 1.0 form (the gateway
/// translates the others at the edge); the dialect says how the answer must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// A2A 1.0 (JSON-RPC or HTTP+JSON).
    #[default]
    V1,
    /// A2A 0.3 JSON-RPC (`message/send`, …).
    V03,
    /// The early REST dialect (`POST /tasks/send`, …).
    Early,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::V1 => "1.0",
            Dialect::V03 => "0.3",
            Dialect::Early => "early",
        })
    }
}

/// An A2A operation: defined with the wire model (`a2a-model`), whose requests it names; re-exported
/// so that a call's facts come from one crate.
pub use a2a_model::Operation;

/// What the decoder learned about an A2A request: what policies and routing need beside the checked
/// request itself.
#[derive(Debug, Clone, PartialEq)]
pub struct A2aCall {
    /// The binding of the call's 1.0 form (0.3 callers: JSON-RPC; early callers: HTTP+JSON).
    pub binding: Binding,
    /// The dialect the caller spoke; answers go back in it.
    pub dialect: Dialect,
    pub operation: Operation,
    /// The JSON-RPC request id, echoed in every answer (JSON-RPC only).
    pub rpc_id: Option<serde_json::Value>,
    /// The agent named by a per-agent path (`/agents/{name}/…`), if any.
    pub agent: Option<String>,
    /// The task the call is about: `params.id` of task calls, `message.taskId` of a continuation.
    pub task_id: Option<String>,
    /// `message.contextId` of a send.
    pub context_id: Option<String>,
    /// Explicit skill requested with `metadata.skillId` on the message or the request.
    pub skill_id: Option<String>,
}

impl A2aCall {
    /// A call with only binding and operation known; the decoder fills in the rest.
    pub fn new(binding: Binding, operation: Operation) -> A2aCall {
        A2aCall {
            binding,
            dialect: Dialect::V1,
            operation,
            rpc_id: None,
            agent: None,
            task_id: None,
            context_id: None,
            skill_id: None,
        }
    }
}

/// Where routing sends a call, decided right after authentication so that permissions, limits and
/// validation can look at the skill and backend. A request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteHint {
    pub backend: std::sync::Arc<str>,
    /// The skill the call uses, when the gateway can tell: the explicit `metadata.skillId`, the skill
    /// a continued task was created with, or the only skill of the chosen backend.
    pub skill: Option<String>,
    /// Every skill the call may exercise at the backend, which authorization checks one by one: the
    /// skill it names and the skill of the task it continues, or, when it names none and the agent
    /// hosts several, all of the agent's skills.
    pub skills: Vec<String>,
}

/// Request-scoped facts that inner layers set and outer layers (audit, metrics, spans) read after the
/// inner layers have run. Created by the decode layer; cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct RequestInfo(std::sync::Arc<RequestInfoInner>);

#[derive(Debug)]
struct RequestInfoInner {
    request_id: String,
    started: std::time::Instant,
    caller: std::sync::OnceLock<crate::Caller>,
    route: std::sync::OnceLock<RouteHint>,
    denial_detail: std::sync::OnceLock<String>,
    route_reason: std::sync::OnceLock<String>,
    /// Time the backend took to answer (to its response headers), in nanoseconds; 0 until set.
    backend_nanos: std::sync::atomic::AtomicU64,
}

impl RequestInfo {
    pub fn new(request_id: String) -> RequestInfo {
        RequestInfo(std::sync::Arc::new(RequestInfoInner {
            request_id,
            started: std::time::Instant::now(),
            caller: std::sync::OnceLock::new(),
            route: std::sync::OnceLock::new(),
            denial_detail: std::sync::OnceLock::new(),
            route_reason: std::sync::OnceLock::new(),
            backend_nanos: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    pub fn request_id(&self) -> &str {
        &self.0.request_id
    }

    pub fn started(&self) -> std::time::Instant {
        self.0.started
    }

    /// Records the authenticated caller (first call wins).
    pub fn set_caller(&self, caller: crate::Caller) {
        let _ = self.0.caller.set(caller);
    }

    pub fn caller(&self) -> Option<&crate::Caller> {
        self.0.caller.get()
    }

    /// Records the route (first call wins).
    pub fn set_route(&self, route: RouteHint) {
        let _ = self.0.route.set(route);
    }

    pub fn route(&self) -> Option<&RouteHint> {
        self.0.route.get()
    }

    /// Why a request was refused, in more detail than the caller is told (e.g. which JWT check
    /// failed). For the audit log and operator logs only.
    pub fn set_denial_detail(&self, detail: impl Into<String>) {
        let _ = self.0.denial_detail.set(detail.into());
    }

    pub fn denial_detail(&self) -> Option<&str> {
        self.0.denial_detail.get().map(String::as_str)
    }

    /// How routing chose the skill when the call named none (e.g. the resolver's rule and scores).
    pub fn set_route_reason(&self, reason: impl Into<String>) {
        let _ = self.0.route_reason.set(reason.into());
    }

    pub fn route_reason(&self) -> Option<&str> {
        self.0.route_reason.get().map(String::as_str)
    }

    /// Adds time spent waiting on backends (a failed-over call waits on more than one).
    pub fn add_backend_time(&self, elapsed: std::time::Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.0.backend_nanos.fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn backend_time(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0.backend_nanos.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// The checked request of a call, in its 1.0 form: the request extension beside [`A2aCall`] that
/// every layer reads instead of the body (the body is this model written out for the agent). Routing
/// may amend it, writing the body again from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub request: a2a_model::Request,
    /// An early caller's own task id: routing maps it to the agent's task once it knows the caller.
    pub early: Option<EarlyCall>,
}

impl Checked {
    /// The message of a send (`SendMessage` or `SendStreamingMessage`); `None` for other operations.
    pub fn message(&self) -> Option<&a2a_model::Message> {
        match &self.request {
            a2a_model::Request::SendMessage(send) | a2a_model::Request::SendStreamingMessage(send) => {
                Some(&send.message)
            }
            _ => None,
        }
    }
}

/// A call as it travels inside the A2A stack: the caller's HTTP head, with the per-request context
/// as its body. Boxed once, so that passing the call from layer to layer moves a pointer.
pub type CallRequest = http::Request<Box<CallContext>>;

/// The per-request context: the body of every request inside the A2A stack ([`CallRequest`]),
/// built once by the decode layer and carried through every layer to the forward service. What
/// the decoder establishes is a field, so that a layer cannot run without it; what layers add on
/// the way is written into it in place (the authenticated caller) or into its [`RequestInfo`]
/// (the route, which the outer layers read after the call), never into a typemap.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// What the decoder learned about the call.
    pub call: A2aCall,
    /// The checked request, in its 1.0 form: what every layer reads instead of the body.
    pub checked: Checked,
    /// The facts outer layers (audit, metrics, spans) read after the inner ones ran.
    pub info: RequestInfo,
    /// The address the call came from (the listener's judgement: the peer, or a trusted proxy's
    /// client), when the listener gave one.
    pub client: Option<ClientAddress>,
    /// The client certificate the listener verified (mutual TLS).
    pub certificate: Option<ClientCertificate>,
    /// Who is calling: the caller known by its address until authentication, when configured,
    /// replaces it with the one it verified.
    pub caller: Caller,
}

impl CallContext {
    /// Where routing sends the call; `None` before routing and for the calls the gateway answers
    /// across backends (ListTasks, GetExtendedAgentCard). Kept once, in [`RequestInfo`], where the
    /// outer layers read it too.
    pub fn route(&self) -> Option<&RouteHint> {
        self.info.route()
    }

    /// The context of a call the decoder read: the caller is the address's until authentication.
    pub fn new(call: A2aCall, checked: Checked, info: RequestInfo, client: Option<ClientAddress>) -> CallContext {
        let address = client.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.0);
        CallContext { call, checked, info, client, certificate: None, caller: Caller::anonymous(address) }
    }

    /// A context for driving a layer directly (tests, the policy benchmark): `call` with an empty
    /// checked request (a GetExtendedAgentCard's), no client address (so no limit keyed by
    /// one applies) and the anonymous caller of 0.0.0.0. Set the fields a layer under test reads.
    #[doc(hidden)]
    pub fn for_test(call: A2aCall, request_id: &str) -> CallContext {
        let checked = Checked {
            request: a2a_model::Request::GetExtendedAgentCard(a2a_model::GetExtendedAgentCardRequest::default()),
            early: None,
        };
        CallContext::new(call, checked, RequestInfo::new(request_id.to_owned()), None)
    }
}

/// The task id an early caller names, and whether its call starts a task under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyCall {
    pub id: String,
    pub new_task: bool,
}
