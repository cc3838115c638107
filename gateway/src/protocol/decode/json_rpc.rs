//! A JSON-RPC request (1.0, or 0.3 by its method name and version header): the envelope, the strict
//! JSON of its body, the version check and the params read into the 1.0 model.

use super::*;

/// A body that is not strict JSON: not JSON at all, or a key repeated in one object.
pub(super) fn json_refusal(error: serde_json::Error) -> A2aError {
    if error.is_syntax() || error.is_eof() {
        A2aError::Parse(format!("invalid JSON: {error}"))
    } else {
        A2aError::invalid_params(format!("ambiguous request: {error}"))
    }
}

/// Refuses a request whose `A2A-Version` is not 1.x. A missing header means 0.3 (as the reference
/// SDK reads it), and this gateway speaks 1.0.
pub(super) fn check_version(headers: &HeaderMap) -> Result<(), A2aError> {
    let version = headers.get(crate::protocol::VERSION_HEADER).and_then(|v| v.to_str().ok()).map(str::trim);
    let version = version.filter(|v| !v.is_empty()).unwrap_or("0.3");
    let major = version.split('.').next().unwrap_or("");
    if major == "1" {
        return Ok(());
    }
    Err(A2aError::VersionNotSupported(format!(
        "A2A version '{version}' is not supported; send the header 'A2A-Version: 1.0'"
    )))
}

/// The request object as the fallback reads it: `params` kept raw.
#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// The request object read in one pass: `params` straight into the model when `method` came first
/// and names a 1.0 operation (as the SDKs write it), else kept raw for a second read. Any failure
/// here sends the body to [`Envelope`]'s two-pass reading, which then finds and names it, so both
/// readings refuse the same bodies with the same errors.
pub(super) struct OnePass<'a> {
    jsonrpc: Option<Value>,
    id: Option<Value>,
    method: Option<Value>,
    pub(super) params: Params<'a>,
}

// Lives for one call of `decode_json_rpc`; boxing the model would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
pub(super) enum Params<'a> {
    Absent,
    Raw(&'a RawValue),
    Read(Request),
}

impl<'de> Deserialize<'de> for OnePass<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<OnePass<'de>, D::Error> {
        deserializer.deserialize_map(OnePassVisitor)
    }
}

struct OnePassVisitor;

/// A member of the request object.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Member, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Member, E> {
                Ok(match name {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    _ => Member::Other,
                })
            }
        }
        deserializer.deserialize_identifier(Name)
    }
}

impl<'de> serde::de::Visitor<'de> for OnePassVisitor {
    type Value = OnePass<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<OnePass<'de>, A::Error> {
        // Members named twice never get here: the strict reader refuses them.
        let mut out = OnePass { jsonrpc: None, id: None, method: None, params: Params::Absent };
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Jsonrpc => out.jsonrpc = Some(map.next_value()?),
                Member::Id => out.id = Some(map.next_value()?),
                Member::Method => out.method = Some(map.next_value()?),
                Member::Params => {
                    let operation = match &out.method {
                        Some(Value::String(method)) => Operation::from_method_name(method),
                        _ => None,
                    };
                    out.params = match operation {
                        Some(operation) => Params::Read(map.next_value_seed(a2a_model::ParamsOf(operation))?),
                        // `null` reads as no params, as `Envelope` reads it.
                        None => map.next_value::<Option<&RawValue>>()?.map_or(Params::Absent, Params::Raw),
                    };
                }
                Member::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// The request object: in one pass when it reads cleanly, else by [`Envelope`], whose error is the
/// one the caller gets.
pub(super) fn read_envelope(body: &[u8]) -> Result<OnePass<'_>, serde_json::Error> {
    if let Ok(one_pass) = strict::from_slice::<OnePass>(body) {
        return Ok(one_pass);
    }
    let Envelope { jsonrpc, id, method, params } = strict::from_slice(body)?;
    let params = params.map_or(Params::Absent, Params::Raw);
    Ok(OnePass { jsonrpc, id, method, params })
}

pub(super) fn decode_json_rpc(headers: &HeaderMap, body: &[u8]) -> Result<(A2aCall, Request), Refusal> {
    // Until the method says otherwise, a caller without a 1.x version header is taken for 0.3.
    let legacy = legacy_version(headers);
    let guessed = if legacy { Dialect::V03 } else { Dialect::V1 };
    let refuse = |rpc_id: Option<Value>, error| Refusal { dialect: guessed, binding: Binding::JsonRpc, rpc_id, error };
    let first = body.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') && {
        a2a_model::passes::read();
        serde_json::from_slice::<&RawValue>(body).is_ok()
    } {
        return Err(refuse(None, A2aError::InvalidRequest("batch requests are not supported".into())));
    }
    // Read strictly: a member named twice, or a key repeated inside a member other than `params`,
    // is a malformed request object; `params` is kept raw here and read strictly into the model.
    let envelope = read_envelope(body).map_err(|e| {
        let error = if e.is_data() {
            A2aError::InvalidRequest("the request must be a JSON-RPC 2.0 request object with each member once".into())
        } else {
            A2aError::Parse(format!("invalid JSON: {e}"))
        };
        refuse(None, error)
    })?;
    let rpc_id = match envelope.id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(_) => return Err(refuse(None, A2aError::InvalidRequest("'id' must be a string or a number".into()))),
        None => return Err(refuse(None, A2aError::InvalidRequest("'id' is required".into()))),
    };
    if envelope.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(Some(rpc_id), A2aError::InvalidRequest("'jsonrpc' must be \"2.0\"".into())));
    }
    let Some(Value::String(method)) = envelope.method else {
        return Err(refuse(Some(rpc_id), A2aError::InvalidRequest("'method' must be a string".into())));
    };
    let v03_method = legacy && v03::operation_of(&method).is_some();
    let dialect = if v03_method { Dialect::V03 } else { Dialect::V1 };
    let refuse =
        |rpc_id: &Value, error| Refusal { dialect, binding: Binding::JsonRpc, rpc_id: Some(rpc_id.clone()), error };
    let raw_params = match &envelope.params {
        Params::Raw(params) => Some(*params),
        Params::Absent | Params::Read(_) => None,
    };
    let request = if v03_method {
        let params = raw_params.map(|p| p.get().as_bytes());
        match v03::request_to_v1_strict(&method, params) {
            Ok(request) => request,
            // Read again the two-pass way, whose errors say what is wrong.
            Err(_) => {
                if let Some(params) = params {
                    strict::check_unique_keys(params).map_err(|e| refuse(&rpc_id, json_refusal(e)))?;
                }
                v03::request_to_v1(&method, params).map_err(|e| refuse(&rpc_id, e.into_request_error()))?
            }
        }
    } else {
        let Some(operation) = Operation::from_method_name(&method) else {
            let error = A2aError::MethodNotFound("Method not found".into());
            return Err(Refusal { dialect: guessed, binding: Binding::JsonRpc, rpc_id: Some(rpc_id), error });
        };
        // A 1.0 method name: the caller speaks 1.0, with a missing or wrong version maybe.
        check_version(headers).map_err(|e| refuse(&rpc_id, e))?;
        match envelope.params {
            // Read with the envelope: an object, strictly, into the model of this very operation.
            Params::Read(request) => request,
            Params::Raw(params) if !params.get().trim_start().starts_with('{') => {
                return Err(refuse(&rpc_id, A2aError::invalid_params("'params' must be an object")));
            }
            Params::Raw(_) | Params::Absent => Request::parse(operation, raw_params)
                .map_err(|e| refuse(&rpc_id, TranslateError::from(e).into_request_error()))?,
        }
    };
    let mut call = A2aCall::new(Binding::JsonRpc, request.operation());
    call.dialect = dialect;
    call.rpc_id = Some(rpc_id);
    Ok((call, request))
}
