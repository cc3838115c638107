//! Compiles `proto/a2a.proto` (with the googleapis files it imports) into a descriptor set that the
//! gateway embeds: protox is pure Rust, so neither developers nor CI need `protoc`, and there is no
//! generated code to keep in step with the proto.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let mut compiler = protox::Compiler::new(["proto"])?;
    compiler.include_imports(true);
    compiler.open_files(["a2a.proto", "google/rpc/status.proto", "google/rpc/error_details.proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("a2a_descriptor.bin");
    std::fs::write(out, compiler.encode_file_descriptor_set())?;
    Ok(())
}
