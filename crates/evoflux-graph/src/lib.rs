//! The source graph (work in progress).
