//! Agent Skills (work in progress).
