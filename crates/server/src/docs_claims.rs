//! What the README and the docs (the ADRs, which are history, aside) name in code spans exists in the checkout: a path names a
//! file or folder of it, a Rust name is defined where its path says, a flag is one of the
//! command it is given to, an environment variable is read somewhere in the code. A
//! sentence that names one of these is a claim a test can check; one that outlived its
//! code fails here.
//!
//! What is checked, span by span (`…` inside backticks, outside fenced blocks; in fenced
//! blocks, the lines that run `branch-atm` or one of the project's scripts):
//! - a path whose first part is a folder or file at the root, or of a crate
//!   (`crates/api/src/lib.rs`, `tests/support/binary.rs`), or a file name with an
//!   extension of the project's (`startup.rs`): it exists (globs and `…` are checked up to
//!   them). Paths of other projects and of the machine (`/dev/zero`) are not the
//!   checkout's and are not checked;
//! - a Rust path (`adapters::redis_link::RedisNews`, `TestApp::builder()`): its last name
//!   is defined in a file its qualifier leads to (a crate, a module, a type's file);
//! - a lone type-like name (`RedisNews`): it is a word of the code;
//! - a flag (`--redis-url`): the binary's, or that of the script the span runs;
//! - an environment variable (`BRANCH_ATM_REDIS_URL`, `TEST_POSTGRES_URL`): the code,
//!   the scripts or the Dockerfile name it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use clap::CommandFactory as _;

/// Flags of cargo and of the test harness the docs give (`cargo test -- --include-ignored`).
const CARGO_FLAGS: [&str; 18] = [
    "--offline",
    "--locked",
    "--release",
    "--workspace",
    "--all-targets",
    "--include-ignored",
    "--ignored",
    "--nocapture",
    "--test-threads",
    "--bin",
    "--test",
    "--lib",
    "--tests",
    "--no-run",
    "--features",
    "--manifest-path",
    "--quiet",
    "--check",
];

/// Environment variables that the dependencies read, not the code: (variable, reader).
const READ_BY_DEPENDENCIES: [(&str, &str); 4] = [
    ("OTEL_EXPORTER_OTLP_HEADERS", "opentelemetry-otlp"),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "opentelemetry-otlp"),
    ("CARGO_HOME", "cargo"),
    ("CARGO_TARGET_DIR", "cargo"),
];

/// The repository's root, two folders above this crate.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The files under `folder` (recursively, `target` and hidden folders but `.ci` aside)
/// whose name `keep` accepts.
fn files_under(folder: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && name != "node_modules" && (!name.starts_with('.') || name == ".ci") {
                    folders.push(path);
                }
            } else if keep(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// What the checkout holds, read once: its files, the names its Rust code defines (per
/// file), its words, the binary's flags and the scripts'.
struct Checkout {
    root: PathBuf,
    /// Every file and folder, relative to the root.
    paths: HashSet<PathBuf>,
    /// File names (`startup.rs`), wherever they are.
    file_names: HashSet<String>,
    /// The names each Rust file defines, and those it implements (`impl … for X`, `impl X`).
    defines: HashMap<PathBuf, (HashSet<String>, HashSet<String>)>,
    /// Every word of the code, the scripts and the data files the docs quote.
    words: HashSet<String>,
    /// The code's text, for names it writes whole (a `tracing` target, `branch_atm::trace`).
    code: String,
    /// The environment variables of the settings (`BRANCH_ATM_…`, derived from the flags,
    /// so not written whole in the code) and those the dependencies read.
    variables: HashSet<String>,
    /// The binary's long flags (every command's), and each script's.
    flags: HashMap<&'static str, HashSet<String>>,
}

/// A name: letters, digits and `_`, not starting with a digit.
fn is_name(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|word| !word.is_empty())
}

/// The names a Rust file defines (items, fields and variants at the start of a line, its
/// inline modules) and the types it has `impl` blocks for.
fn definitions(text: &str) -> (HashSet<String>, HashSet<String>) {
    const ITEMS: [&str; 9] = ["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "macro_rules!"];
    let (mut defined, mut implemented) = (HashSet::new(), HashSet::new());
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if ITEMS.contains(&pair[0]) {
                let name: String = pair[1].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                defined.insert(name);
            }
        }
        if let Some(position) = words.iter().position(|word| *word == "impl" || word.starts_with("impl<")) {
            let rest = &words[position + 1..];
            let target = rest.iter().position(|word| *word == "for").map_or(rest.first(), |at| rest.get(at + 1));
            if let Some(target) = target {
                implemented.insert(target.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
            }
        }
        // A field or a variant: `name: Type,` / `Name,` / `Name(…)` / `Name {`.
        let trimmed = line.trim_start().trim_start_matches("pub ").trim_start_matches("pub(crate) ");
        let name: String = trimmed.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && trimmed[name.len()..].starts_with([':', ',', '(', ' ', '{']) && is_name(&name) {
            defined.insert(name);
        }
    }
    (defined, implemented)
}

/// The long flags a Python script declares (`add_argument("--name"`).
fn script_flags(text: &str) -> HashSet<String> {
    let mut flags = HashSet::new();
    for part in text.split("add_argument(").skip(1) {
        for quoted in part.split('"').skip(1).step_by(2).take_while(|quoted| quoted.starts_with('-')) {
            flags.insert(quoted.to_owned());
        }
    }
    flags
}

/// The long flags of the binary, every command's.
fn binary_flags() -> HashSet<String> {
    fn walk(command: &clap::Command, flags: &mut HashSet<String>) {
        for arg in command.get_arguments() {
            flags.extend(arg.get_long().map(|long| format!("--{long}")));
        }
        for sub in command.get_subcommands() {
            walk(sub, flags);
        }
    }
    let mut flags: HashSet<String> = ["--help", "--version"].map(String::from).into();
    walk(&crate::cli::Cli::command(), &mut flags);
    flags
}

impl Checkout {
    fn read(root: &Path) -> Self {
        let every = files_under(root, &|_| true);
        let mut paths = HashSet::new();
        let mut file_names = HashSet::new();
        let (mut defines, mut words, mut code) = (HashMap::new(), HashSet::new(), String::new());
        for file in &every {
            let relative = file.strip_prefix(root).unwrap().to_path_buf();
            file_names.insert(relative.file_name().unwrap().to_string_lossy().into_owned());
            for ancestor in relative.ancestors().filter(|a| !a.as_os_str().is_empty()) {
                paths.insert(ancestor.to_path_buf());
            }
            let markdown = relative.extension().is_some_and(|ext| ext == "md");
            // Vendored code is not the project's; this file plants false claims.
            let under_vendor = relative.starts_with("vendor") || relative.ends_with("docs_claims.rs");
            let Ok(text) = fs::read_to_string(file) else { continue };
            if !markdown && !under_vendor {
                words.extend(words_of(&text).map(str::to_owned));
                code.push_str(&text);
            }
            if relative.extension().is_some_and(|ext| ext == "rs") && !under_vendor {
                defines.insert(relative, definitions(&text));
            }
        }
        let mut flags = HashMap::from([("branch-atm", binary_flags())]);
        for script in ["bench/run", "deploy/ha", "deploy/cluster"] {
            flags.insert(script, script_flags(&fs::read_to_string(root.join(script)).unwrap_or_default()));
        }
        flags.insert(".ci/run", ["--quick".to_owned()].into());
        flags.insert("cargo", CARGO_FLAGS.map(String::from).into());
        let mut variables: HashSet<String> =
            crate::settings::table::rows(&crate::cli::Cli::command()).into_iter().map(|row| row.env).collect();
        variables.extend(READ_BY_DEPENDENCIES.map(|(variable, _)| variable.to_owned()));
        Self { root: root.to_path_buf(), paths, file_names, defines, words, code, variables, flags }
    }

    /// Whether `path` (as a doc in `folder` writes it) is one of the checkout's, if it
    /// is a path of the checkout at all.
    fn path_exists(&self, path: &str, folder: &Path) -> Option<bool> {
        let path = path.trim_end_matches('/').trim_start_matches("./");
        // Up to a glob or an elision: `crates/*/src`, `docs/adr/…`.
        let checked: String = path.split(['*', '…', '<', '{']).next().unwrap_or_default().to_owned();
        // Up to a placeholder: `docs/adr/NNNN-short-title.md`, `bench/DIR`.
        let placeholder = |part: &str| part.len() > 2 && part.chars().take(3).all(|c| c.is_ascii_uppercase());
        let checked: String = checked.split('/').take_while(|part| !placeholder(part)).collect::<Vec<_>>().join("/");
        let checked = checked.trim_end_matches(['/', '.', '-', '_']);
        let first = checked.split('/').next().unwrap_or_default();
        let crates: Vec<PathBuf> = ["domain", "adapters", "api", "server"].map(|c| Path::new("crates").join(c)).into();
        let bases: Vec<PathBuf> = std::iter::once(PathBuf::new())
            .chain(folder.strip_prefix(&self.root).ok().map(Path::to_path_buf))
            .chain(crates)
            .collect();
        let ours = bases.iter().any(|base| self.paths.contains(&base.join(first)));
        if !ours {
            // A bare file name (`startup.rs`) is the checkout's if it has one of its extensions.
            let extension = Path::new(checked).extension().and_then(|ext| ext.to_str()).unwrap_or_default();
            if !checked.contains('/') && ["rs", "md", "toml", "sql", "yml", "json"].contains(&extension) {
                return Some(self.file_names.contains(checked));
            }
            return None;
        }
        Some(checked.is_empty() || bases.iter().any(|base| self.paths.contains(&base.join(checked))))
    }

    /// The Rust files a qualifier leads to: a crate's, a module's (`name.rs`, `name/`,
    /// an inline `mod name`), or those defining or implementing a type.
    fn files_of(&self, qualifier: &str) -> Vec<&PathBuf> {
        let crate_folder = |name: &str| match name {
            "domain" | "adapters" | "api" | "server" => Some(Path::new("crates").join(name)),
            _ => None,
        };
        self.defines
            .iter()
            .filter(|(file, (defined, implemented))| {
                let in_crate = crate_folder(qualifier).is_some_and(|folder| file.starts_with(folder));
                // The black-box test binaries: `api::cli::…` is crates/server/tests/api/cli.rs.
                let test_binary = file.starts_with(Path::new("crates/server/tests").join(qualifier));
                let module = file.file_stem().is_some_and(|stem| stem == qualifier)
                    || file.parent().and_then(Path::file_name).is_some_and(|parent| parent == qualifier);
                let named = defined.contains(qualifier) || implemented.contains(qualifier);
                in_crate || test_binary || module || named
            })
            .map(|(file, _)| file)
            .collect()
    }

    /// Whether the Rust path `path` (`a::b::C::d()`) names something the code defines: its
    /// last name, defined in a file its qualifier leads to.
    fn rust_path_exists(&self, path: &str) -> bool {
        if self.code.contains(path) {
            return true;
        }
        let segments: Vec<&str> = path
            .split("::")
            .map(|segment| segment.split('(').next().unwrap_or_default())
            .filter(|segment| !segment.is_empty())
            .collect();
        let (Some(last), Some(first)) = (segments.last(), segments.first()) else { return true };
        // Another project's name (`web::Data`, `h2::server::Builder`) is not the checkout's.
        if !self.words.contains(*first) && !first.contains('…') {
            return true;
        }
        let qualifiers = &segments[..segments.len() - 1];
        if last.contains(['…', '*']) || !is_name(last) {
            // `…with_server_nonces`, `tests::*`: the qualifiers alone are checked.
            return qualifiers.iter().filter(|q| !q.contains(['…', '*'])).all(|name| self.words.contains(*name));
        }
        // The nearest qualifier that is not `tests` (an inline module of the file before).
        let Some(qualifier) = qualifiers.iter().rev().find(|q| **q != "tests" && !q.contains('…')) else {
            return self.words.contains(*last);
        };
        let files = self.files_of(qualifier);
        let is_file = |file: &&PathBuf| file.file_stem().is_some_and(|stem| stem == *last);
        files.iter().any(|file| self.defines[*file].0.contains(*last))
            || self.defines.keys().any(|file| {
                is_file(&file)
                    && file.parent().is_some_and(|parent| parent.ends_with(qualifier) || files.contains(&file))
            })
            || self.defines.keys().any(|file| file.ends_with(Path::new(qualifier).join(format!("{last}.rs"))))
            || self.paths.iter().any(|p| p.ends_with(Path::new(qualifier).join(last)))
    }
}

/// A span's kind of claim, and what it names.
#[derive(Debug, PartialEq, Eq)]
enum Claim<'a> {
    Path(&'a str),
    RustPath(&'a str),
    TypeName(&'a str),
    Flag(&'a str),
    Variable(&'a str),
    /// A command line: its program, flags and variables are checked.
    Command(&'a str),
    None,
}

fn is_variable(text: &str) -> bool {
    text.len() > 3
        && text.contains('_')
        && text.starts_with(|c: char| c.is_ascii_uppercase())
        && text.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !text.ends_with('_')
}

fn claim(span: &str) -> Claim<'_> {
    let span = span.trim();
    if span.contains(char::is_whitespace) {
        return Claim::Command(span);
    }
    if span.contains("://") || span.starts_with('/') || span.starts_with("../") || span.starts_with('$') {
        return Claim::None;
    }
    if let Some(flag) = span.strip_prefix("--") {
        let name = flag.split(['=', '[']).next().unwrap_or_default();
        return if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
            Claim::Flag(&span[..name.len() + 2])
        } else {
            Claim::None
        };
    }
    if is_variable(span) {
        return Claim::Variable(span);
    }
    if span.contains("::") && span.chars().all(|c| c.is_alphanumeric() || "_:()…*".contains(c)) {
        return Claim::RustPath(span);
    }
    if span.contains('/') || span.rsplit_once('.').is_some_and(|(stem, ext)| is_name(stem) && is_name(ext)) {
        let path_like = span.chars().all(|c| c.is_alphanumeric() || "_-./*…".contains(c));
        return if path_like { Claim::Path(span) } else { Claim::None };
    }
    let humps = span.chars().filter(char::is_ascii_uppercase).count();
    if humps >= 2 && is_name(span) && !span.contains('_') && span.starts_with(|c: char| c.is_ascii_uppercase()) {
        let lowercase = span.chars().any(|c| c.is_ascii_lowercase());
        return if lowercase { Claim::TypeName(span) } else { Claim::None };
    }
    Claim::None
}

/// The code spans of `text` outside fenced blocks, and the lines of fenced blocks, each
/// with its line number.
fn spans(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let command = line.trim().trim_start_matches("$ ");
            found.push((number + 1, command.split(" #").next().unwrap_or_default().to_owned()));
            continue;
        }
        for (at, part) in line.split('`').enumerate() {
            if at % 2 == 1 {
                found.push((number + 1, part.to_owned()));
            }
        }
    }
    found
}

impl Checkout {
    /// What of `span` (in a doc in `folder`) the checkout does not hold.
    fn false_claims(&self, span: &str, folder: &Path) -> Vec<String> {
        match claim(span) {
            Claim::Path(path) if self.path_exists(path, folder) == Some(false) => vec![format!("no such path {path}")],
            Claim::RustPath(path) if !self.rust_path_exists(path) => vec![format!("no such Rust name {path}")],
            Claim::TypeName(name) if !self.words.contains(name) => vec![format!("no such name in the code {name}")],
            Claim::Flag(flag) if !self.flags.values().any(|flags| flags.contains(flag)) => {
                vec![format!("no command has the flag {flag}")]
            }
            Claim::Variable(variable) if !self.reads(variable) => {
                vec![format!("nothing reads the variable {variable}")]
            }
            Claim::Command(command) => self.false_command(command, folder),
            _ => Vec::new(),
        }
    }

    /// Whether the code, a setting or a dependency reads `variable`.
    fn reads(&self, variable: &str) -> bool {
        self.words.contains(variable) || self.variables.contains(variable)
    }

    /// What a command line names that does not exist: its variables, the project's
    /// program it runs, and that program's flags.
    fn false_command(&self, command: &str, folder: &Path) -> Vec<String> {
        let mut wrong = Vec::new();
        let mut words = command.split_whitespace().peekable();
        while let Some((variable, _)) = words.peek().and_then(|word| word.split_once('=')) {
            if is_variable(variable) && !self.reads(variable) {
                wrong.push(format!("nothing reads the variable {variable}"));
            }
            words.next();
        }
        let mut program = words.next().unwrap_or_default();
        if ["python3", "bash", "sudo", "exec"].contains(&program) {
            program = words.next().unwrap_or_default();
        }
        let program = program.trim_start_matches("./");
        let flags_of = match program {
            "cargo" if command.contains("--bin branch-atm") => command.split(" -- ").nth(1).map(|_| "branch-atm"),
            "target/release/branch-atm" | "target/debug/branch-atm" => Some("branch-atm"),
            program => self.flags.contains_key(program).then_some(program),
        };
        if let Some(flags_of) = flags_of {
            if flags_of != "branch-atm" && self.path_exists(flags_of, folder) == Some(false) {
                wrong.push(format!("no such program {flags_of}"));
            }
            let given = if program == "cargo" { command.split(" -- ").nth(1).unwrap_or_default() } else { command };
            for word in given.split_whitespace().filter(|word| word.starts_with("--")) {
                let flag = word.split('=').next().unwrap_or_default().trim_end_matches([',', ';', ')', '`']);
                if flag.len() > 2 && !self.flags[flags_of].contains(flag) {
                    wrong.push(format!("{flags_of} has no flag {flag}"));
                }
            }
        }
        wrong
    }
}

/// The README and every Markdown file under `docs/`.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = files_under(&root.join("docs"), &|path| path.extension().is_some_and(|ext| ext == "md"));
    files.push(root.join("README.md"));
    files.sort();
    files
}

/// Every false claim of `text` (a doc in `folder`), as `line: what`.
fn false_claims_of(checkout: &Checkout, text: &str, folder: &Path) -> BTreeSet<String> {
    spans(text)
        .into_iter()
        .flat_map(|(line, span)| checkout.false_claims(&span, folder).into_iter().map(move |claim| (line, claim)))
        .map(|(line, claim)| format!("{line}: {claim}"))
        .collect()
}

#[test]
fn every_path_name_flag_and_variable_the_docs_name_exists() {
    let root = root();
    let checkout = Checkout::read(&root);
    let mut wrong = Vec::new();
    // The ADRs are history: what they name may have gone since, and they say so.
    for file in markdown_files(&root).into_iter().filter(|file| !file.starts_with(root.join("docs/adr"))) {
        let text = fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(&root).unwrap().display().to_string();
        for claim in false_claims_of(&checkout, &text, file.parent().unwrap()) {
            wrong.push(format!("{shown}:{claim}"));
        }
    }
    assert!(wrong.is_empty(), "{} claims of the docs name what the checkout lacks:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn a_planted_false_path_name_flag_and_variable_are_each_found() {
    let root = root();
    let checkout = Checkout::read(&root);
    let planted = "\
        The view is `crates/adapters/src/view.rs`, the memory store `crates/api/src/memory.rs`.\n\
        Start with `TestApp::builder()`, not `TestApp::empty()`; Redis news is `adapters::redis_link::RedisNews`,\n\
        not `adapters::redis_link::RedisGossip`; the type `RedisNews`, not `RedisRumours`.\n\
        Give `--redis-url`, not `--redis-adress`; set `BRANCH_ATM_REDIS_URL`, not `BRANCH_ATM_REDIS_ADRESS`.\n\
        ```sh\n\
        cargo run --bin branch-atm -- --listen 127.0.0.1:8080 --no-such-flag\n\
        python3 bench/run --callgrind --fastest\n\
        ```\n";
    let found = false_claims_of(&checkout, planted, &root.join("docs"));
    let expected: BTreeSet<String> = [
        "1: no such path crates/api/src/memory.rs",
        "2: no such Rust name TestApp::empty()",
        "3: no such Rust name adapters::redis_link::RedisGossip",
        "3: no such name in the code RedisRumours",
        "4: no command has the flag --redis-adress",
        "4: nothing reads the variable BRANCH_ATM_REDIS_ADRESS",
        "6: branch-atm has no flag --no-such-flag",
        "7: bench/run has no flag --fastest",
    ]
    .map(String::from)
    .into();
    assert_eq!(found, expected);
}

#[test]
fn spans_are_read_as_the_claims_they_make() {
    assert_eq!(claim("crates/api/src/lib.rs"), Claim::Path("crates/api/src/lib.rs"));
    assert_eq!(claim("startup.rs"), Claim::Path("startup.rs"));
    assert_eq!(claim("adapters::view::StoreView"), Claim::RustPath("adapters::view::StoreView"));
    assert_eq!(claim("StoreView"), Claim::TypeName("StoreView"));
    assert_eq!(claim("--refresh-interval-ms"), Claim::Flag("--refresh-interval-ms"));
    assert_eq!(claim("TEST_REDIS_URL"), Claim::Variable("TEST_REDIS_URL"));
    for not_claims in ["https://example.mx/a/b", "/dev/zero", "OK", "timeTaken", "1.5", "e.g."] {
        assert_eq!(claim(not_claims), Claim::None, "{not_claims}");
    }
}
