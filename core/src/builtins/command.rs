//! Commands as tokens: a command line split into the simple commands it
//! runs (`a && b`, `a; b`, `a | b`, `$(…)`, backticks, `sh -c '…'`, and
//! wrappers such as `env`, `nice`, `timeout`, `xargs`, `nohup`), and access
//! rules matched token by token with flags compared as sets (`-rf` ≡ `-fr`
//! ≡ `-r -f`). What cannot be parsed with certainty (variables, redirections,
//! unbalanced quotes, here-documents) is refused, never guessed.

/// A command line, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// Every simple command it would run, each as argv, outermost first;
    /// a wrapper's inner command is a part of its own.
    pub parts: Vec<Vec<String>>,
    /// It joins several commands (operators, substitutions or `sh -c`): it
    /// needs a shell to run.
    pub compound: bool,
}

/// Programs that run the command that follows their own options.
const WRAPPERS: &[&str] =
    &["env", "nice", "timeout", "nohup", "xargs", "sudo", "doas", "command", "exec", "time", "stdbuf", "ionice", "setsid", "chrt", "taskset"];

/// Shells whose `-c` argument is a command line of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"];

/// The deepest nesting of `sh -c` and substitutions followed.
const MAX_DEPTH: usize = 4;

/// Splits `line` into the simple commands it runs.
pub fn parse_line(line: &str) -> Result<Parsed, String> {
    let mut out = Parsed { parts: Vec::new(), compound: false };
    parse_into(line, 0, &mut out)?;
    if out.parts.is_empty() {
        return Err("the command is empty".into());
    }
    Ok(out)
}

/// The parts of an argv given as a list (no shell parses it, but a wrapper
/// or `sh -c` inside still counts).
pub fn parse_argv(argv: &[String]) -> Result<Parsed, String> {
    let mut out = Parsed { parts: Vec::new(), compound: false };
    simple(argv.to_vec(), 0, &mut out)?;
    Ok(out)
}

fn parse_into(line: &str, depth: usize, out: &mut Parsed) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("the command nests shells or substitutions too deeply to check".into());
    }
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_command = |words: &mut Vec<String>, out: &mut Parsed| -> Result<(), String> {
        if words.is_empty() {
            return Ok(());
        }
        simple(std::mem::take(words), depth, out)
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                            Some('\n') => {}
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some('$') => {
                            if chars.peek() == Some(&'(') {
                                chars.next();
                                let inner = balanced(&mut chars)?;
                                out.compound = true;
                                parse_into(&inner, depth + 1, out)?;
                                word.push_str("$(…)");
                            } else {
                                return Err("the command expands a variable; its value cannot be checked".into());
                            }
                        }
                        Some('`') => {
                            let inner = backticks(&mut chars)?;
                            out.compound = true;
                            parse_into(&inner, depth + 1, out)?;
                            word.push_str("`…`");
                        }
                        Some(ch) => word.push(ch),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(ch) => {
                    in_word = true;
                    word.push(ch);
                }
                None => return Err("the command ends with a backslash".into()),
            },
            '$' => {
                if chars.peek() == Some(&'(') {
                    chars.next();
                    if chars.peek() == Some(&'(') {
                        return Err("arithmetic expansion cannot be checked".into());
                    }
                    let inner = balanced(&mut chars)?;
                    out.compound = true;
                    parse_into(&inner, depth + 1, out)?;
                    in_word = true;
                    word.push_str("$(…)");
                } else {
                    return Err("the command expands a variable; its value cannot be checked".into());
                }
            }
            '`' => {
                let inner = backticks(&mut chars)?;
                out.compound = true;
                parse_into(&inner, depth + 1, out)?;
                in_word = true;
                word.push_str("`…`");
            }
            ';' | '&' | '|' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                // `&&`, `||`, `|&`, `;;` are one operator.
                if matches!(chars.peek(), Some('&' | '|' | ';')) {
                    chars.next();
                }
                end_command(&mut words, out)?;
                out.compound = true;
            }
            '<' | '>' => return Err("the command redirects input or output; use the file tools to read or write files".into()),
            '(' | ')' | '{' | '}' if !in_word => return Err("the command uses a subshell or group; run its commands one by one".into()),
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '*' | '?' | '[' | '~' if !in_word || c != '~' => {
                // A glob or tilde is expanded by a shell only: a word holding
                // one cannot be checked as written.
                return Err("the command uses a glob or `~`, whose expansion cannot be checked; name the files".into());
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    end_command(&mut words, out)
}

/// Reads up to the `)` closing a `$(`, keeping nested quotes and parentheses.
fn balanced(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    let mut depth = 1usize;
    let mut text = String::new();
    let mut quote: Option<char> = None;
    for c in chars.by_ref() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(text);
                }
            }
            _ => {}
        }
        text.push(c);
    }
    Err("a command substitution is not closed".into())
}

fn backticks(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    let mut text = String::new();
    for c in chars.by_ref() {
        if c == '`' {
            return Ok(text);
        }
        text.push(c);
    }
    Err("a backtick substitution is not closed".into())
}

/// The base name of a program (`/usr/bin/rm` → `rm`).
pub fn program_name(arg0: &str) -> &str {
    arg0.rsplit('/').next().unwrap_or(arg0)
}

/// One simple command: its argv is a part; a wrapper's inner command and a
/// shell's `-c` line are parts too.
fn simple(argv: Vec<String>, depth: usize, out: &mut Parsed) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("the command nests wrappers too deeply to check".into());
    }
    let Some(first) = argv.first() else { return Ok(()) };
    if first.contains('=') && !first.starts_with('=') && !first.starts_with('/') {
        return Err("the command sets environment variables; they cannot be checked".into());
    }
    let name = program_name(first).to_string();
    out.parts.push(argv.clone());
    if SHELLS.contains(&name.as_str()) {
        let rest = argv.get(1..).unwrap_or_default();
        if let Some(i) = rest.iter().position(|a| a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))) {
            let Some(line) = rest.get(i + 1) else { return Err("`-c` without a command".into()) };
            out.compound = true;
            return parse_into(line, depth + 1, out);
        }
        if rest.iter().any(|a| !a.starts_with('-')) {
            // `sh script.sh`: a script's commands cannot be checked.
            return Err(format!("`{name}` runs a script whose commands cannot be checked"));
        }
        return Ok(());
    }
    if WRAPPERS.contains(&name.as_str()) {
        let inner = unwrap(&name, argv.get(1..).unwrap_or_default())?;
        if !inner.is_empty() {
            return simple(inner, depth + 1, out);
        }
    }
    Ok(())
}

/// The command a wrapper runs, after the wrapper's own options.
fn unwrap(name: &str, rest: &[String]) -> Result<Vec<String>, String> {
    // Options of each wrapper that take a value as the next word.
    let takes_value: &[&str] = match name {
        "env" => &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "-k", "--signal", "--kill-after"],
        "xargs" => &["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars"],
        "sudo" | "doas" => &["-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"],
        "stdbuf" => &["-i", "-o", "-e"],
        "ionice" => &["-c", "-n", "-p"],
        "chrt" | "taskset" => &[],
        _ => &[],
    };
    if name == "env" && rest.iter().any(|a| a == "-S" || a.starts_with("--split-string")) {
        return Err("`env -S` splits a string into a command; it cannot be checked".into());
    }
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if arg.starts_with('-') && arg.len() > 1 {
            i += if takes_value.contains(&arg.as_str()) { 2 } else { 1 };
            continue;
        }
        if name == "env" && arg.contains('=') {
            return Err("`env` sets environment variables; they cannot be checked".into());
        }
        break;
    }
    let mut inner: Vec<String> = rest.get(i..).unwrap_or_default().to_vec();
    // `timeout DURATION cmd`, `chrt PRIO cmd`, `taskset MASK cmd`: one positional before the command.
    if matches!(name, "timeout" | "chrt" | "taskset") && !inner.is_empty() {
        inner.remove(0);
    }
    Ok(inner)
}

/// An argv as a rule sees it: the positional words in order and the set of flags.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shape {
    /// The program and the other words that are not flags, in order.
    pub words: Vec<String>,
    /// Every flag, short clusters split (`-rf` → `-r`, `-f`).
    pub flags: std::collections::BTreeSet<String>,
}

/// The shape of `argv`: after `--` every word is positional.
pub fn shape(argv: &[String]) -> Shape {
    let mut s = Shape::default();
    let mut flags_end = false;
    for (i, arg) in argv.iter().enumerate() {
        if i == 0 || flags_end || !arg.starts_with('-') || arg == "-" {
            s.words.push(arg.clone());
        } else if arg == "--" {
            flags_end = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            s.flags.insert(format!("--{}", long.split('=').next().unwrap_or(long)));
        } else if arg.len() > 2 && arg.chars().skip(1).all(|c| c.is_ascii_alphabetic()) {
            for c in arg.chars().skip(1) {
                s.flags.insert(format!("-{c}"));
            }
        } else {
            s.flags.insert(arg.clone());
        }
    }
    s
}

/// Whether an allow rule (`rule` tokens) covers `argv`: the program is the
/// same word, the rule's words are the argv's first words, token for token,
/// and every flag of the rule is present.
pub fn allow_matches(rule: &[String], argv: &[String]) -> bool {
    let (r, a) = (shape(rule), shape(argv));
    r.words.len() <= a.words.len() && r.words.iter().zip(&a.words).all(|(x, y)| x == y) && r.flags.is_subset(&a.flags)
}

/// Whether a deny rule covers `argv`: the program has the same base name,
/// the rule's other words appear in the argv in order (not only first: an
/// option's value may sit between them), and every flag of the rule is present.
pub fn deny_matches(rule: &[String], argv: &[String]) -> bool {
    let (r, a) = (shape(rule), shape(argv));
    let (Some(rp), Some(ap)) = (r.words.first(), a.words.first()) else { return false };
    if program_name(rp) != program_name(ap) {
        return false;
    }
    let mut rest = a.words.iter().skip(1);
    r.words.iter().skip(1).all(|w| rest.any(|x| x == w)) && r.flags.is_subset(&a.flags)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn compound_commands_are_split_into_every_part() {
        let p = parse_line("git status && rm -rf /tmp/x").unwrap();
        assert!(p.compound);
        assert_eq!(p.parts, vec![v("git status"), v("rm -rf /tmp/x")]);
        let p = parse_line("ls | xargs rm").unwrap();
        assert_eq!(p.parts, vec![v("ls"), v("xargs rm"), v("rm")]);
        let p = parse_line("echo $(rm -rf x)").unwrap();
        assert!(p.parts.contains(&v("rm -rf x")));
        let p = parse_line("echo `rm x`").unwrap();
        assert!(p.parts.contains(&v("rm x")));
        let p = parse_line("sh -c 'git status; rm -r -f x'").unwrap();
        assert!(p.parts.contains(&v("rm -r -f x")));
        let p = parse_line("timeout 5 nice -n 3 env rm x").unwrap();
        assert!(p.parts.contains(&v("rm x")));
        assert!(parse_line("git status; ").unwrap().compound);
    }

    #[test]
    fn what_cannot_be_parsed_with_certainty_is_refused() {
        for line in [
            "echo $HOME", "rm 'x", "cat < /etc/passwd", "echo x > f", "FOO=1 git status", "env LD_PRELOAD=x git", "(rm x)", "rm *",
            "echo \"$(rm x\"", "bash script.sh", "echo ~",
        ] {
            assert!(parse_line(line).is_err(), "{line}");
        }
        assert_eq!(parse_line("git status").unwrap(), Parsed { parts: vec![v("git status")], compound: false });
    }

    #[test]
    fn rules_match_tokens_and_flag_sets() {
        assert!(allow_matches(&v("git status"), &v("git status -s")));
        assert!(!allow_matches(&v("git pu"), &v("git push")));
        assert!(!allow_matches(&v("git status"), &v("/usr/bin/git status")));
        for argv in ["rm -rf x", "rm -fr x", "rm -r -f x", "/bin/rm -f -r x", "rm --recursive -rf x"] {
            assert!(deny_matches(&v("rm -rf"), &v(argv)), "{argv}");
        }
        assert!(!deny_matches(&v("rm -rf"), &v("rm -r x")));
        assert!(deny_matches(&v("git push"), &v("git -C . push origin")));
        assert!(!deny_matches(&v("git push"), &v("git pull")));
    }
}
