//! Where a process keeps its data and which store it uses: configuration that hosts (the CLI,
//! the app, a hook) settle before anything is opened. The data folder comes from
//! `--data-dir`, else `PLANDESK_DATA_DIR`, else the user's data folder; the store from
//! `--store`, else `PLANDESK_STORE`, else the team store saved for that folder, else the
//! SQLite file in it.
//!
//! Hosts read and change this here, not in [`crate::store`]: which database a person chose is
//! their configuration, and the store's own types (rows, the `Store` trait) stay out of every
//! host. The functions themselves still live beside the backends they check and open.

pub use crate::store::{
    check_team_store, default_data_dir, named_store, reach_team_store, save_team_store,
    saved_team_store, StoreLocation, DATA_DIR_ENV, STORE_ENV, STORE_FILE,
};
