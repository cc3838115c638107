//! Screens an agent's unary answer before it reaches the caller: the agent's internals (stack traces,
//! hosts, passwords in a 500 body, an HTML error page) never do.
//!
//! - A success passes unchanged, unless its body is not JSON at all (an HTML page with status 200).
//! - An A2A error the protocol gives callers (JSON-RPC error objects with the spec's codes, or an
//!   HTTP+JSON google.rpc.Status naming an A2A reason: task not found, not cancelable, invalid
//!   params, ...) becomes [`A2aError::AgentRefused`]: its code and reason are kept, the gateway
//!   renders it in the caller's dialect, and the agent's message is kept only when it is one short
//!   plain line that names no host, address, URL or secret (else the protocol's standard message).
//!   The agent's `data` / `details` are dropped: their metadata is free-form.
//! - Anything else (an internal error, a code outside the spec, a 5xx, garbage) becomes
//!   [`A2aError::AgentFailed`] with the request id; the agent's answer goes to the log under it.

use a2a_core::{A2aError, Binding};
use http::StatusCode;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::observe::{Payload, TaskFact, fact_in, fact_of};

use a2a_model::ErrorKind;

/// What an answer is, for the caller.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Relay it as it is.
    Pass,
    /// One of the protocol's errors, screened.
    Refused { code: i32, message: String },
    /// The agent failed; nothing of its answer is relayed.
    Failed,
}

/// Judges an answer in 1.0 form, in `binding`.
pub fn screen(binding: Binding, status: StatusCode, body: &[u8]) -> Verdict {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if status.is_success() {
        match first {
            None => return Verdict::Pass,
            Some(b'{' | b'[') => {}
            Some(_) => return Verdict::Failed,
        }
        // Only a body that mentions `"error"` can be an error: the common answer is not parsed.
        if !contains(body, b"\"error\"") {
            return Verdict::Pass;
        }
        if binding == Binding::Rest {
            // A top-level `error` is no HTTP+JSON success; a body that does not parse is none either.
            return if RpcEnvelope::has_error(body) { Verdict::Failed } else { Verdict::Pass };
        }
        return match read::<RpcEnvelope>(body) {
            Ok(RpcEnvelope { error: Some(error) }) => refused(error.code, &error.message),
            Ok(RpcEnvelope { error: None }) => Verdict::Pass,
            Err(_) => Verdict::Failed,
        };
    }
    match binding {
        Binding::JsonRpc => match read::<RpcEnvelope>(body) {
            Ok(RpcEnvelope { error: Some(error) }) => refused(error.code, &error.message),
            _ => Verdict::Failed,
        },
        Binding::Rest => match read::<RestEnvelope>(body) {
            Ok(RestEnvelope { error: Some(error) }) => {
                let reason = error.details.iter().find_map(|d| d.get("reason")?.as_str().map(str::to_owned));
                match reason.as_deref().and_then(ErrorKind::from_reason).or_else(|| kind_of_bare_status(status)) {
                    Some(kind) => refused(kind.code(), &error.message),
                    None => Verdict::Failed,
                }
            }
            _ => Verdict::Failed,
        },
    }
}

/// What an HTTP+JSON error that names no ErrorInfo reason of the specification (a google.rpc.Status
/// with no details, as some agents write it, or with a reason of their own) says by its status
/// alone: 404 a task not found, 400 or 422 invalid params, 501 an operation the agent does not
/// support (as the 0.3 and early dialects read their 501). Any other status names no A2A error.
/// Read the same whether the answer is relayed or bridged.
pub fn kind_of_bare_status(status: StatusCode) -> Option<ErrorKind> {
    match status.as_u16() {
        404 => Some(ErrorKind::TaskNotFound),
        400 | 422 => Some(ErrorKind::InvalidParams),
        501 => Some(ErrorKind::UnsupportedOperation),
        _ => None,
    }
}

#[derive(Deserialize)]
struct RpcEnvelope {
    #[serde(default)]
    error: Option<RpcError>,
}

/// Any top-level `error` member, for an HTTP+JSON success that should have none.
impl RpcEnvelope {
    fn has_error(body: &[u8]) -> bool {
        read::<AnyError>(body).map_or(true, |e| e.error.is_some())
    }
}

#[derive(Deserialize)]
struct AnyError {
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct RpcError {
    code: i64,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct RestEnvelope {
    #[serde(default)]
    error: Option<RestStatus>,
}

#[derive(Deserialize)]
struct RestStatus {
    #[serde(default)]
    message: String,
    #[serde(default)]
    details: Vec<Value>,
}

/// A caller-facing error of the specification keeps its code; others mean the agent failed.
fn refused(code: i64, message: &str) -> Verdict {
    let kind = ErrorKind::from_code(code);
    let for_callers = !matches!(kind, ErrorKind::Internal | ErrorKind::InvalidAgentResponse | ErrorKind::Other(_));
    match (for_callers, i32::try_from(code)) {
        (true, Ok(code)) => Verdict::Refused { code, message: plain_message(message, kind) },
        _ => Verdict::Failed,
    }
}

/// The agent's message when it is plain, else the protocol's standard one for `kind`.
fn plain_message(message: &str, kind: ErrorKind) -> String {
    if is_plain(message) { message.to_owned() } else { kind.default_message().to_owned() }
}

/// One short line with nothing that looks like an address, a URL, a path on a host or a secret.
pub fn is_plain(message: &str) -> bool {
    const MARKERS: [&str; 12] =
        ["://", "@", "\\", "[", "::", "traceback", "exception", "password", "secret", "token", "stack", " at "];
    if message.is_empty() || message.len() > 200 || message.chars().any(|c| c.is_control() || is_separator(c)) {
        return false;
    }
    let lower = message.to_ascii_lowercase();
    if MARKERS.iter().any(|m| lower.contains(m)) {
        return false;
    }
    // `host:port`, and dotted names or addresses (`10.0.0.5`, `db.prod.internal`).
    let bytes = lower.as_bytes();
    let host_port = bytes.windows(3).any(|w| w[0].is_ascii_alphanumeric() && w[1] == b':' && w[2].is_ascii_digit());
    let dotted = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .any(|token| token.trim_matches('.').matches('.').count() >= 2);
    !host_port && !dotted
}

fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}')
}

/// A substring search (SIMD where the CPU has it): this one runs over every success answer.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// The error the caller gets for `verdict` (`None` for [`Verdict::Pass`]).
pub fn into_error(verdict: Verdict, agent: &str, request_id: &str) -> Option<A2aError> {
    match verdict {
        Verdict::Pass => None,
        Verdict::Refused { code, message } => Some(A2aError::AgentRefused { code, message }),
        Verdict::Failed => Some(A2aError::AgentFailed { agent: agent.to_owned(), request_id: request_id.to_owned() }),
    }
}

/// What is wrong with a success answer that is no well-formed A2A answer for its binding.
#[derive(Debug, PartialEq, Eq)]
pub enum Malformed {
    /// Not JSON at all (an HTML page, a truncated body).
    NotJson,
    /// A content type other than JSON.
    ContentType,
    /// A JSON-RPC answer that is no response object, or answers another request id.
    NotTheResponse,
}

impl Malformed {
    pub fn describe(&self) -> &'static str {
        match self {
            Malformed::NotJson => "an answer that is not JSON",
            Malformed::ContentType => "an answer whose content type is not JSON",
            Malformed::NotTheResponse => "a JSON-RPC answer that is not the response to this request",
        }
    }
}

/// The envelope of a JSON-RPC answer, read in one pass that also checks the whole body is JSON; its
/// `result` either skipped ([`IgnoredAny`]) or read for task facts ([`Payload`]).
#[derive(Deserialize)]
struct Response<R> {
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Value,
    result: Option<R>,
    error: Option<IgnoredAny>,
}

impl<R> Response<R> {
    /// The response to `rpc_id`: `jsonrpc: "2.0"`, its id (or a null id on an error), and exactly
    /// one of a result and an error.
    fn answers(&self, rpc_id: Option<&Value>) -> bool {
        let id_matches = rpc_id.is_none_or(|id| *id == self.id) || self.id.is_null() && self.error.is_some();
        self.jsonrpc.as_deref() == Some("2.0") && id_matches && self.result.is_some() != self.error.is_some()
    }
}

fn is_json_type(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|t| super::media::is_json_answer_type(super::media::essence(t)))
}

/// Checks a success answer in 1.0 form before it is relayed: JSON by content type and by content,
/// and for JSON-RPC the response to `rpc_id` (`jsonrpc: "2.0"`, its id, a result or an error). One
/// pass over the body, no copy.
pub fn check_answer(
    binding: Binding,
    content_type: Option<&str>,
    body: &[u8],
    rpc_id: Option<&Value>,
) -> Result<(), Malformed> {
    if body.iter().all(u8::is_ascii_whitespace) {
        // An empty success (e.g. 204 to a delete) carries nothing to misread.
        return Ok(());
    }
    match binding {
        Binding::Rest => {
            read::<IgnoredAny>(body).map_err(|_| Malformed::NotJson)?;
        }
        Binding::JsonRpc => {
            let answer: Response<IgnoredAny> = match read(body) {
                Ok(answer) => answer,
                Err(_) if read::<IgnoredAny>(body).is_err() => {
                    return Err(Malformed::NotJson);
                }
                Err(_) => return Err(Malformed::NotTheResponse),
            };
            if !answer.answers(rpc_id) {
                return Err(Malformed::NotTheResponse);
            }
        }
    }
    if !is_json_type(content_type) {
        return Err(Malformed::ContentType);
    }
    Ok(())
}

/// [`check_answer`] and [`fact_in`] in one pass over the body: the common answer (an object, its
/// result a task, message or event) is parsed once for the check and the task facts together. Any
/// other shape takes the two separate readings, so the verdict and the fact are theirs exactly.
pub fn read_answer(
    binding: Binding,
    content_type: Option<&str>,
    body: &[u8],
    rpc_id: Option<&Value>,
    want_artifacts: bool,
) -> Result<Option<TaskFact>, Malformed> {
    let read = match binding {
        _ if body.iter().all(u8::is_ascii_whitespace) => None,
        Binding::JsonRpc => match read::<Response<Payload>>(body) {
            Ok(answer) if !answer.answers(rpc_id) => return Err(Malformed::NotTheResponse),
            Ok(answer) => Some(answer.result),
            Err(_) => None,
        },
        Binding::Rest => read::<Payload>(body).ok().map(Some),
    };
    match read {
        Some(payload) => {
            if !is_json_type(content_type) {
                return Err(Malformed::ContentType);
            }
            Ok(payload.and_then(|p| fact_of(p, want_artifacts)))
        }
        None => {
            check_answer(binding, content_type, body, rpc_id)?;
            Ok(fact_in(binding, body, want_artifacts))
        }
    }
}

/// At most `max` bytes of `body`, for the log (escaped there with `{:?}`).
pub fn excerpt(body: &[u8], max: usize) -> String {
    let cut = body.len().min(max);
    let mut text = String::from_utf8_lossy(&body[..cut]).into_owned();
    if body.len() > max {
        text.push_str("...");
    }
    text
}

/// One pass over an agent's answer (counted for the test of the README's cost table).
fn read<'a, T: Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    a2a_model::passes::read();
    a2a_model::from_json(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: StatusCode = StatusCode::OK;
    const ERROR_500: StatusCode = StatusCode::INTERNAL_SERVER_ERROR;

    /// The one-pass reading gives exactly the verdict and the fact of the two separate ones, on the
    /// SDK's real answers and on every odd shape the fallback exists for.
    #[test]
    fn reading_an_answer_once_agrees_with_checking_it_and_reading_its_fact_apart() {
        let captures = std::fs::read_dir(a2a_e2e::repo_root().join("tests/fixtures/wire-samples")).unwrap();
        let mut bodies: Vec<(Binding, Vec<u8>)> = Vec::new();
        for entry in captures {
            let name = entry.unwrap().file_name().into_string().unwrap();
            // The 1.0 SDK's answers (the 0.3 captures are answers in another dialect).
            let binding = match () {
                _ if name.starts_with("jsonrpc-1.0-") => Binding::JsonRpc,
                _ if name.starts_with("rest-1.0-") => Binding::Rest,
                _ => continue,
            };
            if !name.contains("sse") {
                bodies.push((binding, a2a_e2e::capture_body(&name)));
            }
        }
        assert!(bodies.len() >= 30, "the captures are there");
        let odd: [&[u8]; 16] = [
            b"",
            b"  ",
            b"<html>oops</html>",
            b"[]",
            b"\"text\"",
            br#"{"jsonrpc":"2.0","id":1,"result":"plain"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}}"#,
            br#"{"jsonrpc":"2.0","id":2,"result":{"task":{"id":"t"}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"id":1,"result":{"task":{"id":"t"}}}"#,
            br#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}"#,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":7}}}"#,
            br#"{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"x"}]}]}"#,
            br#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"}}} trailing"#,
        ];
        for body in odd {
            bodies.push((Binding::JsonRpc, body.to_vec()));
            bodies.push((Binding::Rest, body.to_vec()));
        }
        let id = serde_json::json!(1);
        for (binding, body) in &bodies {
            for content_type in [Some("application/json"), Some("text/html"), None] {
                for rpc_id in [Some(&id), None] {
                    for want in [true, false] {
                        let apart =
                            check_answer(*binding, content_type, body, rpc_id).map(|()| fact_in(*binding, body, want));
                        let once = read_answer(*binding, content_type, body, rpc_id, want);
                        assert_eq!(
                            once,
                            apart,
                            "{binding:?} {content_type:?} {rpc_id:?} {}",
                            String::from_utf8_lossy(body)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn successes_pass_and_pages_do_not() {
        let task =
            br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}"#;
        assert_eq!(screen(Binding::JsonRpc, OK, task), Verdict::Pass);
        assert_eq!(screen(Binding::Rest, OK, br#"{"id":"t"}"#), Verdict::Pass);
        assert_eq!(screen(Binding::Rest, StatusCode::NO_CONTENT, b""), Verdict::Pass);
        assert_eq!(screen(Binding::Rest, OK, b"<html>db01.internal:5432</html>"), Verdict::Failed);
        // A text that mentions "error" is not an error.
        let text = br#"{"jsonrpc":"2.0","id":1,"result":{"message":{"parts":[{"text":"\"error\""}]}}}"#;
        assert_eq!(screen(Binding::JsonRpc, OK, text), Verdict::Pass);
    }

    #[test]
    fn protocol_errors_keep_their_code_and_a_plain_message() {
        let not_found = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found","data":[{"metadata":{"host":"10.0.0.5"}}]}}"#;
        let verdict = screen(Binding::JsonRpc, OK, not_found);
        assert_eq!(verdict, Verdict::Refused { code: -32001, message: "Task not found".into() });
        let leaky = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"cannot cancel: db01.corp.internal:5432 said no"}}"#;
        let verdict = screen(Binding::JsonRpc, OK, leaky);
        assert_eq!(verdict, Verdict::Refused { code: -32002, message: "Task cannot be canceled".into() });
        let rest = br#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}"#;
        assert_eq!(
            screen(Binding::Rest, StatusCode::NOT_FOUND, rest),
            Verdict::Refused { code: -32001, message: "Task not found".into() }
        );
    }

    /// A google.rpc.Status without details (some agents write no ErrorInfo) is read by its status,
    /// as the bridge reads it for a JSON-RPC caller: relayed, it was taken for the agent failing.
    #[test]
    fn an_http_json_error_without_a_reason_reads_by_its_status() {
        let bare = |code: u16, message: &str| {
            format!(r#"{{"error":{{"code":{code},"status":"X","message":"{message}"}}}}"#).into_bytes()
        };
        let not_found = bare(404, "no task t-1");
        assert_eq!(
            screen(Binding::Rest, StatusCode::NOT_FOUND, &not_found),
            Verdict::Refused { code: -32001, message: "no task t-1".into() }
        );
        let own_reason =
            br#"{"error":{"code":404,"status":"NOT_FOUND","message":"gone","details":[{"reason":"MINE"}]}}"#;
        assert_eq!(
            screen(Binding::Rest, StatusCode::NOT_FOUND, own_reason),
            Verdict::Refused { code: -32001, message: "gone".into() }
        );
        for status in [StatusCode::BAD_REQUEST, StatusCode::UNPROCESSABLE_ENTITY] {
            assert_eq!(
                screen(Binding::Rest, status, &bare(status.as_u16(), "see http://10.0.0.5/x")),
                Verdict::Refused { code: -32602, message: "Invalid parameters".into() }
            );
        }
        assert_eq!(
            screen(Binding::Rest, StatusCode::NOT_IMPLEMENTED, &bare(501, "no push here")),
            Verdict::Refused { code: -32004, message: "no push here".into() }
        );
        for status in [StatusCode::UNAUTHORIZED, StatusCode::CONFLICT, StatusCode::BAD_GATEWAY] {
            assert_eq!(screen(Binding::Rest, status, &bare(status.as_u16(), "x")), Verdict::Failed, "{status}");
        }
    }

    #[test]
    fn failures_and_garbage_say_nothing() {
        let internal = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Traceback: password=hunter2"}}"#;
        assert_eq!(screen(Binding::JsonRpc, OK, internal), Verdict::Failed);
        let custom = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"quota"}}"#;
        assert_eq!(screen(Binding::JsonRpc, OK, custom), Verdict::Failed);
        for body in [&b"Traceback (most recent call last): ..."[..], b"<html>502</html>", b"", b"{\"detail\":\"x\"}"] {
            assert_eq!(screen(Binding::JsonRpc, ERROR_500, body), Verdict::Failed);
            assert_eq!(screen(Binding::Rest, ERROR_500, body), Verdict::Failed);
        }
        let rest_internal = br#"{"error":{"code":500,"status":"INTERNAL","message":"at db01","details":[{"reason":"INTERNAL_ERROR"}]}}"#;
        assert_eq!(screen(Binding::Rest, ERROR_500, rest_internal), Verdict::Failed);
        let bare_internal = br#"{"error":{"code":500,"status":"INTERNAL","message":"at db01"}}"#;
        assert_eq!(screen(Binding::Rest, ERROR_500, bare_internal), Verdict::Failed);
        let own_reason = br#"{"error":{"code":500,"status":"INTERNAL","message":"x","details":[{"reason":"MINE"}]}}"#;
        assert_eq!(screen(Binding::Rest, ERROR_500, own_reason), Verdict::Failed);
        assert_eq!(screen(Binding::JsonRpc, OK, br#"{"jsonrpc":"2.0","error":"#), Verdict::Failed);
        assert_eq!(screen(Binding::Rest, OK, br#"{"error":{"code":-32603,"message":"at db01"}}"#), Verdict::Failed);
        assert_eq!(screen(Binding::Rest, OK, br#"{"id":"t","metadata":{"error":1}}"#), Verdict::Pass);
    }

    #[test]
    fn answers_are_checked_for_form() {
        let json = Some("application/json");
        let good = br#"{"jsonrpc":"2.0","id":"r","result":{"task":{}}}"#;
        assert_eq!(check_answer(Binding::JsonRpc, json, good, Some(&serde_json::json!("r"))), Ok(()));
        assert_eq!(
            check_answer(Binding::JsonRpc, json, good, Some(&serde_json::json!("other"))),
            Err(Malformed::NotTheResponse)
        );
        let html = b"<html>502</html>";
        assert_eq!(check_answer(Binding::JsonRpc, Some("text/html"), html, None), Err(Malformed::NotJson));
        let cut = br#"{"jsonrpc":"2.0","id":"r","result":{"#;
        assert_eq!(check_answer(Binding::JsonRpc, json, cut, None), Err(Malformed::NotJson));
        assert_eq!(check_answer(Binding::Rest, Some("text/plain"), b"{}", None), Err(Malformed::ContentType));
        assert_eq!(check_answer(Binding::Rest, Some("application/a2a+json; charset=utf-8"), b"{}", None), Ok(()));
        let both = br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#;
        assert_eq!(check_answer(Binding::JsonRpc, json, both, None), Err(Malformed::NotTheResponse));
        assert_eq!(check_answer(Binding::Rest, None, b"", None), Ok(()));
    }

    #[test]
    fn plain_messages() {
        for fine in ["Task not found", "task 0193-abc cannot be canceled", "missing field 'diff'", "version 1.0 only"] {
            assert!(is_plain(fine), "{fine}");
        }
        for leaky in [
            "connect to localhost:8000 failed",
            "10.0.0.5 refused",
            "see http://x/y",
            "db.prod.internal down",
            "[::1]:9000",
            "line\nbreak",
            "sep\u{2028}arated",
            "password=hunter2",
            &"x".repeat(201),
        ] {
            assert!(!is_plain(leaky), "{leaky}");
        }
    }
}
