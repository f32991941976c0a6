//! Which scenarios `run` and `doctor` take: the selection flags, one
//! definition both flatten in, merged with the target file's
//! `[scenarios]` (`--scenario` replaces `only`, `--tag` replaces `tags`,
//! skips add up, `require_all` holds if either says so). A name or a tag
//! that is not in the catalog is a usage error whose hint is the nearest
//! one, or the whole list.

use hookstorm::scenario::Scenario;
use hookstorm::target::SelectionFile;
use hookstorm::text::suggest::hint;

use super::catalog::{self, CatalogFlags};
use super::target_flags::TargetFlags;

/// The scenario selection flags.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Scenarios")]
pub(crate) struct Selection {
    /// Scenario name or .toml file; repeat for several. Default: every scenario.
    #[arg(long = "scenario")]
    pub scenarios: Vec<String>,
    /// Leave this scenario out; repeatable.
    #[arg(long = "skip")]
    pub skip: Vec<String>,
    /// Only scenarios with this tag (`process`, `signatures`, `ordering`, …; see `hookstorm list`); repeatable.
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Leave out scenarios with this tag; repeatable.
    #[arg(long = "skip-tag")]
    pub skip_tags: Vec<String>,
    /// A scenario the target cannot run (skipped for an unmet need) fails the run.
    #[arg(long)]
    pub require_all: bool,
    #[command(flatten)]
    pub catalog: CatalogFlags,
}

impl Selection {
    /// The scenarios picked for `target` (merged with its file's
    /// `[scenarios]`) and whether `require_all` holds; `Err(code)` is an
    /// error already printed: 3 for an unreadable target file, 254 for a
    /// selection that names nothing.
    pub fn for_target(&self, target: &TargetFlags) -> Result<(Vec<Scenario>, bool), i32> {
        let file = match target.selection() {
            Ok(s) => s,
            Err(e) => {
                errln!("error: {e}");
                return Err(hookstorm::exit::TARGET_UNUSABLE);
            }
        };
        let scenarios = self
            .pick(&file)
            .map_err(|e| super::usage_error(format!("{e:#}")))?;
        Ok((scenarios, self.require_all || file.require_all))
    }

    /// The scenarios picked by these flags and the target file's section.
    pub fn pick(&self, file: &SelectionFile) -> anyhow::Result<Vec<Scenario>> {
        let dir = self.catalog.dir();
        let loaded = Scenario::load_dir(&dir);
        let all: Vec<Scenario> = loaded.as_ref().cloned().unwrap_or_default();
        let mut names: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
        let mut picked = Vec::new();
        if !self.scenarios.is_empty() {
            for s in &self.scenarios {
                let path = catalog::find(&dir, s).map_err(anyhow::Error::msg)?;
                picked.push(Scenario::from_file(&path)?);
            }
        } else {
            picked = loaded?;
            if let Some(bad) = file.only.iter().find(|n| !names.contains(n)) {
                anyhow::bail!(
                    "[scenarios] only: no scenario {bad:?} (hint: {})",
                    hint(bad, names.iter().map(String::as_str))
                );
            }
            if !file.only.is_empty() {
                picked.retain(|s| file.only.contains(&s.name));
            }
        }
        for s in &picked {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
        for (whence, list) in [("--skip", &self.skip), ("[scenarios] skip", &file.skip)] {
            if let Some(bad) = list.iter().find(|n| !names.contains(n)) {
                anyhow::bail!(
                    "{whence}: no scenario {bad:?} (hint: {})",
                    hint(bad, names.iter().map(String::as_str))
                );
            }
        }
        picked.retain(|s| !self.skip.contains(&s.name) && !file.skip.contains(&s.name));
        let tags = if self.tags.is_empty() {
            &file.tags
        } else {
            &self.tags
        };
        let known_tags: Vec<String> = {
            let mut t: Vec<String> = all.iter().flat_map(|s| s.tags.clone()).collect();
            t.extend(picked.iter().flat_map(|s| s.tags.clone()));
            t.sort();
            t.dedup();
            t
        };
        for t in tags.iter().chain(&self.skip_tags).chain(&file.skip_tags) {
            if !known_tags.contains(t) {
                anyhow::bail!(
                    "no scenario has tag {t:?} (hint: {})",
                    hint(t, known_tags.iter().map(String::as_str))
                );
            }
        }
        if !tags.is_empty() {
            picked.retain(|s| tags.iter().any(|t| s.has_tag(t)));
        }
        picked.retain(|s| {
            !self
                .skip_tags
                .iter()
                .chain(&file.skip_tags)
                .any(|t| s.has_tag(t))
        });
        if picked.is_empty() {
            anyhow::bail!(
                "no scenario left to run (hint: `hookstorm list` shows every scenario and its tags)"
            );
        }
        Ok(picked)
    }
}
