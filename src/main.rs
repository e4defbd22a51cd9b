use clap::Parser;

use memvault::cli::{self, Cli};
use memvault::config::Settings;
use memvault::telemetry;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let settings = Settings::load().map_err(|e| anyhow::anyhow!("invalid configuration: {e}"))?;
    telemetry::init(settings.log_format, &settings.log_level);
    cli::run(cli, settings).await
}
