//! Errors loading the suite: each names the file, where in it, and what was expected.

/// A suite file that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid JSON (or repeats an object key).
    #[error("{file}:{line}:{column}: not valid JSON: {message}")]
    Json {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A file does not match its JSON Schema.
    #[error("{file}: at JSON pointer \"{pointer}\": {message} (schema {schema})")]
    Schema {
        /// The file.
        file: String,
        /// JSON pointer of the offending value.
        pointer: String,
        /// What the schema expected.
        message: String,
        /// Which schema.
        schema: String,
    },
    /// A file is well-formed but refers to something that does not exist, or repeats an id.
    #[error("{file}: at JSON pointer \"{pointer}\": {message}")]
    Reference {
        /// The file.
        file: String,
        /// JSON pointer of the offending value.
        pointer: String,
        /// What is wrong and what would fix it.
        message: String,
    },
    /// A required file is missing from the suite.
    #[error("the suite has no {0}: it is required")]
    Missing(String),
}
