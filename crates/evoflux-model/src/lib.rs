//! Model providers (work in progress).
