//! Plans as a person sees them: rendered to sanitised HTML (with what the rendering would hide
//! listed, and a source fallback for plans that cannot be rendered), and compared side by side.

pub mod diff;
pub mod lines;
pub mod render;
pub mod steps;

pub use diff::{
    side_by_side, side_by_side_within, DiffLine, DiffRow, RowKind, Segment, SideBySide,
};
pub use lines::{unified, LineFate, LineMap};
pub use render::{
    render, render_html, render_source, Fallback, HiddenContent, HiddenKind, Rendered,
};
