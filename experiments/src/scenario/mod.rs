//! The scenario language (docs/scenario-language.md).
//!
//! A scenario is a TOML file. Loading it goes through four stages, each in
//! its own module:
//! 1. [`source`]: the file text and a map from byte offsets to lines (and
//!    to `--set` arguments), so every error names file, line and field;
//! 2. [`resolve`]: parse to a spanned TOML tree, read the libraries it
//!    includes (shipped ones from [`library`]), overlay one variant, apply
//!    `--set key=value`, and deserialize the typed document [`doc::Doc`];
//! 3. [`steps`]: parse each step string (`down_read kernfs_rwsem`) and
//!    nest blocks (`repeat`/`loop`/`with_prob` ... `end`);
//! 4. [`compile`](mod@compile): in passes, read the settings and
//!    definitions, expand `call`s, resolve names, check the program
//!    statically (locks held, blocks balanced, loops advance time), lay out
//!    its slots and lower it to the program the world runs
//!    ([`crate::program`]).

pub mod compile;
pub mod doc;
pub mod error;
pub mod hint;
pub mod library;
pub mod resolve;
pub mod source;
pub mod steps;

pub use compile::compile;
pub use error::ScenarioError;
pub use resolve::{load_variant, Loaded, ScenarioFile};
pub use source::Source;
