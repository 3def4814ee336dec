//! The one code path behind `GET /addresses`, `export` and the daemon's outputs, so
//! that their bytes are the same.

use crate::db::{Db, StoreError};
use crate::format::{self, RenderOptions};

/// Renders the stored values selected by `options`, streaming rows from the database
/// into the formatter.
pub fn render(db: &Db, options: &RenderOptions) -> Result<Vec<u8>, StoreError> {
    let mut values = format::Collector::new(options.family);
    db.for_each_value(options.type_filter, |v| values.push(v))?;
    let prepared = values.finish(format::needs_aggregate(options));
    Ok(format::render_prepared(&prepared, options))
}
