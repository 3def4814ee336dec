//! `outputs[]`: the files, commands and kernel loads written after each run, and
//! what each one lists.

use super::*;

pub(super) const OUTPUT_KEYS: &[&str] = &[
    "path",
    "format",
    "type",
    "command",
    "family",
    "aggregate",
    "table",
    "set",
    "via",
    "comment",
    "timeout_seconds",
    "load",
    "group",
    "timeout",
    "max_kernel_mib",
];

impl Reader<'_> {
    pub(super) fn outputs(&mut self, root: &Map) -> Result<Vec<OutputConfig>, ConfigError> {
        match root.get("outputs") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, v)| self.output(i, v))
                .collect(),
            Some(v) => Err(self.err("outputs", format!("expected a list, got {}", short(v)))),
        }
    }

    /// `outputs[i]`.
    fn output(&mut self, i: usize, v: &Value) -> Result<OutputConfig, ConfigError> {
        let prefix = format!("outputs[{i}].");
        let o = self.object(v, &format!("outputs[{i}]"))?;
        if o.contains_key("dnsmasq") {
            return dnsmasq::output(self, o, &prefix);
        }
        self.unknown(o, &prefix, OUTPUT_KEYS);
        let load = match self.string(o, &prefix, "load")?.as_deref() {
            None => None,
            Some("nft") => Some(LoadKind::Nft),
            Some(l) => {
                return Err(self.err(
                    &format!("{prefix}load"),
                    format!("invalid load {l:?}: expected nft"),
                ))
            }
        };
        let path = self.string(o, &prefix, "path")?.filter(|p| !p.is_empty());
        if path.is_none() && load.is_none() {
            return Err(self.err(
                &format!("{prefix}path"),
                "missing: the file to write (or \"load\": \"nft\")",
            ));
        }
        Ok(OutputConfig {
            path: path.map(PathBuf::from),
            load,
            render: self.render(o, &prefix)?,
            command: self
                .string(o, &prefix, "command")?
                .filter(|s| !s.trim().is_empty()),
            timeout_seconds: self
                .uint(o, &prefix, "timeout_seconds", 1, 3600)?
                .unwrap_or(60),
            dnsmasq: None,
            selection: Selection::default(),
            mark: None,
            dns_sets: None,
            kernel_timeout: None,
            max_kernel_mib: None,
            has_sources: false,
            routes: Vec::new(),
        })
    }

    /// What an output renders: format, type, family, aggregate, table and set.
    fn render(&self, o: &Map, prefix: &str) -> Result<RenderOptions, ConfigError> {
        let mut render = RenderOptions {
            format: self
                .word::<Format>(o, prefix, "format")?
                .unwrap_or(Format::Text),
            type_filter: self
                .word::<TypeFilter>(o, prefix, "type")?
                .unwrap_or(TypeFilter::All),
            family: self.word::<Family>(o, prefix, "family")?,
            ..RenderOptions::default()
        };
        match o.get("aggregate") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => render.aggregate = *b,
            Some(v) => {
                return Err(self.err(
                    &format!("{prefix}aggregate"),
                    format!("expected true or false, got {}", short(v)),
                ))
            }
        }
        if let Some(t) = self.string(o, prefix, "table")? {
            render.table = t;
        }
        let set = self.string(o, prefix, "set")?;
        if let Some(s) = &set {
            render.set = s.clone();
        }
        if let Some(g) = self.string(o, prefix, "group")? {
            render.select_group(&g, set.is_some());
        }
        render.via = self.string(o, prefix, "via")?;
        render.comment = self.string(o, prefix, "comment")?;
        render
            .check_names()
            .map_err(|e| self.err(&format!("{prefix}table/set"), e.0))?;
        render
            .check_route_options()
            .map_err(|e| self.err(&format!("{prefix}format"), e.0))?;
        Ok(render)
    }
}
