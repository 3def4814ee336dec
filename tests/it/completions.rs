//! `completions bash|zsh|fish` and `manpage`: valid scripts and troff that name every
//! command and every option `--help` names (both come from the one flag table).

use crate::common::{cannot_run, TestDir};

fn out(t: &TestDir, args: &[&str]) -> String {
    let r = t.run(args);
    assert!(r.status.success(), "{args:?}: {r:?}");
    String::from_utf8(r.stdout).unwrap()
}

/// The commands of the overview and every option of every `COMMAND --help`.
fn commands_and_flags(t: &TestDir) -> (Vec<String>, Vec<String>) {
    let overview = out(t, &["--help"]);
    let commands: Vec<String> = overview
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    let mut flags: Vec<String> = Vec::new();
    let mut texts = vec![overview];
    for c in &commands {
        texts.push(out(t, &[c.as_str(), "--help"]));
    }
    for text in &texts {
        for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if w.len() > 2 && w.starts_with("--") && !flags.iter().any(|f| f == w) {
                flags.push(w.to_string());
            }
        }
    }
    (commands, flags)
}

#[test]
fn scripts_and_man_page_name_every_command_and_option() {
    let t = TestDir::new();
    let (commands, flags) = commands_and_flags(&t);
    assert!(
        commands.len() >= 20 && commands.iter().any(|c| c == "completions"),
        "{commands:?}"
    );
    assert!(flags.iter().any(|f| f == "--format") && flags.iter().any(|f| f == "--mark"));
    let man = out(&t, &["manpage"]);
    assert!(man.starts_with(".TH "), "{man}");
    assert!(man.contains("\n.SH COMMANDS\n") && man.contains("\n.SH OPTIONS\n"));
    for shell in ["bash", "zsh", "fish"] {
        let script = out(&t, &["completions", shell]);
        for c in &commands {
            assert!(script.contains(c.as_str()), "{shell} lacks {c}");
        }
        for f in &flags {
            let found = if shell == "fish" {
                script.contains(&format!(" -l {} ", &f[2..]))
            } else {
                script.contains(f.as_str())
            };
            assert!(found, "{shell} lacks {f}");
        }
    }
    for c in &commands {
        assert!(
            man.contains(&format!(".TP\n\\fB{}\\fR", c.replace('-', "\\-"))),
            "man lacks {c}"
        );
    }
    for f in &flags {
        assert!(man.contains(&f.replace('-', "\\-")), "man lacks {f}");
    }
    let r = t.run(&["completions", "tcsh"]);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
}

/// The shells themselves read the scripts (`-n`: parse, run nothing).
#[test]
fn the_shells_parse_their_scripts() {
    let t = TestDir::new();
    for (shell, required) in [("bash", true), ("zsh", false), ("fish", false)] {
        let path = t.file(&format!("completion.{shell}"));
        std::fs::write(&path, out(&t, &["completions", shell])).unwrap();
        let r = std::process::Command::new(shell)
            .arg("-n")
            .arg(&path)
            .output();
        match r {
            Ok(r) => assert!(r.status.success(), "{shell} -n: {r:?}"),
            Err(e) if required => return cannot_run(&format!("{shell}: {e}")),
            Err(_) => {}
        }
    }
    // bash with the script sourced completes a command's options and a value's choices.
    let script = t.file("completion.bash");
    let probe = format!(
        "source {}; COMP_WORDS=(ripe-cidr-collector export --fo); COMP_CWORD=2; \
         _ripe_cidr_collector; echo \"${{COMPREPLY[*]}}\"; \
         COMP_WORDS=(ripe-cidr-collector export --format ''); COMP_CWORD=3; \
         _ripe_cidr_collector; echo \"${{COMPREPLY[*]}}\"; \
         COMP_WORDS=(ripe-cidr-collector gr); COMP_CWORD=1; \
         _ripe_cidr_collector; echo \"${{COMPREPLY[*]}}\"",
        script.display()
    );
    let r = std::process::Command::new("bash")
        .arg("-c")
        .arg(&probe)
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&r.stdout);
    assert!(
        got.starts_with("--format\ntext json nft ipset routeros ") && got.ends_with("\ngroup\n"),
        "{r:?}"
    );
}
