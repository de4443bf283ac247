//! `plandesk model [set SPEC | clear]`: the model new runs use when `--model` is not given, and
//! why that one.

use std::process::ExitCode;

use anyhow::Result;
use plandesk::model::select::{self, DefaultModel, MODEL_SETTING};
use plandesk::Engine;

use super::{print, ModelAction};

/// The model a run uses without `--model`: the saved choice, else what is configured.
pub async fn default_model(engine: &Engine) -> Result<DefaultModel> {
    let saved = engine.setting(MODEL_SETTING).await?;
    Ok(select::default_model(saved).await)
}

/// `plandesk model`: shows the default, or saves or forgets a choice.
pub async fn model(engine: &Engine, action: Option<ModelAction>, json: bool) -> Result<ExitCode> {
    match action {
        Some(ModelAction::Set { spec }) => {
            select::ModelSpec::parse(&spec)?;
            engine.set_setting(MODEL_SETTING, Some(&spec)).await?;
            eprintln!("plandesk: new runs use {spec} unless --model says otherwise");
        }
        Some(ModelAction::Clear) => {
            engine.set_setting(MODEL_SETTING, None).await?;
            let chosen = default_model(engine).await?;
            eprintln!(
                "plandesk: saved model forgotten; new runs use {} ({})",
                chosen.spec, chosen.reason
            );
        }
        None => {
            let chosen = default_model(engine).await?;
            if json {
                print::json_line(
                    &serde_json::json!({"model": chosen.spec, "reason": chosen.reason}),
                )?;
            } else {
                println!("{}\t{}", chosen.spec, chosen.reason);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
