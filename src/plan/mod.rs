//! Plans as a person sees them: rendered to sanitised HTML, and compared side by side.

pub mod diff;
pub mod render;

pub use diff::{side_by_side, DiffLine, DiffRow, RowKind, Segment, SideBySide};
pub use render::render_html;
