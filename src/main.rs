//! The `ripe-cidr-collector` binary: parse the arguments, run the command, map the
//! outcome to an exit code (in `cli::error`). Everything else lives in the library.

use std::process::ExitCode;

use ripe_cidr_collector::cli;

fn main() -> ExitCode {
    let parsed = cli::parse(std::env::args_os().skip(1), |k| std::env::var_os(k));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ripe-cidr-collector: {e}\n{}", cli::USAGE_HINT);
            return ExitCode::from(cli::USAGE_EXIT);
        }
    };
    cli::init_logging(&cli);
    ExitCode::from(cli::finish(cli::execute(&cli)))
}
