//! placeholder
use super::*;
#[derive(Debug, Default, Clone, Copy)]
pub struct DemoModel;
impl LanguageModel for DemoModel {
    fn spec(&self) -> String { "demo".into() }
    fn stream<'a>(&'a self, _request: ModelRequest<'a>) -> EventStream<'a> { Box::pin(futures::stream::empty()) }
}
