//! The help rule, checked on a program's clap definition rather than by reading it:
//! every argument of every subcommand (flags and positionals alike) says what it is
//! for in `--help`.

/// `program subcommand … --flag` (or `<POSITIONAL>`) for every argument of `command`
/// and its subcommands, however deep, that has no help text. clap's own `--help` and
/// `--version` are left out: clap describes them itself.
pub fn undescribed_arguments(command: &clap::Command) -> Vec<String> {
    let mut command = command.clone();
    // Built, so that global flags are propagated to every subcommand and each
    // subcommand's path is its full name.
    command.build();
    let mut missing = Vec::new();
    walk(&command, command.get_name(), &mut missing);
    missing
}

fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
    for arg in command.get_arguments() {
        let own = matches!(
            arg.get_action(),
            clap::ArgAction::Help
                | clap::ArgAction::HelpShort
                | clap::ArgAction::HelpLong
                | clap::ArgAction::Version
        );
        let described = arg
            .get_help()
            .is_some_and(|h| !h.to_string().trim().is_empty())
            || arg
                .get_long_help()
                .is_some_and(|h| !h.to_string().trim().is_empty());
        if !own && !described {
            let name = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None if arg.is_positional() => format!("<{}>", arg.get_id()),
                None => format!("-{}", arg.get_short().unwrap_or('?')),
            };
            missing.push(format!("{path} {name}"));
        }
    }
    for sub in command.get_subcommands() {
        walk(sub, &format!("{path} {}", sub.get_name()), missing);
    }
}

/// Every argument of `command` and its subcommands that takes a path and, given one
/// that does not exist, is not refused while the command line is parsed (by
/// `stackpack_terminal::args::ExistingPath`, exit 2), as `program subcommand --flag`
/// (or `<POSITIONAL>`); except those `writes` names, by `--flag` or by
/// `subcommand --flag`: paths the command creates or writes.
pub fn path_arguments_not_checked(command: &clap::Command, writes: &[&str]) -> Vec<String> {
    let mut command = command.clone();
    command.build();
    let mut unchecked = Vec::new();
    paths(&command, &command, &[], writes, &mut unchecked);
    unchecked
}

fn paths(
    root: &clap::Command,
    command: &clap::Command,
    path: &[&str],
    writes: &[&str],
    unchecked: &mut Vec<String>,
) {
    let missing = "/nonexistent-stackpack-path/named-on-the-command-line";
    for arg in command.get_arguments() {
        if arg.get_value_parser().type_id() != std::any::TypeId::of::<std::path::PathBuf>() {
            continue;
        }
        let name = match arg.get_long() {
            Some(long) => format!("--{long}"),
            None => format!("<{}>", arg.get_id()),
        };
        let full = [path, &[name.as_str()]].concat().join(" ");
        if writes.contains(&name.as_str()) || writes.contains(&full.as_str()) {
            continue;
        }
        let mut argv: Vec<String> = vec![root.get_name().to_string()];
        argv.extend(path.iter().map(|s| s.to_string()));
        match arg.get_long() {
            Some(long) => argv.extend([format!("--{long}"), missing.to_string()]),
            None => {
                // Earlier positionals get a placeholder their parser accepts.
                let before = command
                    .get_positionals()
                    .take_while(|p| p.get_id() != arg.get_id());
                argv.extend(before.map(placeholder));
                argv.push(missing.to_string());
            }
        }
        let refused = match root.clone().try_get_matches_from(&argv) {
            Err(error) => {
                error.kind() == clap::error::ErrorKind::ValueValidation
                    && error.to_string().contains("does not exist")
            }
            Ok(_) => false,
        };
        if !refused {
            unchecked.push(format!("{} {full}", root.get_name()));
        }
    }
    for sub in command.get_subcommands() {
        let deeper = [path, &[sub.get_name()]].concat();
        paths(root, sub, &deeper, writes, unchecked);
    }
}

fn placeholder(arg: &clap::Arg) -> String {
    arg.get_possible_values()
        .first()
        .map(|value| value.get_name().to_string())
        .unwrap_or_else(|| "x".to_string())
}

/// Fails, listing them, when any argument of `command` has no help text: the body
/// of each program's `every_argument_of_every_command_is_described_in_help`.
pub fn assert_every_argument_described(command: &clap::Command) {
    let missing = undescribed_arguments(command);
    assert!(
        missing.is_empty(),
        "arguments without help text:\n  {}",
        missing.join("\n  ")
    );
}

/// Fails, listing them, when any path argument of `command` that is read (not one
/// `writes` names) accepts a path that does not exist: the body of each program's
/// `every_file_argument_read_is_refused_with_exit_2_when_missing`.
pub fn assert_every_read_path_checked(command: &clap::Command, writes: &[&str]) {
    let unchecked = path_arguments_not_checked(command, writes);
    assert!(
        unchecked.is_empty(),
        "path arguments that accept a missing path:\n  {}",
        unchecked.join("\n  ")
    );
}
