//! A hook's deadline: the one configured, but never past the moment its agent stops waiting
//! (shared by `plandesk hook`, `plandesk serve` and the app serving its network).

use std::time::Duration;

/// The longest wait an agent's timer keeps: Node.js fires a timer of 2^31 ms or more (24.8
/// days) at once, and a timeout of any size (Copilot CLI's `timeoutSec: 1e300`) must still
/// give an instant the hook can reach.
const LONGEST_TIMER: Duration = Duration::from_millis(i32::MAX as u64);

/// A hook's deadline: the one configured, but never past the moment its agent stops waiting for
/// it (`agent_timeout`: a timed-out hook's answer is lost, and Gemini CLI and Codex then let
/// the plan through). It answers "not approved" a margin before that.
pub fn hook_deadline(configured: Option<Duration>, agent_timeout: Duration) -> Duration {
    let agent_timeout = agent_timeout.min(LONGEST_TIMER);
    let margin = (agent_timeout / 5).clamp(Duration::from_millis(500), Duration::from_secs(60));
    let limit = agent_timeout
        .saturating_sub(margin)
        .max(Duration::from_millis(500));
    configured.map_or(limit, |d| d.min(limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_answers_before_its_agent_stops_waiting() {
        let day = Duration::from_secs(86_400);
        assert_eq!(hook_deadline(None, day), day - Duration::from_secs(60));
        let short = Some(Duration::from_secs(3));
        assert_eq!(hook_deadline(short, day), Duration::from_secs(3));
        assert_eq!(
            hook_deadline(short, Duration::from_secs(2)),
            Duration::from_millis(1500),
            "never past the agent's own timeout"
        );
        assert_eq!(
            hook_deadline(None, Duration::from_secs(60)),
            Duration::from_secs(48)
        );
        // A timeout of any size gives a deadline a clock can reach.
        let huge = hook_deadline(None, Duration::MAX);
        assert!(huge < LONGEST_TIMER, "{huge:?}");
        assert!(std::time::Instant::now().checked_add(huge).is_some());
    }
}
