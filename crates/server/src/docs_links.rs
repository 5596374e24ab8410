//! The README and the docs say only what a clone holds: every relative link names a file
//! of the checkout (and, with `#anchor`, one of its headings), and nothing points outside
//! the repository by a relative path.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root, two folders above this crate.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The project's own Markdown files: the README and everything under `docs/`.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files
}

/// Every `](target)` of `text` outside code blocks, as written.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].trim().to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor of a heading: lowercase, spaces to hyphens, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of `text`'s headings (outside code blocks).
fn anchors(text: &str) -> HashSet<String> {
    let mut in_code_block = false;
    let mut found = HashSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
        } else if !in_code_block && line.starts_with('#') {
            found.insert(slug(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_of_the_readme_and_the_docs_names_a_file_and_heading_of_the_checkout() {
    let root = root();
    let mut broken = Vec::new();
    for file in markdown_files(&root) {
        let text = fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
            let linked = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let Ok(linked) = linked.canonicalize() else {
                broken.push(format!("{shown}: {target} (no such file)"));
                continue;
            };
            if !linked.starts_with(&root) {
                broken.push(format!("{shown}: {target} (outside the repository)"));
                continue;
            }
            if !anchor.is_empty() && !anchors(&fs::read_to_string(&linked).unwrap_or_default()).contains(anchor) {
                broken.push(format!("{shown}: {target} (no such heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "links that lead nowhere on a clone:\n{}", broken.join("\n"));
}

#[test]
fn headings_become_githubs_anchors() {
    assert_eq!(slug(" High availability (issue 24)"), "high-availability-issue-24");
    assert_eq!(slug(" `deploy/ha`: the tests"), "deployha-the-tests");
    assert_eq!(link_targets("see [a](b.md#c) and [d](https://e)\n```\n[x](y)\n```"), ["b.md#c", "https://e"]);
}
