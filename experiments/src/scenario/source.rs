//! Scenario text and locations.

use std::ops::Range;

/// The text of a scenario and where it came from.
///
/// Byte offsets below `text.len()` are positions in the file. `--set`
/// arguments get synthetic offsets past the end of the text (one per
/// argument, then one for `--machine`), so a value that came from the
/// command line is reported as `--set key=value` or `--machine NAME`
/// rather than as a line of the file.
#[derive(Clone, Debug)]
pub struct Source {
    /// The path as the user gave it, or `builtin:NAME`.
    pub name: String,
    pub text: String,
    /// Directory that relative paths in the file (empirical data) resolve
    /// against; `None` for built-ins (they ship no data files).
    pub dir: Option<std::path::PathBuf>,
    pub sets: Vec<String>,
    /// The `--set`s a command made of its own flags, by index into
    /// `sets`, each with the flag as typed (`--duration 10s` is the set
    /// `scenario.duration=10s`): an error in its value names the flag,
    /// not a `--set` the user never typed.
    pub flags: FlagSets,
    /// `--machine NAME`: the profile that replaces the scenario's
    /// `[machine]` table (its variants' too), before the `--set`s apply.
    pub machine: Option<String>,
    /// Included files (`scenario.include`), in order.
    pub includes: Vec<Included>,
}

/// An included file's name and text. Its byte offsets live in a region of
/// their own, [`Source::include_base`] onwards, so errors in it name it.
#[derive(Clone, Debug)]
pub struct Included {
    pub name: String,
    pub text: String,
}

/// The `--set`s a command made of its own flags: each one's index among
/// the sets, and the flag as typed (`--duration 10s`).
pub type FlagSets = Vec<(usize, String)>;

/// Span offsets at and above this belong to included files.
const INCLUDE_REGION: usize = 1 << 40;

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source {
            name: name.into(),
            text: text.into(),
            dir: None,
            sets: Vec::new(),
            flags: Vec::new(),
            machine: None,
            includes: Vec::new(),
        }
    }

    /// The synthetic span of `--machine NAME`, after the `--set`s'.
    pub fn machine_span(&self) -> Range<usize> {
        self.set_span(self.sets.len())
    }

    /// The synthetic span of the `i`-th `--set` argument.
    pub fn set_span(&self, i: usize) -> Range<usize> {
        let o = self.text.len() + 1 + i;
        o..o + 1
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// Whether a span is a `--set` argument's or `--machine`'s: a value
    /// the command line gave, not one a file wrote.
    pub fn from_command_line(&self, span: &Range<usize>) -> bool {
        span.start > self.text.len() && span.start < INCLUDE_REGION
    }

    /// Where the offsets of the `i`-th included file start.
    pub fn include_base(i: usize) -> usize {
        INCLUDE_REGION * (i + 1)
    }

    /// `file:line` for a span in the file, `--set arg` for a `--set` span,
    /// `--machine NAME` for that flag's.
    pub fn locate(&self, span: Option<Range<usize>>) -> String {
        match span {
            Some(s) if s.start >= INCLUDE_REGION => {
                let i = s.start / INCLUDE_REGION - 1;
                match self.includes.get(i) {
                    Some(inc) => {
                        let off = (s.start % INCLUDE_REGION).min(inc.text.len());
                        let line = inc.text.as_bytes()[..off]
                            .iter()
                            .filter(|&&b| b == b'\n')
                            .count()
                            + 1;
                        format!("{}:{line}", inc.name)
                    }
                    None => self.name.clone(),
                }
            }
            Some(s) if s.start > self.text.len() => {
                let i = s.start - self.text.len() - 1;
                match (self.sets.get(i), &self.machine) {
                    (Some(arg), _) => match self.flags.iter().find(|(k, _)| *k == i) {
                        Some((_, flag)) => flag.clone(),
                        None => format!("--set {arg}"),
                    },
                    (None, Some(m)) if i == self.sets.len() => format!("--machine {m}"),
                    _ => self.name.clone(),
                }
            }
            Some(s) => format!("{}:{}", self.name, self.line_of(s.start)),
            None => self.name.clone(),
        }
    }
}

/// Largest data file read (a dump or a samples table, a measurement).
pub const MAX_DATA_FILE: u64 = 256 << 20;

/// Largest scenario, library, sweep or report file read (TOML text); a
/// larger one, or `/dev/zero`, is refused instead of filling memory.
pub const MAX_TEXT_FILE: u64 = 16 << 20;

/// Reads a text file of at most `max` bytes. Only a regular file is
/// read: a FIFO would block until something writes to it, a device or
/// `/proc`'s files can be endless. The file is opened without blocking,
/// its type and size are checked on the open file (not a second lookup
/// of the path), and no more than `max` bytes are read even when the size
/// it reports is wrong (files of `/proc` report 0).
pub fn read_text(path: &std::path::Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    let file = open_regular(path, max)?;
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(text)
}

/// [`read_text`]'s bytes: a regular file of at most `max` bytes.
pub fn read_bytes(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path, max)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(bytes)
}

fn too_large(max: u64) -> std::io::Error {
    std::io::Error::other(format!("larger than {} MiB", max >> 20))
}

/// Opens `path` for reading if it is a regular file of at most `max`
/// bytes (as it says), without waiting for a writer if it is a FIFO.
fn open_regular(path: &std::path::Path, max: u64) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        let kind = file_kind(&meta.file_type());
        return Err(std::io::Error::other(format!(
            "not a regular file ({kind}); only regular files are read"
        )));
    }
    if meta.len() > max {
        return Err(too_large(max));
    }
    Ok(file)
}

/// What a file that is not a regular file is, in a word.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_set_arguments() {
        let mut s = Source::new("f.toml", "a = 1\nb = 2\n\nc = 3\n");
        s.sets.push("b=7".into());
        assert_eq!(s.locate(Some(0..1)), "f.toml:1");
        assert_eq!(s.locate(Some(6..7)), "f.toml:2");
        assert_eq!(s.locate(Some(13..14)), "f.toml:4");
        assert_eq!(s.locate(Some(s.set_span(0))), "--set b=7");
        assert_eq!(s.locate(None), "f.toml");
        s.machine = Some("kvm-guest".into());
        assert_eq!(s.locate(Some(s.machine_span())), "--machine kvm-guest");
        assert_eq!(s.locate(Some(s.set_span(0))), "--set b=7");
        // A set made of a command's flag is told as that flag.
        s.sets.push("scenario.duration=0s".into());
        s.flags.push((1, "--duration 0s".into()));
        assert_eq!(s.locate(Some(s.set_span(1))), "--duration 0s");
        assert_eq!(s.locate(Some(s.set_span(0))), "--set b=7");
    }
}
