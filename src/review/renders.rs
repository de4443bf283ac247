//! Renderings of revisions, kept: a plan is rendered once per process (the first time it is
//! shown, or as soon as it is submitted in a process that will show it), then served from
//! here. A revision never changes, so its sha256 names its rendering for good. Two callers
//! asking for one rendering at once wait for the same work.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use crate::plan::{self, Rendered};

/// How many renderings are kept (the oldest goes first); a 200 KB plan renders to ~1 MB.
const CAPACITY: usize = 16;

/// HTML per page of a plan as a window shows it (about a screen of an ordinary plan): the window
/// keeps only the pages near the screen in its document.
pub const PAGE_BYTES: usize = 2 * 1024;

/// A plan rendered for a person, beside its source view.
#[derive(Debug)]
pub struct RenderedPlan {
    pub rendered: Rendered,
    pub source_html: String,
    /// The length of each of `rendered.html`'s pages, once cut.
    pages: OnceLock<Vec<usize>>,
}

impl RenderedPlan {
    pub fn of(markdown: &str) -> Self {
        Self {
            rendered: plan::render(markdown),
            source_html: plan::render::render_source(markdown),
            pages: OnceLock::new(),
        }
    }

    /// The rendered HTML in pages of at least [`PAGE_BYTES`] ([`plan::render::pages`]). Cut
    /// once, then kept (a 200 KB plan takes ~2 ms to cut): a window asks for a plan's pages
    /// each time it shows the plan or scrolls to more of it.
    pub fn pages(&self) -> Vec<&str> {
        let html = &self.rendered.html;
        let lengths = self.pages.get_or_init(|| {
            let pages = plan::render::pages(html, PAGE_BYTES);
            pages.iter().map(|page| page.len()).collect()
        });
        let mut start = 0;
        lengths
            .iter()
            .map(|len| {
                let page = &html[start..start + len];
                start += len;
                page
            })
            .collect()
    }
}

type Slot = Arc<OnceLock<Arc<RenderedPlan>>>;

#[derive(Debug, Default)]
pub struct Renders {
    slots: Mutex<(HashMap<String, Slot>, VecDeque<String>)>,
}

impl Renders {
    fn slot(&self, sha: &str) -> Slot {
        let mut guard = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let (slots, order) = &mut *guard;
        if let Some(slot) = slots.get(sha) {
            return slot.clone();
        }
        let slot = Slot::default();
        slots.insert(sha.to_owned(), slot.clone());
        order.push_back(sha.to_owned());
        while order.len() > CAPACITY {
            if let Some(oldest) = order.pop_front() {
                slots.remove(&oldest);
            }
        }
        slot
    }

    /// The rendering of the revision `sha` (whose plan is `markdown`), rendered now if need
    /// be. Blocking: call it off the async runtime.
    pub fn get(&self, sha: &str, markdown: &str) -> Arc<RenderedPlan> {
        self.slot(sha)
            .get_or_init(|| Arc::new(RenderedPlan::of(markdown)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_kept_as_the_renderer_cuts_them() {
        let markdown: String = (0..300)
            .map(|i| format!("## Step {i}\n\nMove `t{i}`, then check it.\n\n"))
            .collect();
        let rendered = RenderedPlan::of(&markdown);
        let html = &rendered.rendered.html;
        for _ in 0..2 {
            let pages = rendered.pages();
            assert_eq!(pages, plan::render::pages(html, PAGE_BYTES));
            assert!(pages.len() > 1);
            assert_eq!(pages.concat(), *html);
        }
    }

    #[test]
    fn a_rendering_is_made_once_and_the_oldest_goes_first() {
        let renders = Renders::default();
        let first = renders.get("a", "# A\n\ntext");
        assert!(first.rendered.html.contains("text"));
        assert!(Arc::ptr_eq(
            &first,
            &renders.get("a", "ignored: already rendered")
        ));
        for i in 0..CAPACITY {
            renders.get(&format!("s{i}"), "x");
        }
        let again = renders.get("a", "# A\n\nrendered again");
        assert!(!Arc::ptr_eq(&first, &again), "evicted, rendered anew");
        assert!(again.rendered.html.contains("rendered again"));
    }
}
