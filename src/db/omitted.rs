//! What the bundled SQLite leaves out, and what its parser still calls for it.
//!
//! `.cargo/config.toml` builds SQLite with `SQLITE_OMIT_ALTERTABLE`,
//! `SQLITE_OMIT_VIRTUALTABLE`, `SQLITE_OMIT_ANALYZE` and `SQLITE_OMIT_REINDEX`: about
//! 76 KB of the mipsel binary, 36 KB of the `.ipk` (docs/size.md). The prebuilt
//! amalgamation's parser was generated with those statements in its grammar, so it
//! still calls the functions that would build their code, which the build no longer
//! defines; the link takes them from here.
//!
//! * `ALTER TABLE`, `ANALYZE` and `REINDEX` are statements only this program could send,
//!   and it sends none (a test below reads every `.rs` file of `src` for them): reaching
//!   one is a programming error, so it stops the process with a message naming it,
//!   as `unreachable!` would, rather than doing nothing in silence.
//! * A virtual table can only come from a schema someone else wrote into `ripe.db`
//!   (this SQLite cannot create one). Loading such a schema skips the declaration,
//!   as if the table did not exist: the database still opens, our own tables work,
//!   and a statement naming that table fails with "no such table".
#![allow(non_snake_case)]

use std::ffi::{c_int, c_void};

type P = *mut c_void;

fn unavailable(statement: &str) -> ! {
    eprintln!(
        "ripe-cidr-collector: {statement} is left out of this build's SQLite (src/db/omitted.rs)"
    );
    std::process::abort()
}

macro_rules! omitted {
    ($($name:ident($($arg:ident: $ty:ty),*) $body:block)*) => {$(
        /// Called by SQLite's parser for a statement this build leaves out.
        ///
        /// # Safety
        /// Called only by SQLite's parser; the arguments are not read.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) {
            $(let _ = $arg;)*
            $body
        }
    )*};
}

omitted! {
    sqlite3AlterRenameTable(a: P, b: P, c: P) { unavailable("ALTER TABLE") }
    sqlite3AlterFinishAddColumn(a: P, b: P) { unavailable("ALTER TABLE") }
    sqlite3AlterBeginAddColumn(a: P, b: P) { unavailable("ALTER TABLE") }
    sqlite3AlterRenameColumn(a: P, b: P, c: P, d: P) { unavailable("ALTER TABLE") }
    sqlite3AlterDropColumn(a: P, b: P, c: P) { unavailable("ALTER TABLE") }
    sqlite3AlterAddConstraint(a: P, b: P, c: P, d: P, e: P, f: c_int, g: P) {
        unavailable("ALTER TABLE")
    }
    sqlite3AlterDropConstraint(a: P, b: P, c: P, d: P) { unavailable("ALTER TABLE") }
    sqlite3AlterSetNotNull(a: P, b: P, c: P, d: P) { unavailable("ALTER TABLE") }
    sqlite3Analyze(a: P, b: P, c: P) { unavailable("ANALYZE") }
    sqlite3Reindex(a: P, b: P, c: P) { unavailable("REINDEX") }
    // The parse of `CREATE VIRTUAL TABLE` begins no table, so nothing is declared.
    sqlite3VtabBeginParse(a: P, b: P, c: P, d: P, e: c_int) {}
    sqlite3VtabArgInit(a: P) {}
    sqlite3VtabArgExtend(a: P, b: P) {}
    sqlite3VtabFinishParse(a: P, b: P) {}
}

#[cfg(test)]
mod tests;
