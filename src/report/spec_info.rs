//! How reports name and break down a spec: [`SpecInfo`], from a loaded
//! spec or, for a run read back, from its file when it still loads.

use std::path::Path;

/// A spec as reports name it.
#[derive(Debug, Clone, Default)]
pub struct SpecInfo {
    /// The spec id.
    pub id: String,
    /// Its human title (the id when unset).
    pub title: String,
    /// Its headline number (`[report] headline`): what its cells show.
    pub headline: crate::metrics::Headline,
    /// Instance variables results are broken down by (`[report] group_by`).
    pub group_by: Vec<String>,
    /// `Some(dataset name)` when the spec asks for the RRR CSV.
    pub rrr: Option<String>,
    /// The pass@k values and maj@n the spec's `[sampling]` asks for.
    pub sampling: Option<crate::metrics::SamplingPlan>,
    /// The spec file's folder, which its images' paths are relative to (unknown for a spec known by id).
    pub dir: Option<std::path::PathBuf>,
    /// Its `tags`.
    pub tags: Vec<String>,
}

impl SpecInfo {
    /// A spec known only by its id.
    pub fn plain(id: &str) -> SpecInfo {
        SpecInfo {
            id: id.to_owned(),
            title: id.to_owned(),
            ..SpecInfo::default()
        }
    }

    /// How reports show the spec at `file`: as loaded when it still loads,
    /// else by its file stem.
    pub fn from_file(file: &Path) -> SpecInfo {
        match crate::spec::Spec::load(file) {
            Ok(s) => SpecInfo::of(&s),
            Err(_) => {
                let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
                SpecInfo::plain(&stem.unwrap_or_default())
            }
        }
    }

    /// How reports show a loaded spec.
    pub fn of(spec: &crate::spec::Spec) -> SpecInfo {
        let report = &spec.def.report;
        let rrr = (report.csv == Some(crate::format::CsvKind::Rrr)).then(|| {
            report
                .dataset_name
                .clone()
                .or_else(|| spec.dataset().map(|d| d.name().to_owned()))
                .unwrap_or_else(|| spec.id.clone())
        });
        SpecInfo {
            id: spec.id.clone(),
            title: spec.def.title.clone().unwrap_or_else(|| spec.id.clone()),
            headline: report.headline.unwrap_or_default(),
            group_by: report.group_by(),
            rrr,
            sampling: spec
                .def
                .sampling
                .as_ref()
                .map(|s| crate::metrics::SamplingPlan {
                    ks: s.ks(),
                    maj: s.maj,
                }),
            dir: spec.file.parent().map(std::path::Path::to_path_buf),
            tags: spec.def.tags.clone(),
        }
    }
}
