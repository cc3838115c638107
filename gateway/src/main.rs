//! The `a2a-gateway` command: serve, check a config, run the demo.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use a2a_gateway::admin::cli;
use a2a_gateway::config::Config;
#[cfg(feature = "demo")]
use a2a_gateway::demo;
use a2a_gateway::{install_crypto_provider, server};
use clap::{Parser, Subcommand};

/// jemalloc, with its background threads purging freed pages, instead of glibc's malloc: after
/// 2000 streams closed glibc kept 66-101 MiB of freed buffers resident and a linked mimalloc kept
/// ~120 MiB (idle worker threads never collect); jemalloc's background threads give it back within
/// its 10 s decay (`tests/bench/stream-memory.md`). The feature `system-allocator` leaves it out, so
/// that valgrind's dhat can see every allocation (`tests/bench/stream-heap.sh`). Its options are set
/// when it is built (`.cargo/config.toml`: `JEMALLOC_SYS_WITH_MALLOC_CONF`).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "a2a-gateway", version, about = "One A2A endpoint in front of a fleet of agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the configuration file's JSON Schema (docs/config.schema.json).
    Schema,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check the hash chain of audit files (rotated files first, oldest first; or just the active
    /// file, whose rotated predecessors are found beside it). Exits 1 at the first broken link.
    Verify {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The environment variable holding the chain key (the value of `audit.chain_key`).
        #[arg(long)]
        key_env: Option<String>,
        /// The last file is a running gateway's active file: it may lack its closing seal.
        #[arg(long)]
        open: bool,
    },
}

/// How the CLI reaches the admin API.
#[derive(clap::Args, Clone)]
struct AdminArgs {
    /// The admin listener's base URL.
    #[arg(long, global = true, env = "A2A_ADMIN_URL", default_value = "http://127.0.0.1:9090")]
    admin: String,
    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum BackendsCommand {
    /// List the backends with health, draining, dialect and skills.
    List,
    /// Register a backend at runtime.
    Add { name: String, url: String },
    /// Deregister a backend.
    Remove { name: String },
    /// Drain a backend (no new tasks; existing ones finish); `--undo` ends the drain.
    Drain {
        name: String,
        #[arg(long)]
        undo: bool,
    },
}

#[derive(Subcommand)]
enum TasksCommand {
    /// Tasks by caller: ids and states (live ones; `--all` includes finished ones).
    List {
        #[arg(long)]
        all: bool,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Manage the fleet through the admin API (token from A2A_ADMIN_TOKEN).
    Backends {
        #[command(flatten)]
        target: AdminArgs,
        #[command(subcommand)]
        command: BackendsCommand,
    },
    /// Tasks through the admin API (token from A2A_ADMIN_TOKEN).
    Tasks {
        #[command(flatten)]
        target: AdminArgs,
        #[command(subcommand)]
        command: TasksCommand,
    },
    /// Run the gateway with a configuration file.
    Serve {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a configuration file against the schema and the strict parser; names the
    /// offending key and exits 1 on error.
    Check { file: PathBuf },
    /// Configuration tools.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Make an API key (or hash a given one) and print the config entry with its salted hash.
    HashKey {
        /// The key's id (`a2a_<id>_<secret>`); also its name in the config.
        #[arg(long, default_value = "main")]
        id: String,
        /// Read the key to hash from standard input instead of generating one.
        #[arg(long)]
        stdin: bool,
    },
    /// Audit log tools.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Run the gateway with the example agents behind it (a build with `--features demo` only).
    #[cfg_attr(not(feature = "demo"), allow(dead_code))]
    Demo {
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// The admin listener (/healthz, /readyz, /metrics and the status page at /admin/); by
        /// default an ephemeral loopback port, printed with the other URLs.
        #[arg(long)]
        admin: Option<SocketAddr>,
    },
    /// Run one example agent (echo, review, clarify, slow, or early: the early REST dialect); used
    /// by the tests. A build with `--features demo` only.
    #[command(hide = true)]
    ExampleAgent(ExampleAgentArgs),
}

#[derive(clap::Args)]
#[cfg_attr(not(feature = "demo"), allow(dead_code))]
struct ExampleAgentArgs {
    kind: String,
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Card name override.
    #[arg(long)]
    name: Option<String>,
    /// How long the slow agent works, in seconds.
    #[arg(long)]
    slow_secs: Option<f64>,
    /// Delay between the review agent's steps, in milliseconds.
    #[arg(long)]
    step_ms: Option<u64>,
    /// Finished tasks kept at most (the oldest are forgotten first).
    #[arg(long, default_value_t = 10_000)]
    max_tasks: usize,
    /// Seconds a finished task is kept.
    #[arg(long, default_value_t = 3600)]
    task_ttl_secs: u64,
}

/// The runtime. On a single CPU (a container limited to one, or a process pinned to one) the
/// current-thread scheduler, which does the same work without the work-stealing queues, atomics
/// and cross-thread wake-ups a lone worker gains nothing from. On more, the same per core: one
/// worker thread per CPU the process may use, each serving the connections handed to it
/// ([`a2a_gateway::workers`]), beside the main thread's runtime. `A2A_RUNTIME` (`current_thread`,
/// `per_core`, `multi_thread`: tokio's work-stealing runtime) overrides the choice.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let mode = std::env::var("A2A_RUNTIME").ok();
    match mode.as_deref() {
        Some("multi_thread") => return tokio::runtime::Runtime::new(),
        Some("per_core") => {
            a2a_gateway::workers::start(cpus)?;
        }
        Some("current_thread") => {}
        _ if cpus > 1 => {
            a2a_gateway::workers::start(cpus)?;
        }
        _ => {}
    }
    tokio::runtime::Builder::new_current_thread().enable_all().build()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Check { file } = &cli.command {
        // Compiled too: a rule, quota or schema that does not compile is an error of the file.
        return match Config::load(file).and_then(|config| config.compile().map(|_| config)) {
            Ok(config) => {
                if let Some(document) = &config.document
                    && let Err(errors) = a2a_gateway::config_schema::validate(document)
                {
                    for error in errors {
                        eprintln!("{}: schema: {error}", file.display());
                    }
                    return ExitCode::FAILURE;
                }
                for warning in config.warnings() {
                    eprintln!("{}: warning: {warning}", file.display());
                }
                println!("{}: ok ({} backends)", file.display(), config.backends.len());
                if config.audit.as_ref().is_some_and(|a| a.file.is_some() && a.chain_key.is_none()) {
                    eprintln!(
                        "warning: audit.chain_key is not set: the audit chain is unkeyed, so whoever can write the file can rewrite it and recompute the hashes"
                    );
                }
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("{}: {error}", file.display());
                ExitCode::FAILURE
            }
        };
    }
    if let Command::Config { command: ConfigCommand::Schema } = &cli.command {
        print!("{}", a2a_gateway::config_schema::schema_text());
        return ExitCode::SUCCESS;
    }
    if let Command::HashKey { id, stdin } = &cli.command {
        return hash_key_command(id, *stdin);
    }
    if let Command::Audit { command: AuditCommand::Verify { files, key_env, open } } = &cli.command {
        return audit_verify(files, key_env.as_deref(), *open);
    }
    if let Some((target, verb)) = admin_verb(&cli.command) {
        return admin_command(target, verb);
    }
    #[cfg(not(feature = "demo"))]
    if matches!(cli.command, Command::Demo { .. } | Command::ExampleAgent(_)) {
        eprintln!(
            "a2a-gateway: this build has no demo agents (the example agents are left out of production builds); \
             build with `--features demo` to get them, e.g. `cargo run --release -p a2a-gateway --features demo -- demo`"
        );
        return ExitCode::FAILURE;
    }
    init_tracing();
    install_crypto_provider();
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli.command));
    // Blocking: the exporter sends its last spans on its own thread.
    a2a_gateway::telemetry::shutdown_installed();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("a2a-gateway: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `example-agent`: one example agent on `args.listen`, its address printed once it listens.
#[cfg(feature = "demo")]
async fn example_agent(args: ExampleAgentArgs, stop: tokio_util::sync::CancellationToken) -> anyhow::Result<()> {
    use std::time::Duration;

    let ExampleAgentArgs { kind, listen, name, slow_secs, step_ms, max_tasks, task_ttl_secs } = args;
    let kind = match kind.as_str() {
        "early" => None,
        other => Some(
            other
                .parse::<a2a_example_agents::AgentKind>()
                .map_err(|_| anyhow::anyhow!("unknown example agent '{other}'"))?,
        ),
    };
    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!("listening http://{}", listener.local_addr()?);
    let Some(kind) = kind else {
        a2a_example_agents::serve_early(listener, stop.cancelled_owned()).await?;
        return Ok(());
    };
    let store = a2a_example_agents::StoreLimits { max_tasks, ttl: Duration::from_secs(task_ttl_secs) };
    let mut options = a2a_example_agents::AgentOptions { name, store, ..Default::default() };
    if let Some(secs) = slow_secs {
        options.slow_duration = Duration::from_secs_f64(secs);
    }
    if let Some(ms) = step_ms {
        options.step_delay = Duration::from_millis(ms);
    }
    a2a_example_agents::serve(kind, listener, options, stop.cancelled_owned()).await?;
    Ok(())
}

async fn run(command: Command) -> anyhow::Result<()> {
    let signals = server::Stop::default();
    tokio::spawn(cancel_on_signal(signals.clone()));
    match command {
        Command::Serve { config: path } => {
            let config = Config::load(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            if let Some(telemetry) = a2a_gateway::telemetry::Telemetry::start(&config.telemetry)? {
                telemetry.install();
            }
            let listener =
                a2a_gateway::listener::bind(config.listeners.public, config.listeners.protection.accept_backlog)
                    .map_err(|e| anyhow::anyhow!("public listener {}: {e}", config.listeners.public))?;
            server::run(config, listener, Some(path), signals).await
        }
        #[cfg(feature = "demo")]
        Command::Demo { listen, admin } => demo::run(listen, admin, signals.begin.clone()).await,
        #[cfg(feature = "demo")]
        Command::ExampleAgent(args) => example_agent(args, signals.begin.clone()).await,
        #[cfg(not(feature = "demo"))]
        Command::Demo { .. } | Command::ExampleAgent(_) => unreachable!("refused before the runtime starts"),
        Command::Check { .. }
        | Command::Config { .. }
        | Command::HashKey { .. }
        | Command::Audit { .. }
        | Command::Backends { .. }
        | Command::Tasks { .. } => {
            unreachable!("handled before the runtime starts")
        }
    }
}

fn admin_verb(command: &Command) -> Option<(&AdminArgs, cli::Verb)> {
    use cli::Verb;
    Some(match command {
        Command::Backends { target, command } => (
            target,
            match command {
                BackendsCommand::List => Verb::BackendsList,
                BackendsCommand::Add { name, url } => Verb::BackendsAdd { name: name.clone(), url: url.clone() },
                BackendsCommand::Remove { name } => Verb::BackendsRemove { name: name.clone() },
                BackendsCommand::Drain { name, undo } => Verb::BackendsDrain { name: name.clone(), undo: *undo },
            },
        ),
        Command::Tasks { target, command: TasksCommand::List { all } } => (target, Verb::TasksList { all: *all }),
        _ => return None,
    })
}

fn admin_command(args: &AdminArgs, verb: cli::Verb) -> ExitCode {
    let token = std::env::var("A2A_ADMIN_TOKEN").ok().filter(|t| !t.trim().is_empty());
    let target = cli::Target { admin: args.admin.clone(), token, json: args.json };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli::run(&target, &verb)) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("a2a-gateway: {error}");
            ExitCode::FAILURE
        }
    }
}

fn audit_verify(files: &[PathBuf], key_env: Option<&str>, open: bool) -> ExitCode {
    use a2a_policies::audit::{ChainKey, VerifyOptions, chain_files, verify_files_with};
    let files = match files {
        [active] => chain_files(active).unwrap_or_else(|_| vec![active.clone()]),
        many => many.to_vec(),
    };
    let key = match key_env.map(|name| (name, std::env::var(name))) {
        None => None,
        Some((_, Ok(key))) => Some(key),
        Some((name, Err(_))) => {
            eprintln!("audit verify: the environment variable {name} is not set");
            return ExitCode::FAILURE;
        }
    };
    let options = VerifyOptions { key: ChainKey::new(key.as_deref().map(str::as_bytes)), open };
    let report = verify_files_with(&files, &options);
    println!("{report}");
    if report.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn hash_key_command(id: &str, stdin: bool) -> ExitCode {
    use a2a_policies::auth::{generate_key, hash_key, is_valid_key_id, key_id};
    let key = if stdin {
        let mut line = String::new();
        if std::io::stdin().read_line(&mut line).is_err() || line.trim().is_empty() {
            eprintln!("hash-key: no key on standard input");
            return ExitCode::FAILURE;
        }
        line.trim().to_string()
    } else {
        if !is_valid_key_id(id) {
            eprintln!("hash-key: '{id}' is not a valid key id (letters, digits, '-')");
            return ExitCode::FAILURE;
        }
        let key = generate_key(id);
        println!("key (give it to the caller; it is not stored anywhere): {key}");
        key
    };
    let free_form = key_id(&key).is_none();
    let id = key_id(&key).unwrap_or(id);
    println!("config entry (auth.api_keys.keys):");
    println!("  - id: {id}");
    println!("    hash: \"{}\"", hash_key(&key));
    println!("    caller: {id}");
    if free_form {
        println!("    free_form: true");
    }
    ExitCode::SUCCESS
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

/// Cancels `stop.begin` on the first SIGINT or SIGTERM, and `stop.hurry` on the next one.
async fn cancel_on_signal(stop: server::Stop) {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                stop.begin.cancel();
                return;
            }
        };
        for token in [&stop.begin, &stop.hurry] {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            token.cancel();
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        stop.begin.cancel();
    }
}
