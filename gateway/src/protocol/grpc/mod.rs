//! The gRPC binding of A2A 1.0 (`lf.a2a.v1.A2AService`), on both sides of the gateway.
//!
//! Messages are read and written through the descriptor of the embedded `a2a.proto` (see `build.rs`)
//! and converted to and from ProtoJSON, the 1.0 model's own form: a gRPC request becomes the same
//! JSON params a JSON-RPC caller sends, and is parsed by the same `Request::parse` into the same
//! checked model, so every policy judges it as it judges JSON. Protobuf has no duplicate keys; fields
//! the proto does not know are dropped by the conversion, so they never reach an agent.
//!
//! - [`wire`]: length-prefixed message framing and gRPC status (code, message, details).
//! - [`front`]: callers speaking gRPC to the gateway.
//! - [`back`]: agents that speak gRPC.
//! - [`deadline`]: the caller's `grpc-timeout`.

pub mod back;
pub mod deadline;
pub mod front;
pub mod wire;

use std::sync::LazyLock;

use a2a_core::Operation;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor, SerializeOptions};

/// The service every A2A 1.0 gRPC server implements.
pub const SERVICE: &str = "lf.a2a.v1.A2AService";
/// Content type of gRPC requests and answers (`application/grpc+proto` is the same).
pub const CONTENT_TYPE: &str = "application/grpc";

static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
    // Built from the vendored protos by build.rs: a failure here is a build defect, caught by tests.
    DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"))[..])
        .expect("the embedded a2a.proto descriptor set decodes")
});

/// Request extension: the call came in over gRPC (inside it is its JSON-RPC form; metrics label it
/// by the binding the caller used).
#[derive(Clone, Copy, Debug)]
pub struct GrpcCall;

/// One method of the service: its operation, its message types, whether it streams answers.
#[derive(Clone, Debug)]
pub struct Method {
    pub operation: Operation,
    pub input: MessageDescriptor,
    pub output: MessageDescriptor,
}

impl Method {
    /// The method of `operation` (every 1.0 operation is one: the names are the same).
    pub fn of(operation: Operation) -> Method {
        Method::named(operation.method_name()).expect("every A2A 1.0 operation is a method of the service")
    }

    /// The method called `name` in the service, if the gateway serves it.
    pub fn named(name: &str) -> Option<Method> {
        let operation = Operation::from_method_name(name)?;
        let service = POOL.get_service_by_name(SERVICE)?;
        let method = service.methods().find(|m| m.name() == name)?;
        Some(Method { operation, input: method.input(), output: method.output() })
    }

    /// The request path of this method (`/lf.a2a.v1.A2AService/SendMessage`).
    pub fn path(&self) -> String {
        format!("/{SERVICE}/{}", self.operation.method_name())
    }
}

/// A message descriptor of the embedded protos by its full name (`google.rpc.Status`, …).
pub fn message(name: &str) -> Option<MessageDescriptor> {
    POOL.get_message_by_name(name)
}

/// Why a message did not convert.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("not a valid {0} message: {1}")]
    Protobuf(String, prost::DecodeError),
    #[error("cannot be written as {0}: {1}")]
    Json(String, serde_json::Error),
}

/// A protobuf message as ProtoJSON (camelCase names, enum names, defaults left out).
pub fn to_json(descriptor: &MessageDescriptor, bytes: &[u8]) -> Result<Vec<u8>, ConvertError> {
    let message = DynamicMessage::decode(descriptor.clone(), bytes)
        .map_err(|e| ConvertError::Protobuf(descriptor.full_name().to_owned(), e))?;
    let mut out = Vec::with_capacity(bytes.len() * 2);
    let mut serializer = serde_json::Serializer::new(&mut out);
    message
        .serialize_with_options(&mut serializer, &SerializeOptions::new())
        .map_err(|e| ConvertError::Json(descriptor.full_name().to_owned(), e))?;
    Ok(out)
}

/// ProtoJSON as a protobuf message. Fields the proto does not have are dropped: answers carry
/// extension fields (a skill's `inputSchema`) that a gRPC peer has no place for.
pub fn from_json(descriptor: &MessageDescriptor, json: &[u8]) -> Result<Vec<u8>, ConvertError> {
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let message = DynamicMessage::deserialize_with_options(descriptor.clone(), &mut deserializer, &options)
        .and_then(|m| deserializer.end().map(|()| m))
        .map_err(|e| ConvertError::Json(descriptor.full_name().to_owned(), e))?;
    Ok(message.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_a_method_of_the_embedded_service() {
        for operation in Operation::ALL {
            let method = Method::of(operation);
            assert_eq!(method.path(), format!("/lf.a2a.v1.A2AService/{}", operation.method_name()));
        }
        assert_eq!(Method::of(Operation::SendMessage).input.full_name(), "lf.a2a.v1.SendMessageRequest");
        assert!(Method::named("Nope").is_none());
        assert!(message("google.rpc.Status").is_some() && message("google.rpc.ErrorInfo").is_some());
    }

    #[test]
    fn protojson_round_trips_through_protobuf() {
        let send = Method::of(Operation::SendMessage);
        let json = br#"{"tenant":"echo","message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"},{"data":{"n":1,"x":[true,null]}},{"raw":"AAE=","mediaType":"application/octet-stream"}],"metadata":{"skillId":"echo"}},"configuration":{"historyLength":0,"returnImmediately":true}}"#;
        let bytes = from_json(&send.input, json).unwrap();
        let back: serde_json::Value = serde_json::from_slice(&to_json(&send.input, &bytes).unwrap()).unwrap();
        let want: serde_json::Value = serde_json::from_slice(json).unwrap();
        // Numbers in Struct values are doubles in protobuf.
        assert_eq!(back["message"]["parts"][1]["data"]["n"], 1.0);
        assert_eq!(back["message"]["parts"][0], want["message"]["parts"][0]);
        assert_eq!(back["message"]["parts"][2], want["message"]["parts"][2]);
        assert_eq!(back["configuration"], want["configuration"]);
        assert_eq!(back["tenant"], "echo");
    }

    #[test]
    fn unknown_json_fields_are_dropped_and_garbage_is_refused() {
        let task = message("lf.a2a.v1.Task").unwrap();
        let bytes = from_json(&task, br#"{"id":"t","status":{"state":"TASK_STATE_WORKING"},"kind":"task"}"#).unwrap();
        let back: serde_json::Value = serde_json::from_slice(&to_json(&task, &bytes).unwrap()).unwrap();
        assert_eq!(back, serde_json::json!({"id":"t","status":{"state":"TASK_STATE_WORKING"}}));
        assert!(from_json(&task, br#"{"id":5}"#).is_err());
        assert!(to_json(&task, &[0xff, 0xff, 0xff]).is_err());
    }
}
