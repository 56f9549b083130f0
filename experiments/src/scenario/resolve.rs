//! From scenario text to the typed document of one variant.
//!
//! The file is parsed into TOML's spanned tree. A variant is an overlay: the
//! table `[variants.NAME]` is merged into the root (tables merge key by key,
//! any other value replaces), then each `--set key=value` replaces one
//! scalar. `--machine NAME` comes between: it replaces the `[machine]`
//! table, overrides and all, by `profile = NAME`. Spans survive every step
//! (a `--set` value gets the synthetic span of its argument), so errors
//! found while deserializing or compiling still point at the right line or
//! argument.

use super::doc::Doc;
use super::error::ScenarioError;
use super::library;
use super::source::Source;
use serde::Deserialize;
use std::borrow::Cow;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// A scenario file: its text, `--set` arguments and variant list.
#[derive(Clone, Debug)]
pub struct ScenarioFile {
    pub source: Source,
    /// Variant names in run order (the base first unless the file says
    /// otherwise).
    pub variants: Vec<String>,
    pub base: String,
}

/// One variant, resolved and typed.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub variant: String,
    pub doc: Doc,
    /// The resolved scenario as TOML text (for the manifest).
    pub resolved_toml: String,
    /// BLAKE3 of `resolved_toml`, hex.
    pub hash: String,
}

fn parse_root(src: &Source) -> Result<Spanned<DeTable<'_>>, ScenarioError> {
    DeTable::parse(&src.text).map_err(|e| {
        ScenarioError::new(
            src.locate(e.span()),
            "",
            format!("not valid TOML: {}", e.message()),
        )
    })
}

fn get<'a, 'i>(t: &'a DeTable<'i>, key: &str) -> Option<&'a Spanned<DeValue<'i>>> {
    t.get(key)
}

impl ScenarioFile {
    /// Reads the variant list and checks `--set` syntax; the file is parsed
    /// again per variant.
    pub fn new(mut source: Source) -> Result<Self, ScenarioError> {
        load_includes(&mut source)?;
        for (i, arg) in source.sets.iter().enumerate() {
            if !arg.contains('=') {
                return Err(ScenarioError::new(
                    source.locate(Some(source.set_span(i))),
                    "",
                    "expected key=value, e.g. `--set tasks.readers.count=32`",
                ));
            }
        }
        let root = parse_root(&source)?;
        let root = root.get_ref();
        let header = match get(root, "scenario") {
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => t,
                _ => {
                    return Err(ScenarioError::new(
                        source.locate(Some(v.span())),
                        "scenario",
                        "expected a table `[scenario]`",
                    ))
                }
            },
            None => {
                return Err(ScenarioError::new(
                    source.name.clone(),
                    "scenario",
                    "missing table `[scenario]` (with at least `name` and `duration`)",
                ))
            }
        };
        let base = match get(header, "base").map(|v| (v.span(), v.get_ref())) {
            Some((_, DeValue::String(s))) => s.to_string(),
            Some((span, _)) => {
                return Err(ScenarioError::new(
                    source.locate(Some(span)),
                    "scenario.base",
                    "expected a string",
                ))
            }
            None => "base".to_string(),
        };
        let declared: Vec<(String, std::ops::Range<usize>)> = match get(root, "variants") {
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => t
                    .iter()
                    .map(|(k, v)| (k.get_ref().to_string(), v.span()))
                    .collect(),
                _ => {
                    return Err(ScenarioError::new(
                        source.locate(Some(v.span())),
                        "variants",
                        "expected tables `[variants.NAME]`",
                    ))
                }
            },
            None => Vec::new(),
        };
        // Names become directory and file names (out/NAME/,
        // lock_stat-VARIANT.txt): one path component each.
        if let Some(v) = get(header, "name") {
            if let DeValue::String(n) = v.get_ref() {
                check_file_name(&source, v.span(), "scenario.name", n)?;
            }
        }
        if let Some(v) = get(header, "base") {
            check_file_name(&source, v.span(), "scenario.base", &base)?;
        }
        for (n, span) in &declared {
            check_file_name(&source, span.clone(), &format!("variants.{n}"), n)?;
        }
        if let Some((_, span)) = declared.iter().find(|(n, _)| *n == base) {
            return Err(ScenarioError::new(
                source.locate(Some(span.clone())),
                format!("variants.{base}"),
                format!("`{base}` is the base scenario's own name; give the overlay another name"),
            ));
        }
        let variants = match get(header, "variants") {
            Some(v) => {
                let names: Vec<String> = match v.get_ref() {
                    DeValue::Array(a) => a
                        .iter()
                        .map(|x| match x.get_ref() {
                            DeValue::String(s) => Ok(s.to_string()),
                            _ => Err(()),
                        })
                        .collect::<Result<_, _>>()
                        .map_err(|_| {
                            ScenarioError::new(
                                source.locate(Some(v.span())),
                                "scenario.variants",
                                "expected a list of variant names",
                            )
                        })?,
                    _ => {
                        return Err(ScenarioError::new(
                            source.locate(Some(v.span())),
                            "scenario.variants",
                            "expected a list of variant names",
                        ))
                    }
                };
                if names.is_empty() {
                    return Err(ScenarioError::new(
                        source.locate(Some(v.span())),
                        "scenario.variants",
                        format!("an empty list runs nothing; name at least the base (`{base}`), or leave `variants` out to run all"),
                    ));
                }
                for (i, n) in names.iter().enumerate() {
                    if names[..i].contains(n) {
                        return Err(ScenarioError::new(
                            source.locate(Some(v.span())),
                            "scenario.variants",
                            format!("`{n}` is listed twice; each variant runs once"),
                        ));
                    }
                    if *n != base && !declared.iter().any(|(d, _)| d == n) {
                        return Err(ScenarioError::new(
                            source.locate(Some(v.span())),
                            "scenario.variants",
                            format!(
                                "`{n}` is neither the base (`{base}`) nor a `[variants.{n}]` table"
                            ),
                        ));
                    }
                }
                names
            }
            None => std::iter::once(base.clone())
                .chain(declared.iter().map(|(n, _)| n.clone()))
                .collect(),
        };
        Ok(ScenarioFile {
            source,
            variants,
            base,
        })
    }

    /// Resolves and types one variant.
    pub fn load(&self, variant: &str) -> Result<Loaded, ScenarioError> {
        load_variant(self, variant)
    }
}

/// Moves every span of an included file's tree into its offset region.
fn shift<'i>(v: Spanned<DeValue<'i>>, off: usize) -> Spanned<DeValue<'i>> {
    let span = v.span();
    let value = match v.into_inner() {
        DeValue::Table(t) => DeValue::Table(shift_table(t, off)),
        DeValue::Array(mut a) => {
            for e in a.iter_mut() {
                let inner = std::mem::replace(e, Spanned::new(0..0, DeValue::Boolean(false)));
                *e = shift(inner, off);
            }
            DeValue::Array(a)
        }
        other => other,
    };
    Spanned::new(span.start + off..span.end + off, value)
}

fn shift_table<'i>(t: DeTable<'i>, off: usize) -> DeTable<'i> {
    let mut out = DeTable::default();
    for (k, v) in t {
        let ks = k.span();
        out.insert(
            Spanned::new(ks.start + off..ks.end + off, k.into_inner()),
            shift(v, off),
        );
    }
    out
}

/// Reads the files a scenario includes (`scenario.include`): a built-in
/// library by name, or a path relative to the scenario.
fn load_includes(src: &mut Source) -> Result<(), ScenarioError> {
    let root = parse_root(src)?;
    let Some(header) = get(root.get_ref(), "scenario") else {
        return Ok(());
    };
    let DeValue::Table(header) = header.get_ref() else {
        return Ok(());
    };
    let Some(list) = get(header, "include") else {
        return Ok(());
    };
    let bad = |span| {
        ScenarioError::new(
            src.locate(Some(span)),
            "scenario.include",
            format!(
                "expected a list of built-in libraries ({}) or file paths",
                library::names()
            ),
        )
    };
    let DeValue::Array(items) = list.get_ref() else {
        return Err(bad(list.span()));
    };
    let mut includes = Vec::new();
    for item in items.iter() {
        let DeValue::String(name) = item.get_ref() else {
            return Err(bad(item.span()));
        };
        let name = name.to_string();
        let text = match library::find(&name) {
            Some(text) => text.to_string(),
            None => {
                let path = match &src.dir {
                    Some(d) => d.join(&name),
                    None => std::path::PathBuf::from(&name),
                };
                super::source::read_text(&path, super::source::MAX_TEXT_FILE).map_err(|e| {
                    ScenarioError::new(
                        src.locate(Some(item.span())),
                        "scenario.include",
                        format!(
                            "cannot read {}: {e} (built-in libraries: {})",
                            path.display(),
                            library::names()
                        ),
                    )
                })?
            }
        };
        let shown = if library::find(&name).is_some() {
            format!("builtin:{name}")
        } else {
            name
        };
        includes.push(super::source::Included { name: shown, text });
    }
    src.includes = includes;
    Ok(())
}

/// Merges `overlay` into `base`: tables key by key, anything else replaces.
fn merge<'i>(base: &mut DeTable<'i>, overlay: DeTable<'i>) {
    for (k, v) in overlay {
        let existing = base.get_mut(k.get_ref().as_ref());
        match (existing, v) {
            (Some(old), new)
                if matches!(old.get_ref(), DeValue::Table(_))
                    && matches!(new.get_ref(), DeValue::Table(_)) =>
            {
                if let (DeValue::Table(o), DeValue::Table(n)) = (old.get_mut(), new.into_inner()) {
                    merge(o, n);
                }
            }
            (Some(old), new) => *old = new,
            (None, new) => {
                base.insert(k, new);
            }
        }
    }
}

/// Applies one `--set key=value` to the tree.
fn apply_set<'i>(root: &mut DeTable<'i>, src: &'i Source, i: usize) -> Result<(), ScenarioError> {
    let arg = &src.sets[i];
    let span = src.set_span(i);
    let err = |msg: String| ScenarioError::new(src.locate(Some(span.clone())), "", msg);
    let (key, text) = arg.split_once('=').expect("checked in ScenarioFile::new");
    let key = key.trim();
    let path: Vec<&str> = key.split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(err(format!(
            "`{key}` is not a dotted key like `tasks.readers.count`"
        )));
    }
    let (last, parents) = path.split_last().expect("split yields one part");
    // `[machine]` is optional and its fields are known: `--set
    // machine.FIELD=V` works without it, as on the default profile.
    if parents.first() == Some(&"machine") && !root.contains_key("machine") {
        root.insert(
            Spanned::new(span.clone(), Cow::Borrowed("machine")),
            Spanned::new(span.clone(), DeValue::Table(DeTable::default())),
        );
    }
    let mut table = root;
    for (depth, p) in parents.iter().enumerate() {
        let here = path[..=depth].join(".");
        table = match table.get_mut(*p).map(|v| v.get_mut()) {
            Some(DeValue::Table(t)) => t,
            Some(_) => return Err(err(format!("`{here}` is not a table"))),
            None => return Err(err(format!("no table `{here}` in the scenario"))),
        };
    }
    let parse_as = |existing: Option<&DeValue<'_>>| -> Result<DeValue<'i>, String> {
        let text = text.trim();
        let parsed = DeValue::parse(text).ok().map(|v| v.into_inner());
        match existing {
            Some(DeValue::String(_)) => Ok(DeValue::String(Cow::Borrowed(
                text.trim_matches(|c| c == '"' || c == '\''),
            ))),
            Some(DeValue::Integer(_)) => match parsed {
                Some(v @ DeValue::Integer(_)) => Ok(v),
                // `scenario.cpus` is a count or "unlimited"; the word is
                // checked where the field is read, as in the file.
                _ if text.trim_matches(|c| c == '"' || c == '\'') == "unlimited" => {
                    Ok(DeValue::String(Cow::Borrowed("unlimited")))
                }
                _ => Err(format!("`{key}` is an integer; `{text}` is not")),
            },
            Some(DeValue::Float(_)) => match parsed {
                Some(v @ (DeValue::Float(_) | DeValue::Integer(_))) => Ok(v),
                _ => Err(format!("`{key}` is a number; `{text}` is not")),
            },
            Some(DeValue::Boolean(_)) => match parsed {
                Some(v @ DeValue::Boolean(_)) => Ok(v),
                _ => Err(format!("`{key}` is true or false; `{text}` is not")),
            },
            Some(DeValue::Table(_)) | Some(DeValue::Array(_)) => Err(format!(
                "`{key}` is a table or list; --set replaces only single values"
            )),
            Some(DeValue::Datetime(_)) => Err(format!("`{key}` is a date; not settable")),
            None => match parsed {
                Some(v @ (DeValue::Integer(_) | DeValue::Float(_) | DeValue::Boolean(_))) => Ok(v),
                _ => Ok(DeValue::String(Cow::Borrowed(
                    text.trim_matches(|c| c == '"' || c == '\''),
                ))),
            },
        }
    };
    match table.get_mut(*last) {
        Some(v) => {
            let new = parse_as(Some(v.get_ref())).map_err(err)?;
            *v = Spanned::new(span.clone(), new);
        }
        None => {
            let new = parse_as(None).map_err(err)?;
            table.insert(
                Spanned::new(span.clone(), Cow::Borrowed(*last)),
                Spanned::new(span.clone(), new),
            );
        }
    }
    Ok(())
}

/// Resolves one variant: overlay, `--set`, deserialize.
pub fn load_variant(file: &ScenarioFile, variant: &str) -> Result<Loaded, ScenarioError> {
    let src = &file.source;
    if !file.variants.iter().any(|v| v == variant) && variant != file.base {
        return Err(ScenarioError::new(
            src.name.clone(),
            "variants",
            format!(
                "no variant `{variant}`; this scenario has: {}",
                file.variants.join(", ")
            ),
        ));
    }
    let root = parse_root(src)?;
    let root_span = root.span();
    let mut root = root.into_inner();
    let overlays = root.remove("variants");
    if !src.includes.is_empty() {
        // Libraries first, in order; the scenario's own tables over them.
        let mut acc = DeTable::default();
        for (i, inc) in src.includes.iter().enumerate() {
            let lib = DeTable::parse(&inc.text).map_err(|e| {
                let at = e
                    .span()
                    .map(|s| Source::include_base(i) + s.start..Source::include_base(i) + s.end);
                ScenarioError::new(
                    src.locate(at),
                    "",
                    format!("not valid TOML: {}", e.message()),
                )
            })?;
            let mut lib = shift_table(lib.into_inner(), Source::include_base(i));
            if lib.contains_key("variants") || lib.get("scenario").is_some() {
                lib.remove("variants");
                lib.remove("scenario");
            }
            merge(&mut acc, lib);
        }
        merge(&mut acc, root);
        root = acc;
    }
    if variant != file.base {
        let Some(DeValue::Table(mut all)) = overlays.map(|v| v.into_inner()) else {
            unreachable!("variant names come from the variants table")
        };
        match all.remove(variant).map(|v| v.into_inner()) {
            Some(DeValue::Table(t)) => merge(&mut root, t),
            _ => {
                return Err(ScenarioError::new(
                    src.name.clone(),
                    format!("variants.{variant}"),
                    "expected a table of overlays, e.g. `[variants.after.ops.NAME]`",
                ))
            }
        }
    }
    if let Some(name) = &src.machine {
        // The file's overrides describe the file's machine, not this one.
        let span = src.machine_span();
        let mut table = DeTable::default();
        table.insert(
            Spanned::new(span.clone(), Cow::Borrowed("profile")),
            Spanned::new(span.clone(), DeValue::String(Cow::Borrowed(name.as_str()))),
        );
        root.remove("machine");
        root.insert(
            Spanned::new(span.clone(), Cow::Borrowed("machine")),
            Spanned::new(span, DeValue::Table(table)),
        );
    }
    for i in 0..src.sets.len() {
        apply_set(&mut root, src, i)?;
    }
    let tree = Spanned::new(root_span, DeValue::Table(root));
    if let Some((field, span, msg)) = bad_value(&tree, "") {
        return Err(ScenarioError::new(src.locate(Some(span)), field, msg));
    }
    let value =
        toml::Value::deserialize(toml::de::ValueDeserializer::from(tree.clone())).map_err(|e| {
            let msg = super::hint::serde_message(e.message());
            ScenarioError::new(src.locate(e.span()), "", msg)
        })?;
    let resolved_toml = toml::to_string(&value).unwrap_or_default();
    let hash = blake3::hash(resolved_toml.as_bytes()).to_hex().to_string();
    let doc: Doc = serde_path_to_error::deserialize(toml::de::ValueDeserializer::from(tree))
        .map_err(|e| {
            // serde_spanned's private wrapper shows up as a path segment.
            let field = e
                .path()
                .to_string()
                .split('.')
                .filter(|s| !s.contains("__serde_spanned"))
                .collect::<Vec<_>>()
                .join(".");
            let inner = e.into_inner();
            let field = if field.is_empty() || field == "." {
                String::new()
            } else {
                field
            };
            let msg = super::hint::serde_message(inner.message());
            ScenarioError::new(src.locate(inner.span()), field, msg)
        })?;
    Ok(Loaded {
        variant: variant.to_string(),
        doc,
        resolved_toml,
        hash,
    })
}

/// The first value of the tree that a file of `convoy` may not hold, with
/// its field, span and what is wrong:
/// - an integer a TOML integer cannot hold (below -2^63, or 2^63 and
///   above): the document would take some as `u64`, but the resolved
///   scenario (the manifest's, and its hash) is TOML again;
/// - a key with a control character: keys are names, printed in messages
///   and written into files;
/// - a string with a control character other than a line break or a tab
///   (escape sequences that would reach a terminal).
pub(crate) fn bad_value(
    v: &Spanned<DeValue<'_>>,
    field: &str,
) -> Option<(String, std::ops::Range<usize>, String)> {
    use output::terminal::escape_controls;
    match v.get_ref() {
        DeValue::Integer(n) => (i64::from_str_radix(n.as_str(), n.radix()).is_err()).then(|| {
            let msg = format!(
                "{} is out of range; a TOML integer is from -2^63 to 2^63 - 1 ({})",
                n.as_str(),
                i64::MAX
            );
            (field.to_string(), v.span(), msg)
        }),
        DeValue::String(s) if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') => {
            let msg = format!(
                "`{}` has a control character; a string may break lines and hold tabs, \
                 nothing else of the kind",
                escape_controls(s)
            );
            Some((field.to_string(), v.span(), msg))
        }
        DeValue::Array(a) => {
            (a.iter().enumerate()).find_map(|(i, x)| bad_value(x, &format!("{field}[{i}]")))
        }
        DeValue::Table(t) => t.iter().find_map(|(k, x)| {
            let f = if field.is_empty() {
                k.get_ref().to_string()
            } else {
                format!("{field}.{}", k.get_ref())
            };
            if k.get_ref().chars().any(char::is_control) {
                let msg = format!(
                    "the name `{}` has a control character; names are printed in messages \
                     and written into files",
                    escape_controls(k.get_ref()).replace('\n', "\\n")
                );
                let f = escape_controls(&f).replace('\n', "\\n");
                return Some((f, k.span(), msg));
            }
            bad_value(x, &f)
        }),
        _ => None,
    }
}

/// Refuses a scenario or variant name that is not one plain file name:
/// outputs are written under `out/NAME/` and as `FORMAT-VARIANT.txt`, so
/// a `/` or a `..` would write elsewhere.
fn check_file_name(
    source: &Source,
    span: std::ops::Range<usize>,
    field: &str,
    name: &str,
) -> Result<(), ScenarioError> {
    match file_name_problem(name) {
        None => Ok(()),
        Some(p) => Err(ScenarioError::new(source.locate(Some(span)), field, p)),
    }
}

/// Why `name` cannot name an output file or directory, if it cannot.
pub(crate) fn file_name_problem(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    (!ok).then(|| {
        format!(
            "`{name}` cannot name output files; use letters, digits, `-`, `_`, `.` and `+` \
             (at most 100, not starting with `.`)"
        )
    })
}
