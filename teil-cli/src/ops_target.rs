//! `teil ops-target [--plant BUG] [--exit-after N]` (hidden, test-only): a `teil-target/1` target that runs the
//! ops/1 form with TeIL's reference evaluator (`teil_fuzz::ops_eval`), optionally with one
//! planted bug. It lets `cargo test` show that `teil fuzz --target` finds and shrinks bugs in
//! another implementation without Python; it lives in the `teil` binary so that the tests of
//! this crate can start it by path.

use crate::input::fail;
use teil_fuzz::ops_eval::{self, Bug};

/// `exit_after`: stop after that many answers, as a target that crashes midway (tests).
pub fn ops_target(plant: Option<&str>, exit_after: Option<u64>) -> u8 {
    let bug = match plant.map(|name| Bug::from_name(name).ok_or(name)) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(name)) => {
            let names: Vec<&str> = Bug::ALL.iter().map(|b| b.name()).collect();
            fail(&format!(
                "`--plant {name}` is not a planted bug; the bugs are {}",
                names.join(", ")
            ));
            return 2;
        }
    };
    match ops_eval::serve(
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        bug,
        exit_after,
    ) {
        Ok(()) => 0,
        Err(e) => {
            fail(&format!("the connection to the harness failed: {e}"));
            2
        }
    }
}
