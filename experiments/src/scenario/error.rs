//! Scenario errors: every one names where (file and line, or the `--set`
//! argument), which field, and what was expected.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// `path/to/file.toml:12`, `path/to/file.toml`, or `--set key=value`.
    pub location: String,
    /// The field, as a dotted path: `tasks.readers.program[3]`.
    pub field: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(
        location: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ScenarioError {
            location: location.into(),
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.location, self.message)
        } else {
            write!(
                f,
                "{}: field `{}`: {}",
                self.location, self.field, self.message
            )
        }
    }
}

impl std::error::Error for ScenarioError {}

impl crate::program::Origin {
    /// An error at this step (its location and field).
    pub fn error(&self, msg: impl Into<String>) -> ScenarioError {
        ScenarioError::new(self.location.clone(), self.field.clone(), msg)
    }
}
