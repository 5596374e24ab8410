//! The configuration table of the docs (flag, environment variable, default, meaning),
//! written from the options themselves: `branch-atm settings --markdown` prints it, and a
//! test holds the docs' table to it.

use clap::{Arg, Command};

/// The prefix of every setting's environment variable.
const ENV_PREFIX: &str = "BRANCH_ATM_";

/// One setting as the table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// `--name VALUE`.
    pub flag: String,
    /// `BRANCH_ATM_NAME`.
    pub env: String,
    /// The default, as its help says it (values in backticks).
    pub default: String,
    /// Its help, without the default.
    pub meaning: String,
}

/// The settings of `command` (the binary's, with its options of every command and of
/// `serve`): each option of its own, in the order of its help. Its subcommands' own
/// arguments are not settings.
pub fn rows(command: &Command) -> Vec<Row> {
    command
        .get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .filter_map(|arg| arg.get_long().map(|long| row(long, arg)))
        .collect()
}

/// The table as markdown, with its header.
pub fn markdown(command: &Command) -> String {
    let mut table = String::from("| Flag | Environment | Default | Meaning |\n|---|---|---|---|\n");
    for row in rows(command) {
        let cells = [row.flag, format!("`{}`", row.env), row.default, row.meaning].map(|cell| cell.replace('|', "\\|"));
        table.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    table
}

fn row(long: &str, arg: &Arg) -> Row {
    let possible = arg.get_possible_values();
    let value = if arg.get_num_args().is_some_and(|range| range.min_values() == 0) {
        String::new()
    } else if !possible.is_empty() {
        let names: Vec<&str> = possible.iter().map(clap::builder::PossibleValue::get_name).collect();
        format!(" {}", names.join("|"))
    } else {
        arg.get_value_names().map(|names| format!(" {}", names.join(" "))).unwrap_or_default()
    };
    let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
    let (meaning, written_default) = match help.rsplit_once(" [default: ") {
        Some((meaning, default)) if default.ends_with(']') => (meaning, Some(&default[..default.len() - 1])),
        _ => (help.as_str(), None),
    };
    let default = match arg.get_default_values() {
        [] => written_default.unwrap_or("none").to_owned(),
        values => values
            .iter()
            .map(|value| match value.to_string_lossy().as_ref() {
                "false" => "off".to_owned(),
                "true" => "on".to_owned(),
                value => format!("`{value}`"),
            })
            .collect::<Vec<_>>()
            .join(", "),
    };
    Row {
        flag: format!("`--{long}{value}`"),
        env: format!("{ENV_PREFIX}{}", long.to_ascii_uppercase().replace('-', "_")),
        default,
        meaning: meaning.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}
