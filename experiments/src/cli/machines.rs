//! `convoy machines`: the built-in machine profiles, listed, or one shown
//! with every value, the range its sources allow and the source, wrapped
//! to 80 columns.

use super::flags::MachinesArgs;
use crate::scenario::compile::{unknown_profile, DEFAULT_PROFILE};
use models::machine::{profiles, Cited, Profile};
use sim::Dur;
use std::fmt::Write;

/// Width the text is wrapped to.
const WIDTH: usize = 80;
/// Where a wrapped source line starts.
const INDENT: &str = "    ";

/// Checks the profile name: the text to print.
pub(super) fn plan(a: MachinesArgs) -> anyhow::Result<String> {
    match a.name {
        None => Ok(list()),
        Some(n) => match profiles::by_name(&n) {
            Some(p) => Ok(show(p)),
            None => anyhow::bail!("convoy machines {n}: {}", unknown_profile(&n)),
        },
    }
}

pub(super) fn execute(text: String) -> anyhow::Result<()> {
    print!("{text}");
    Ok(())
}

/// The CPUs of a profile as the list shows them.
fn cpus(p: &Profile) -> String {
    let t = p.topology.value;
    if p.name == crate::scenario::compile::IDEAL {
        "any".into()
    } else {
        format!(
            "{} ({} x {} x {})",
            t.cpus(),
            t.sockets,
            t.cores_per_socket,
            t.threads_per_core
        )
    }
}

/// Every profile: name, CPUs (sockets x cores x threads), summary.
pub fn list() -> String {
    let mut s = String::new();
    let rows: Vec<(&str, String)> = (profiles::PROFILES.iter())
        .map(|p| (p.name, cpus(p)))
        .collect();
    let nw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(7);
    let cw = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(4);
    let _ = writeln!(s, "{:<nw$}  {:<cw$}  summary", "profile", "CPUs");
    for (p, (name, c)) in profiles::PROFILES.iter().zip(&rows) {
        let lead = format!("{name:<nw$}  {c:<cw$}  ");
        let indent = " ".repeat(lead.len());
        for (i, line) in wrap(p.summary, WIDTH - lead.len()).iter().enumerate() {
            let _ = writeln!(s, "{}{line}", if i == 0 { &lead } else { &indent });
        }
    }
    let note = format!(
        "A scenario without [machine] runs on `{DEFAULT_PROFILE}`. `convoy machines NAME` \
         shows a profile's values and their sources; `--machine NAME` runs on one \
         (docs/scenario-language.md, \"The machine\")."
    );
    s.push('\n');
    for line in wrap(&note, WIDTH) {
        let _ = writeln!(s, "{line}");
    }
    s
}

/// One profile: every value under the name a `[machine]` table sets it
/// by, with its range and source.
pub fn show(p: &Profile) -> String {
    let mut rows: Vec<(String, String, String, &str)> = Vec::new();
    let t = p.topology;
    let exact = t.low == t.value && t.high == t.value;
    let shape = |name: &str, v: u32, src: &'static str| {
        let r = if exact { "exact" } else { "-" };
        (name.to_string(), v.to_string(), r.to_string(), src)
    };
    rows.push(shape("sockets", t.value.sockets, t.source));
    rows.push(shape(
        "cores_per_socket",
        t.value.cores_per_socket,
        "as sockets",
    ));
    rows.push(shape(
        "threads_per_core",
        t.value.threads_per_core,
        "as sockets",
    ));
    rows.push((
        "hz".into(),
        p.hz.value.to_string(),
        range(&p.hz, |v| v.to_string()),
        p.hz.source,
    ));
    rows.push((
        "preemption".into(),
        p.preemption.value.as_str().into(),
        range(&p.preemption, |v| v.as_str().to_string()),
        p.preemption.source,
    ));
    let dur = |name: &str, c: &Cited<Dur>| {
        (
            name.to_string(),
            c.value.to_string(),
            range(c, |v| v.to_string()),
            c.source,
        )
    };
    rows.push(dur("base_slice", &p.base_slice));
    rows.push(dur("switch_cost", &p.switch_cost));
    rows.push(dur("ipi", &p.ipi));
    rows.push(dur("wake_send", &p.wake_send));
    rows.push(dur("line_local", &p.lines.local));
    rows.push(dur("line_smt", &p.lines.smt));
    rows.push(dur("line_socket", &p.lines.socket));
    rows.push(dur("line_remote", &p.lines.remote));
    rows.push(dur("tick_cost", &p.interrupts.tick));
    let r = &p.interrupts.irq_rate;
    rows.push((
        "irq_rate".into(),
        r.value.to_string(),
        range(r, |v| v.to_string()),
        r.source,
    ));
    rows.push(dur("irq_cost", &p.interrupts.irq));
    if let Some(g) = &p.guest {
        rows.push(dur("guest_ipi", &g.ipi));
        rows.push(dur("host_halt_poll", &g.host_halt_poll));
        rows.push(dur("host_wake", &g.host_wake));
        let f = &g.steal_fraction;
        rows.push((
            "steal_fraction".into(),
            f.value.to_string(),
            range(f, |v| v.to_string()),
            f.source,
        ));
        rows.push(dur("steal_episode", &g.steal_episode));
    }
    let nw = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let vw = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(5);
    let mut s = String::new();
    let title = format!("{}: {}", p.name, p.summary);
    for line in wrap(&title, WIDTH) {
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(
        s,
        "\n{:<nw$}  {:<vw$}  range (low .. high)",
        "field", "value"
    );
    for (name, value, range, source) in &rows {
        let _ = writeln!(s, "{name:<nw$}  {value:<vw$}  {range}");
        for line in wrap(source, WIDTH - INDENT.len()) {
            let _ = writeln!(s, "{INDENT}{line}");
        }
    }
    let idle = format!(
        "idle states (not set by [machine]): {}",
        p.idle_states.source
    );
    s.push('\n');
    for line in wrap(&idle, WIDTH) {
        let _ = writeln!(s, "{line}");
    }
    let _ = writeln!(
        s,
        "{INDENT}{:<6} {:>12} {:>18}  polling",
        "state", "exit_latency", "target_residency"
    );
    for st in p.idle_states.value {
        let _ = writeln!(
            s,
            "{INDENT}{:<6} {:>12} {:>18}  {}",
            st.name,
            st.exit_latency.to_string(),
            st.target_residency.to_string(),
            if st.polling { "yes" } else { "no" }
        );
    }
    let _ = writeln!(
        s,
        "\nbase_slice is before scaling: a run on N CPUs has a slice of\n\
         base_slice x (1 + ilog2(min(N, 8))), as update_sysctl() sets it."
    );
    s
}

/// `low .. high`, or `exact` when the sources allow one value.
fn range<T: Copy + PartialEq>(c: &Cited<T>, show: impl Fn(T) -> String) -> String {
    if c.low == c.high && c.low == c.value {
        "exact".into()
    } else {
        format!("{} .. {}", show(c.low), show(c.high))
    }
}

/// `text` in lines of at most `width` characters, broken at spaces (a
/// longer word stands on a line of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("averylongword x", 4), ["averylongword", "x"]);
        assert!(wrap("", 10).is_empty());
    }
}
