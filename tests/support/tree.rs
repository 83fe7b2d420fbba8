//! Copying a tree of files: a suite copied for a test to edit.

use std::path::Path;

/// Copy the tree at `from` into `to` (created), files and folders alike.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("copy target");
    for entry in std::fs::read_dir(from).expect("copy source") {
        let entry = entry.expect("copy source entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("entry type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}
