//! The README as a newcomer reads it: every relative link and anchor of `README.md` and
//! `docs/*.md` resolves; the quick start is short, and its command blocks run exactly as written
//! (`cargo install --locked --path cargo-mlf` into a temporary root, `cargo mlf new` in a fresh
//! temporary folder, `cargo mlf build`, `cargo run`; then the firmware block under QEMU, which
//! needs the device tools: skipped without them, a failure with `CI=true`); the command table
//! names every `cargo mlf` command.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use device_tests::programs::THUMBV7EM;
use device_tests::tools::{self, Need};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    mlf_fixtures::workspace_root()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The documentation files: README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A heading's anchor as GitHub makes it: lower case, anything but letters, digits, `_`, `-`
/// and spaces dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text (repeated headings get `-1`, `-2`, … as on GitHub) and its
/// links (destination, in order).
fn read_markdown(md: &str) -> (BTreeSet<String>, Vec<String>) {
    let (mut anchors, mut links, mut seen) = (BTreeSet::new(), Vec::new(), BTreeMap::<String, usize>::new());
    let mut heading: Option<String> = None;
    for event in Parser::new(md) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) if heading.is_some() => heading.as_mut().unwrap().push_str(&t),
            Event::End(TagEnd::Heading(_)) => {
                let s = slug(&heading.take().unwrap());
                let n = seen.entry(s.clone()).or_insert(0);
                anchors.insert(if *n == 0 { s.clone() } else { format!("{s}-{n}") });
                *n += 1;
            }
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                links.push(dest_url.to_string())
            }
            _ => {}
        }
    }
    (anchors, links)
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let pages = pages();
    assert!(pages.len() > 5, "README.md and the docs/ pages: {pages:?}");
    let anchors: BTreeMap<PathBuf, BTreeSet<String>> = pages
        .iter()
        .map(|p| (p.canonicalize().unwrap(), read_markdown(&std::fs::read_to_string(p).unwrap()).0))
        .collect();
    let mut broken = Vec::new();
    for page in &pages {
        let (_, links) = read_markdown(&std::fs::read_to_string(page).unwrap());
        for link in links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').map_or((link.as_str(), None), |(p, a)| (p, Some(a)));
            let target = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
            let Ok(target) = target.canonicalize() else {
                broken.push(format!("{}: {link}: no such file", page.display()));
                continue;
            };
            if let Some(anchor) = anchor {
                match anchors.get(&target) {
                    Some(a) if a.contains(anchor) => {}
                    Some(_) => broken.push(format!("{}: {link}: no heading with that anchor", page.display())),
                    None => {
                        broken.push(format!("{}: {link}: an anchor into a file that is not a page", page.display()))
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The lines of the README's section `title` (from its heading to the next `## `).
fn section(title: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let start = lines.iter().position(|l| *l == format!("## {title}")).unwrap_or_else(|| panic!("no ## {title}"));
    let end = lines[start + 1..].iter().position(|l| l.starts_with("## ")).map_or(lines.len(), |e| start + 1 + e);
    lines[start..end].iter().map(|l| l.to_string()).collect()
}

/// The ```sh blocks of a section.
fn sh_blocks(lines: &[String]) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for l in lines {
        match (&mut current, l.as_str()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn the_quick_start_is_short_and_the_command_table_is_complete() {
    let quick = section("Quick start");
    assert!(quick.len() < 60, "the quick start has {} lines", quick.len());
    let blocks = sh_blocks(&quick);
    assert_eq!(blocks.len(), 2, "a host block and a firmware block");
    for command in ["cargo install --locked --path cargo-mlf", "cargo mlf new demo", "cargo mlf build", "cargo run"] {
        assert!(blocks[0].contains(command), "{command}: {}", blocks[0]);
    }
    assert!(blocks[1].contains("--template firmware") && blocks[1].contains("cargo run"), "{}", blocks[1]);
    // The fresh-clone commands stand above the quick start.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let quick_at = readme.find("## Quick start").unwrap();
    for fresh in ["cargo run -p digits", "cargo test --workspace"] {
        assert!(readme.find(fresh).is_some_and(|i| i < quick_at), "{fresh} before the quick start");
    }
    // Every command `cargo mlf --help` lists has a row of the table.
    let help = Command::new(env!("CARGO_BIN_EXE_cargo-mlf")).args(["mlf", "--help"]).output().unwrap();
    let help = text(&help.stdout);
    let table = section("Commands").join("\n");
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 8, "{help}");
    for c in commands {
        assert!(table.contains(&format!("| `cargo mlf {c}")), "no row for `cargo mlf {c}`:\n{table}");
    }
}

/// Runs a quick-start block with bash (`set -euo pipefail`) in the checkout, cargo-mlf installed
/// into `tmp/root` and temporary folders made in `tmp`; returns stdout.
fn run_block(block: &str, tmp: &Path, target_dir: &Path) -> String {
    let bin = tmp.join("root/bin");
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(format!("set -euo pipefail\n{block}")).current_dir(root());
    cmd.env("CARGO_INSTALL_ROOT", tmp.join("root")).env("TMPDIR", tmp).env("PATH", path);
    cmd.env("CARGO_TARGET_DIR", target_dir).env("MLF", root());
    for var in ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET"] {
        cmd.env_remove(var);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "the block\n{block}\nfailed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

/// The acceptance path of a newcomer: cargo-mlf installed from the checkout by the README's
/// command, then a crate made in an empty folder with the README's commands builds and runs
/// with no other flag (host), and the firmware block runs in QEMU.
#[test]
fn the_quick_start_runs_as_written() {
    let blocks = sh_blocks(&section("Quick start"));
    let tmp = tempfile::Builder::new().prefix("mlf-quick-start").tempdir().unwrap();
    let stdout = run_block(&blocks[0], tmp.path(), &root().join("target/mlf-new-tests"));
    // The digits model's reference output for case 0 has its largest value at 2.
    assert!(stdout.contains("model demo (models/digits.tar): arena 176 bytes of static RAM"), "{stdout}");
    assert!(stdout.trim_end().ends_with("output output argmax: 2"), "{stdout}");
    let installed = tmp.path().join("root/bin/cargo-mlf");
    assert!(installed.is_file(), "cargo install put cargo-mlf into CARGO_INSTALL_ROOT");

    if !tools::require(
        "the_quick_start_runs_as_written (firmware)",
        &[Need::Target(THUMBV7EM), Need::ArmGcc, Need::QemuArm],
    ) {
        return;
    }
    let stdout = run_block(&blocks[1], tmp.path(), &tools::target_dir());
    assert!(stdout.starts_with("fw: output output matches the reference (case 0;"), "{stdout}");
    assert!(
        stdout.contains("\nfw: ran from static memory (176 bytes of arena); largest output at index 2"),
        "{stdout}"
    );
}
