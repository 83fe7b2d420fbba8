//! Dispositions: the one verdict each requirement row gets.
//!
//! A row's disposition is folded from the outcomes of every check that names it, across every
//! scenario that ran. The fold is monotone: an unknown never rolls up into a pass, and a row
//! with no observation at all is never `pass`.

pub mod certify;
mod fold;
mod outcome;

pub use crate::suite::Evidence;
pub use certify::{
    Certification, CertifyOptions, ProfileVerdict, RowStanding, Selection, Standing, Verdict,
};
pub use fold::{FoldOptions, RowVerdict, fold_rows};
pub use outcome::{CheckOutcome, CheckStatus, Disposition};
