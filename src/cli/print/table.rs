//! Listings as aligned columns. A dozen lines of our own rather than a table crate: the
//! listings are plain columns with no borders or wrapping, and the crates (comfy-table,
//! tabled) bring width tables and styling we would not use.

use plandesk::text::terminal_safe;

/// Rows printed as aligned columns: each column as wide as its widest cell, two spaces apart,
/// the last one not padded. Widths count characters, as `format!`'s padding did.
///
/// Every cell passes through `terminal_safe`, with line breaks and tabs shown as `\n` and `\t`:
/// a cell can neither act on the terminal nor break its row. Callers still make untrusted text
/// safe (`safe`, `short`) before it gets here; this is the second lock, not the first.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

/// Between two columns.
const GAP: &str = "  ";

impl Table {
    /// A table whose first row is `header` (none if it is empty).
    pub fn new(header: &[&str]) -> Self {
        let mut table = Self::default();
        if !header.is_empty() {
            table.row(header.iter().copied());
        }
        table
    }

    pub fn row<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let cell = |text: &str| {
            terminal_safe(text)
                .replace('\n', "\\n")
                .replace('\t', "\\t")
        };
        self.rows
            .push(cells.into_iter().map(|c| cell(c.as_ref())).collect());
    }

    /// The table's lines, each starting with `indent`.
    pub fn lines(&self, indent: &str) -> Vec<String> {
        let mut widths: Vec<usize> = Vec::new();
        for row in &self.rows {
            // The last cell of a row is not padded, so it does not widen its column.
            for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
                let width = cell.chars().count();
                match widths.get_mut(i) {
                    Some(w) => *w = (*w).max(width),
                    None => widths.push(width),
                }
            }
        }
        self.rows
            .iter()
            .map(|row| {
                let mut line = indent.to_owned();
                for (i, cell) in row.iter().enumerate() {
                    line.push_str(cell);
                    if i + 1 < row.len() {
                        let pad = widths
                            .get(i)
                            .copied()
                            .unwrap_or(0)
                            .saturating_sub(cell.chars().count());
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(GAP);
                    }
                }
                line.trim_end().to_owned()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let mut table = Table::new(&["RUN", "STATUS", "PROMPT"]);
        table.row(["run-1", "suspended", "Add a cache"]);
        table.row(["r2", "done", "Fix the build, then the docs"]);
        assert_eq!(
            table.lines(""),
            [
                "RUN    STATUS     PROMPT",
                "run-1  suspended  Add a cache",
                "r2     done       Fix the build, then the docs",
            ]
        );
        assert_eq!(table.lines("  ")[1], "  run-1  suspended  Add a cache");
    }

    #[test]
    fn a_cell_cannot_act_on_the_terminal_or_break_its_row() {
        let mut table = Table::new(&[]);
        table.row(["a\u{1b}[2K\rb", "line\nbreak\tand tab", "\u{202e}txt"]);
        let lines = table.lines("");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(
            lines[0],
            "a\\x1b[2K\\rb  line\\nbreak\\tand tab  \\u{202e}txt"
        );
    }

    #[test]
    fn short_rows_and_empty_last_cells_leave_no_trailing_space() {
        let mut table = Table::new(&["A", "B", "C"]);
        table.row(["wide cell", ""]);
        table.row(["x"]);
        assert_eq!(table.lines(""), ["A          B  C", "wide cell", "x"]);
    }
}
