//! The docs' configuration table says what the code declares: every setting has exactly
//! one row, with its flag, its environment variable and its default, and no row names a
//! setting the code lacks. The table is `docs/configuration.md`'s. `branch-atm settings
//! --markdown` prints the table the code implies (its meanings are the options' help, shorter
//! than the docs'), to start a row from.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use clap::CommandFactory as _;

use crate::cli::Cli;
use crate::settings::table;

/// The table of `docs/configuration.md` (or, on a branch from before that file, of the
/// README's Configuration section): where it was read, and its lines, the header's first.
fn docs_table() -> (String, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let configuration = root.join("docs/configuration.md");
    let (name, text) = if configuration.is_file() {
        ("docs/configuration.md", fs::read_to_string(configuration).unwrap())
    } else {
        let readme = fs::read_to_string(root.join("README.md")).unwrap();
        let (_, section) = readme.split_once("### Configuration\n").expect("README.md has a Configuration section");
        ("README.md's Configuration section", section.to_owned())
    };
    let lines = text
        .lines()
        .skip_while(|line| !line.starts_with("| Flag |"))
        .take_while(|line| line.starts_with('|'))
        .map(str::to_owned)
        .collect::<Vec<_>>();
    assert!(!lines.is_empty(), "{name} has no table whose header starts with `| Flag |`");
    (name.to_owned(), lines)
}

/// The cells of a table row, split at the `|` that are not escaped.
fn cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut chars = line.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cells.last_mut().unwrap().push(chars.next().unwrap()),
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.pop_if(|last| last.trim().is_empty());
    cells.into_iter().map(|cell| cell.trim().to_owned()).collect()
}

/// A cell as read: without backticks, its spaces collapsed.
fn plain(cell: &str) -> String {
    cell.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The settings a row names, each as (flag, environment variable, default). A row may
/// name several (`--tls-cert PEM, --tls-key PEM`), their variables listed alike (a later
/// one may be shortened to its end: `…_BURST`), and either one default for all or one each.
fn settings_of_row(row: &[String]) -> Vec<(String, String, String)> {
    let flags: Vec<String> =
        row[0].split(", ").map(|flag| plain(flag).split(' ').next().unwrap_or_default().to_owned()).collect();
    let variables: Vec<String> = row[1].split(", ").map(plain).collect();
    let defaults: Vec<String> = match row[2].split(", ").map(plain).collect::<Vec<_>>() {
        each if flags.len() > 1 && each.len() == flags.len() => each,
        _ => vec![plain(&row[2]); flags.len()],
    };
    flags
        .into_iter()
        .enumerate()
        .map(|(n, flag)| (flag, variables.get(n).cloned().unwrap_or_default(), defaults[n].clone()))
        .collect()
}

#[test]
fn the_docs_configuration_table_has_one_row_per_setting_with_its_flag_variable_and_default() {
    let declared: BTreeMap<String, table::Row> = table::rows(&Cli::command())
        .into_iter()
        .map(|row| (plain(&row.flag).split(' ').next().unwrap().to_owned(), row))
        .collect();
    let (name, lines) = docs_table();
    let mut rows_of: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for line in lines.iter().skip(2) {
        let row = cells(line);
        if row.len() != 4 {
            wrong.push(format!("a row of {} cells, not 4: {line}", row.len()));
            continue;
        }
        for (flag, variable, default) in settings_of_row(&row) {
            *rows_of.entry(flag.clone()).or_default() += 1;
            let Some(setting) = declared.get(&flag) else {
                wrong.push(format!("{flag}: a row for a setting the code lacks"));
                continue;
            };
            let shortened = variable.strip_prefix('…').is_some_and(|end| setting.env.ends_with(end));
            if variable != setting.env && !shortened {
                wrong.push(format!("{flag}: environment variable {variable}, not {}", setting.env));
            }
            if default != plain(&setting.default) {
                wrong.push(format!("{flag}: default {default:?}, not {:?}", plain(&setting.default)));
            }
        }
    }
    for flag in declared.keys() {
        match rows_of.get(flag) {
            None => wrong.push(format!("{flag}: no row")),
            Some(1) => {}
            Some(n) => wrong.push(format!("{flag}: {n} rows")),
        }
    }
    assert!(
        wrong.is_empty(),
        "{name}'s configuration table is not the code's:\n{}\n\nThe table the code declares (`branch-atm settings \
         --markdown`):\n{}",
        wrong.join("\n"),
        table::markdown(&Cli::command())
    );
}

/// The table's default is the one `--help` shows: clap's rendering of the default value
/// or, for a setting without one, the `[default: …]` its doc says what absence means in.
#[test]
fn every_setting_says_its_default() {
    let command = Cli::command();
    for arg in command.get_arguments().filter(|arg| arg.get_long().is_some() && arg.get_id() != "help") {
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        assert!(
            !arg.get_default_values().is_empty() || help.ends_with(']') && help.contains(" [default: "),
            "--{} says no default: {help}",
            arg.get_long().unwrap_or_default()
        );
    }
}

#[test]
fn a_row_may_name_two_settings_with_a_shortened_variable_and_a_default_each() {
    let row = cells(
        "| `--rate-limit-per-second N`, `--rate-limit-burst N` | `BRANCH_ATM_RATE_LIMIT_PER_SECOND`, `…_BURST` | `1000`, `2000` | requests \\| per client |",
    );
    assert_eq!(row.len(), 4);
    assert_eq!(row[3], "requests | per client");
    assert_eq!(
        settings_of_row(&row),
        [
            ("--rate-limit-per-second".into(), "BRANCH_ATM_RATE_LIMIT_PER_SECOND".into(), "1000".into()),
            ("--rate-limit-burst".into(), "…_BURST".into(), "2000".into()),
        ]
    );
}
