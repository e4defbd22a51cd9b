use clap::Parser;

use memvault::cli::{self, Cli};
use memvault::config::Settings;
use memvault::sandbox::{protocol::WORKER_ARG, worker};
use memvault::telemetry;

fn main() -> anyhow::Result<()> {
    // A document worker (started by the server, see src/sandbox/): single-threaded, no
    // runtime, no settings, no logging set-up; it only decodes and answers.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == WORKER_ARG)
    {
        std::process::exit(worker::main());
    }
    let cli = Cli::parse();
    let settings = Settings::load().map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
    telemetry::init(settings.server.log_format, &settings.server.log_level);
    memvault::startup::runtime()?.block_on(cli::run(cli, settings))
}
