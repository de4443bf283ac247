//! The desktop app's settings as its window edits them, and how each is kept in the store's
//! settings table: flags as `on` or `off`, the reviewer's name as given (none: the OS user),
//! anything unset read as its default. On a team's store they are a person's own (see
//! `StoreLocation::Postgres`).

use serde::{Deserialize, Serialize};

use super::ViewError;
use crate::engine::{Engine, EngineError};
use crate::review::REVIEWER_SETTING;

/// Whether a plan that becomes pending shows a desktop notification (`on`/`off`).
pub const NOTIFICATIONS: &str = "notifications";
/// Whether notifications name the plan and its prompt (`on`/`off`).
pub const NOTIFICATION_TITLES: &str = "notification_titles";
/// Whether the app starts at login, hidden in the tray (`on`/`off`; unset until the app's
/// first start settles it).
pub const START_AT_LOGIN: &str = "start_at_login";
/// The most characters the reviewer's name may have.
pub const MAX_REVIEWER_NAME: usize = 100;

/// The app's settings; stored in the store's settings table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub notifications: bool,
    /// Whether notifications name the plan (off: "A plan requires approval").
    pub notification_titles: bool,
    /// Start at login hidden in the tray, and hide to the tray when the window is closed.
    pub start_at_login: bool,
    /// The name the audit trail records for decisions, comments and edits made here (empty:
    /// the OS user).
    #[serde(default)]
    pub reviewer_name: String,
    /// The team's PostgreSQL store saved for this data folder (empty: this computer's SQLite
    /// file). Not in the store itself: it says which store to open.
    #[serde(default)]
    pub team_store: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            notifications: true,
            notification_titles: true,
            // Settled at the app's first start (on for the user's own store).
            start_at_login: false,
            reviewer_name: String::new(),
            team_store: String::new(),
        }
    }
}

/// A flag as the settings table keeps it.
fn flag(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// A flag as kept: anything but `on` is off; `None` when unset.
fn read_flag(value: Option<String>) -> Option<bool> {
    value.map(|v| v == "on")
}

impl Settings {
    /// The settings as stored, defaults where unset. `team_store` is left empty: which store
    /// to open is saved beside the data, not in it.
    pub async fn load(engine: &Engine) -> Result<Self, EngineError> {
        let defaults = Self::default();
        let on = |value: Option<String>, default: bool| read_flag(value).unwrap_or(default);
        Ok(Self {
            notifications: on(engine.setting(NOTIFICATIONS).await?, defaults.notifications),
            notification_titles: on(
                engine.setting(NOTIFICATION_TITLES).await?,
                defaults.notification_titles,
            ),
            reviewer_name: engine.setting(REVIEWER_SETTING).await?.unwrap_or_default(),
            team_store: String::new(),
            start_at_login: on(
                engine.setting(START_AT_LOGIN).await?,
                defaults.start_at_login,
            ),
        })
    }

    /// Saves the notifications' flags and the reviewer's name (trimmed; blank removes it). A
    /// name of more than [`MAX_REVIEWER_NAME`] characters, or with a control character, is
    /// refused before anything is saved. Start at login is saved on its own
    /// ([`Settings::save_start_at_login`]), once the host has put its login entry in place.
    pub async fn save_preferences(&self, engine: &Engine) -> Result<(), ViewError> {
        let name = self.reviewer_name.trim();
        if name.chars().count() > MAX_REVIEWER_NAME || name.chars().any(char::is_control) {
            return Err(ViewError::ReviewerName);
        }
        engine
            .set_setting(NOTIFICATIONS, Some(flag(self.notifications)))
            .await?;
        engine
            .set_setting(NOTIFICATION_TITLES, Some(flag(self.notification_titles)))
            .await?;
        engine
            .set_setting(REVIEWER_SETTING, (!name.is_empty()).then_some(name))
            .await?;
        Ok(())
    }

    /// Saves whether the app starts at login.
    pub async fn save_start_at_login(engine: &Engine, on: bool) -> Result<(), EngineError> {
        engine.set_setting(START_AT_LOGIN, Some(flag(on))).await
    }

    /// Whether the app starts at login, if that was ever settled.
    pub async fn saved_start_at_login(engine: &Engine) -> Result<Option<bool>, EngineError> {
        Ok(read_flag(engine.setting(START_AT_LOGIN).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_reads_back_as_it_was_written_and_anything_else_is_off() {
        for on in [true, false] {
            assert_eq!(
                read_flag(Some(flag(on).to_owned())),
                Some(on),
                "a saved flag must read back the same"
            );
        }
        assert_eq!(read_flag(None), None, "unset: the caller's default");
        assert_eq!(
            read_flag(Some("yes".into())),
            Some(false),
            "only `on` is on, as the app always read it"
        );
    }
}
