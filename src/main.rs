//! The `ripe-cidr-collector` binary: parse the arguments, run the command, map the
//! outcome to an exit code (in `cli::error`). Everything else lives in the library.

use std::process::ExitCode;

use ripe_cidr_collector::cli;

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let cli = match cli::parse(args.iter().cloned(), |k| std::env::var_os(k)) {
        Ok(c) => c,
        Err(e) => {
            // The usage of the command named, else of the program.
            let hint = cli::usage_hint(cli::command_word(&args));
            eprintln!("ripe-cidr-collector: {e}\n{hint}");
            return ExitCode::from(cli::USAGE_EXIT);
        }
    };
    cli::init_logging(&cli);
    ExitCode::from(cli::finish(&cli, cli::execute(&cli)))
}
