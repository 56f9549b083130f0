//! Hints in error messages: the name a typo most likely meant, and the
//! plain-words reading of the deserializer's type errors.

/// The candidate `name` most likely meant: within two edits (fewer for
/// short names), else the only candidate it begins.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    let limit = if name.chars().count() <= 3 { 1 } else { 2 };
    let near = (candidates.iter())
        .map(|&c| (strsim::levenshtein(name, c), c))
        .filter(|&(d, _)| d > 0 && d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c);
    let mut begun =
        (candidates.iter()).filter(|c| name.len() >= 3 && c.starts_with(name) && **c != name);
    near.or(match (begun.next(), begun.next()) {
        (Some(&c), None) => Some(c),
        _ => None,
    })
}

/// ` (did you mean `X`?)` for [`did_you_mean`], or nothing.
pub fn suggestion<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(name, candidates).map_or(String::new(), |c| format!(" (did you mean `{c}`?)"))
}

/// The deserializer's message `msg` with a hint where one is easy:
/// - an unknown field or variant: the expected name it most likely meant;
/// - an integer where a string is expected: durations and sizes take a
///   unit (`30s`, `4KiB`), in quotes;
/// - an integer out of a whole-number type's range: the range in numbers
///   (`expected u32` says little to a reader who is not a Rust programmer).
pub fn serde_message(msg: &str) -> String {
    for what in ["unknown field `", "unknown variant `"] {
        if let Some(rest) = msg.strip_prefix(what) {
            let Some((name, tail)) = rest.split_once('`') else {
                break;
            };
            let expected: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
            return format!("{msg}{}", suggestion(name, expected));
        }
    }
    if msg.starts_with("invalid type: integer") && msg.ends_with("expected a string") {
        return format!(
            "{msg}: a duration or a size is a string with its unit, e.g. \"30s\", \"850ns\", \"4KiB\""
        );
    }
    if msg.starts_with("invalid type: floating point") && msg.ends_with("expected a string") {
        return format!("{msg}: a duration is a string with its unit, e.g. \"1.5ms\"");
    }
    for (ty, range) in [
        ("u8", "0 to 255"),
        ("u16", "0 to 65535"),
        ("u32", "0 to 4294967295"),
        (
            "u64",
            "0 to 9223372036854775807 (what a TOML integer holds)",
        ),
        ("i64", "-9223372036854775808 to 9223372036854775807"),
    ] {
        if let Some(head) = msg.strip_suffix(&format!("expected {ty}")) {
            return format!("{head}expected a whole number from {range}");
        }
    }
    msg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_gets_the_name_it_most_likely_meant() {
        let names = ["name", "duration", "cpus", "program", "count"];
        assert_eq!(did_you_mean("durration", names), Some("duration"));
        assert_eq!(did_you_mean("progam", names), Some("program"));
        assert_eq!(did_you_mean("cpu", names), Some("cpus"));
        assert_eq!(did_you_mean("dur", names), Some("duration"));
        assert_eq!(did_you_mean("zzzzzz", names), None);
        assert_eq!(did_you_mean("duration", names), None, "not a typo");
    }

    #[test]
    fn a_typo_of_a_machine_profile_finds_it() {
        let names = ["ideal", "server-2s", "server-1s", "kvm-guest"];
        assert_eq!(did_you_mean("server-2", names), Some("server-2s"));
        assert_eq!(did_you_mean("server_1s", names), Some("server-1s"));
        assert_eq!(did_you_mean("kvm-gues", names), Some("kvm-guest"));
        assert_eq!(did_you_mean("laptop", names), None);
        assert_eq!(did_you_mean("kvm", names), Some("kvm-guest"));
        assert_eq!(did_you_mean("server", names), None, "two profiles begin so");
    }

    #[test]
    fn serde_messages_get_their_hint() {
        assert_eq!(
            serde_message("unknown field `progam`, expected one of `count`, `program`, `class`"),
            "unknown field `progam`, expected one of `count`, `program`, `class` (did you mean `program`?)"
        );
        assert_eq!(
            serde_message("unknown field `zzz`, expected `count`"),
            "unknown field `zzz`, expected `count`"
        );
        assert!(serde_message("invalid type: integer `30`, expected a string").contains("\"30s\""));
        assert_eq!(
            serde_message("invalid value: integer `-8`, expected u32"),
            "invalid value: integer `-8`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(serde_message("something else"), "something else");
    }
}
