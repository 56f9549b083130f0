//! The libraries shipped in the binary that a scenario can `include` by
//! name (`include = ["kernfs"]`): operations, locks and distributions
//! shared by several scenarios.

/// Each library's name and text.
pub const LIBRARIES: &[(&str, &str)] = &[
    ("kernfs", include_str!("../../scenarios/lib/kernfs.toml")),
    ("cgroup", include_str!("../../scenarios/lib/cgroup.toml")),
    (
        "pidlist-flush",
        include_str!("../../scenarios/lib/pidlist-flush.toml"),
    ),
];

/// The text of the library called `name`.
pub fn find(name: &str) -> Option<&'static str> {
    LIBRARIES.iter().find(|l| l.0 == name).map(|l| l.1)
}

/// The libraries' names, for messages: `kernfs, pidlist-flush`.
pub fn names() -> String {
    LIBRARIES.iter().map(|l| l.0).collect::<Vec<_>>().join(", ")
}
