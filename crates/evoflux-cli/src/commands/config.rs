//! `evoflux config show` and `evoflux config check`.

use std::fmt::Write as _;

use evoflux_core::Diagnostics;
use evoflux_core::config::{self, ConfigOrigin, LoadedConfig};
use serde::Serialize;

use crate::output::{Exit, Output};

fn load(out: &Output) -> Result<(std::path::PathBuf, Option<LoadedConfig>, Diagnostics), Exit> {
    let dirs = super::resolve_dirs(out)?;
    let path = dirs.config_file();
    let mut diags = Diagnostics::new();
    let loaded = config::load(&path, &mut diags);
    Ok((path, loaded, diags))
}

pub fn show(out: &Output) -> anyhow::Result<Exit> {
    let (path, loaded, diags) = match load(out) {
        Ok(v) => v,
        Err(exit) => return Ok(exit),
    };
    out.diagnostics(&diags);
    let Some(loaded) = loaded else {
        return Ok(Exit::Invalid);
    };
    let human = || -> anyhow::Result<String> {
        let mut text = String::new();
        match &loaded.file {
            Some(file) => writeln!(text, "# from {}", file.display())?,
            None => writeln!(
                text,
                "# no config file at {}: embedded defaults",
                path.display()
            )?,
        }
        writeln!(text, "\n[model] # {}", origin(loaded.model_origin))?;
        writeln!(text, "default = \"{}\"", loaded.config.model.default)?;
        for (name, provider) in &loaded.config.providers {
            let origin = loaded
                .provider_origins
                .get(name)
                .copied()
                .unwrap_or(ConfigOrigin::Embedded);
            writeln!(text, "\n[providers.{name}] # {}", self::origin(origin))?;
            text.push_str(&toml::to_string(provider)?);
        }
        Ok(text)
    };
    let text = human()?;
    out.result(&loaded, || text);
    Ok(Exit::Ok)
}

fn origin(o: ConfigOrigin) -> &'static str {
    match o {
        ConfigOrigin::Embedded => "embedded default",
        ConfigOrigin::File => "config file",
    }
}

#[derive(Serialize)]
struct CheckReport<'a> {
    ok: bool,
    file: &'a std::path::Path,
    exists: bool,
    diagnostics: &'a Diagnostics,
}

pub fn check(out: &Output) -> anyhow::Result<Exit> {
    let (path, loaded, diags) = match load(out) {
        Ok(v) => v,
        Err(exit) => return Ok(exit),
    };
    let ok = loaded.is_some();
    let exists = loaded.as_ref().is_some_and(|l| l.file.is_some()) || path.exists();
    if out.json {
        out.result(
            &CheckReport {
                ok,
                file: &path,
                exists,
                diagnostics: &diags,
            },
            String::new,
        );
    } else {
        out.diagnostics(&diags);
        if ok {
            out.result(&(), || match exists {
                true => format!("ok: {}\n", path.display()),
                false => format!(
                    "ok: no config file at {}; embedded defaults apply\n",
                    path.display()
                ),
            });
        }
    }
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}
