//! The documentation: every relative link (and `#anchor`) in the README and `docs/`
//! resolves, the README stays short and keeps its two set-up commands, and no page
//! points at a document outside the repository.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, openwrt/README.md and every `docs/*.md`.
fn pages() -> Vec<PathBuf> {
    let r = root();
    let mut v = vec![r.join("README.md"), r.join("openwrt/README.md")];
    for e in std::fs::read_dir(r.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            v.push(p);
        }
    }
    v.sort();
    v
}

/// The lines outside fenced code blocks, with inline code spans taken out.
fn prose(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                kept.push_str(part);
            }
        }
        out.push(kept);
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped (code spans'
/// backticks included), spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a page offers: its headings' slugs (a repeated one gets `-1`, `-2`,
/// as on GitHub). Not `id="..."` of inline HTML: renderers that strip HTML drop it.
fn anchors(text: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let base = slug(h.trim_start_matches('#'));
            let n = bases.iter().filter(|b| **b == base).count();
            v.push(if n == 0 {
                base.clone()
            } else {
                format!("{base}-{n}")
            });
            bases.push(base);
        }
    }
    v
}

/// The link targets of a page's prose: `[text](target)` and `![alt](target)`.
fn links(text: &str) -> Vec<String> {
    let mut v = Vec::new();
    for line in prose(text) {
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(j) = rest.find(')') else { break };
            let target = rest[..j].split_whitespace().next().unwrap_or("");
            v.push(target.to_string());
            rest = &rest[j..];
        }
    }
    v
}

/// Every relative link of `page` that does not resolve, as `page: target (why)`.
fn broken(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let dir = page.parent().unwrap();
    let mut bad = Vec::new();
    for target in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let file = if path.is_empty() {
            page.to_path_buf()
        } else {
            dir.join(path)
        };
        let why = if !file.exists() {
            "no such file"
        } else if !anchor.is_empty()
            && file.extension().is_some_and(|x| x == "md")
            && !anchors(&std::fs::read_to_string(&file).unwrap())
                .iter()
                .any(|a| a == anchor)
        {
            "no such heading"
        } else {
            continue;
        };
        bad.push(format!("{}: {target} ({why})", page.display()));
    }
    bad
}

#[test]
fn every_relative_link_resolves() {
    let bad: Vec<String> = pages().iter().flat_map(|p| broken(p)).collect();
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn a_broken_link_or_anchor_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("b.md"),
        "# The `b` page: part 1\n\n## Two\n\n## Two\n",
    )
    .unwrap();
    let a = dir.path().join("a.md");
    std::fs::write(
        &a,
        "[ok](b.md) [ok](b.md#the-b-page-part-1) [ok](b.md#two-1) [ok](#here)\n\
         ## Here\n```\n[not a link](gone.md)\n```\n`[code](gone.md)`\n\
         [bad](missing.md) [bad](b.md#three) [bad](#nowhere)\n",
    )
    .unwrap();
    let bad = broken(&a);
    assert_eq!(bad.len(), 3, "{bad:?}");
    assert!(bad[0].ends_with("missing.md (no such file)"), "{bad:?}");
    assert!(bad[1].ends_with("b.md#three (no such heading)"), "{bad:?}");
    assert!(bad[2].ends_with("#nowhere (no such heading)"), "{bad:?}");
}

#[test]
fn the_readme_is_short_and_keeps_its_set_up_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(
        n <= 300,
        "README.md has {n} lines; at most 300 (the rest belongs in docs/)"
    );
    // .ci/run and people run "the README's test command" and its main job.
    assert!(
        readme.contains("```sh\ncargo test\n```"),
        "README lost `cargo test`"
    );
    assert!(
        readme.contains("cargo run --release -- --data-dir ./data daemon --listen 127.0.0.1:8080"),
        "README lost the command that runs the main job"
    );
}

#[test]
fn the_docs_point_at_nothing_outside_the_repository() {
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap().to_lowercase();
        // (The folder beside the checkout, spelled in two pieces so that a search of
        // the tests for paths outside the repository does not find this check.)
        for word in ["contract", "spec.md", concat!("..", "/shared")] {
            assert!(
                !text.contains(word),
                "{} mentions {word:?}: the repository's documents must stand on their own",
                page.display()
            );
        }
    }
}

/// The commands `--help` lists (the command table): lines of the "Commands:" block
/// that start with two spaces and a lower-case name.
fn commands() -> Vec<String> {
    let out = std::process::Command::new(crate::common::bin())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let block = help.split("Commands:").nth(1).expect("a Commands: block");
    let block = block.split("\n\n").next().unwrap_or_default();
    block
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_lowercase()))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_command_table_lists_every_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let table = readme
        .split("| command | what it does |")
        .nth(1)
        .expect("the README's command table");
    // The first cell of each row, whose code spans name the commands.
    let named: Vec<String> = table
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .flat_map(|l| {
            let cell = l.split(" | ").next().unwrap_or_default();
            let spans: Vec<String> = cell
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            spans
        })
        .flat_map(|span| {
            span.split([',', ' '])
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let all = commands();
    assert!(all.len() > 15, "{all:?}");
    let missing: Vec<&String> = all.iter().filter(|c| !named.contains(c)).collect();
    assert!(
        missing.is_empty(),
        "not in the README's command table: {missing:?}"
    );
}

/// Anchors are headings only: an inline `<a id>` is dropped by renderers that strip
/// HTML (and prefixed by GitHub's), so a link to one is broken for some readers.
#[test]
fn an_inline_html_anchor_is_not_a_link_target() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.md");
    std::fs::write(&a, "* <a id=\"here\"></a>**Here**\n\n[bad](#here)\n").unwrap();
    assert_eq!(broken(&a).len(), 1);
}

/// The number just before `marker` in `text`.
fn number_before(text: &str, marker: &str) -> f64 {
    let at = text.find(marker).unwrap_or_else(|| panic!("no {marker:?}"));
    let digits: Vec<char> = text[..at]
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.iter().rev().collect::<String>().parse().unwrap()
}

/// The page sizes docs/api.md states (in whole KB) are those of
/// `src/api/web/index.html` and its `.gz`.
#[test]
fn the_documented_page_size_is_current() {
    let size = |f: &str| std::fs::metadata(root().join(f)).unwrap().len() as f64 / 1000.0;
    let api = std::fs::read_to_string(root().join("docs/api.md")).unwrap();
    for (marker, file) in [
        (" KB as written", "src/api/web/index.html"),
        (" KB compressed", "src/api/web/index.html.gz"),
    ] {
        let (stated, real) = (number_before(&api, marker), size(file));
        assert!(
            (stated - real).abs() <= 1.0,
            "docs/api.md says {stated}{marker:?}, {file} is {real} KB"
        );
    }
}

/// `fuzz/` is a workspace of its own: its lock file is committed (else the next
/// `cargo update` there pulls new versions that may break `clippy -D warnings`), and
/// names the versions of the main lock for every package both use.
#[test]
fn the_fuzz_lock_file_is_committed_and_agrees() {
    let read = |f: &str| std::fs::read_to_string(root().join(f)).unwrap_or_default();
    let packages = |text: &str| -> Vec<(String, String)> {
        text.split("[[package]]")
            .filter_map(|p| {
                let field = |k: &str| {
                    p.lines()
                        .find_map(|l| l.strip_prefix(&format!("{k} = \"")))
                        .map(|v| v.trim_end_matches('"').to_string())
                };
                Some((field("name")?, field("version")?))
            })
            .collect()
    };
    let fuzz = packages(&read("fuzz/Cargo.lock"));
    assert!(
        fuzz.iter().any(|(n, _)| n == "libfuzzer-sys"),
        "no fuzz/Cargo.lock"
    );
    let main = packages(&read("Cargo.lock"));
    for (name, version) in &fuzz {
        let in_main: Vec<&String> = main
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v)
            .collect();
        assert!(
            in_main.is_empty() || in_main.contains(&version),
            "fuzz/Cargo.lock has {name} {version}, Cargo.lock {in_main:?}"
        );
    }
    assert!(
        !read("fuzz/.gitignore")
            .lines()
            .any(|l| l.trim() == "/Cargo.lock"),
        "fuzz/.gitignore leaves out its lock file"
    );
}
