//! Where a campaign's time goes: the time of each phase of checking a program, summed over the
//! worker threads (`teil fuzz --profile-time`, spec/fuzzing.md). It is a measurement for
//! people, never an input of a decision: no check depends on it.

use std::time::{Duration, Instant};

/// One phase of a self-checking campaign, in the order a program goes through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Drawing the program from the generator.
    Generate,
    /// Type-checking it (`teil::check`).
    Check,
    /// The oracle's run, the reference result.
    Oracle,
    /// The fast evaluator's run and its comparison.
    Fast,
    /// Metamorphic variants: printing and parsing again, Core-TeIL, law chains, each evaluated.
    Variants,
    /// The ill-typed mutant through the checker.
    Mutant,
    /// Lowering to the loop IR, its passes included, at every padding multiple and mode.
    Lower,
    /// The translation validator.
    Validate,
    /// The C compiler, on the batch's translation unit.
    Compile,
    /// The compiled driver running the batch's kernels.
    Driver,
    /// Comparing the kernels' results (and their judgements, for lifted kernels).
    Compare,
    /// Shrinking failing programs.
    Shrink,
}

impl Phase {
    pub const ALL: [Phase; 12] = [
        Phase::Generate,
        Phase::Check,
        Phase::Oracle,
        Phase::Fast,
        Phase::Variants,
        Phase::Mutant,
        Phase::Lower,
        Phase::Validate,
        Phase::Compile,
        Phase::Driver,
        Phase::Compare,
        Phase::Shrink,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Generate => "generation",
            Phase::Check => "type checking",
            Phase::Oracle => "oracle",
            Phase::Fast => "fast evaluator",
            Phase::Variants => "metamorphic variants",
            Phase::Mutant => "ill-typed mutant",
            Phase::Lower => "lowering and passes",
            Phase::Validate => "translation validation",
            Phase::Compile => "C compiler",
            Phase::Driver => "driver (kernels)",
            Phase::Compare => "comparing C results",
            Phase::Shrink => "shrinking",
        }
    }
}

/// Time per [`Phase`], summed over threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    time: [Duration; Phase::ALL.len()],
}

impl Profile {
    /// Runs `f`, adding its time to `phase`.
    pub fn time<T>(&mut self, phase: Phase, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add_time(phase, start.elapsed());
        out
    }

    pub fn add_time(&mut self, phase: Phase, d: Duration) {
        self.time[phase as usize] += d;
    }

    pub fn get(&self, phase: Phase) -> Duration {
        self.time[phase as usize]
    }

    pub fn add(&mut self, other: &Profile) {
        for (t, o) in self.time.iter_mut().zip(other.time) {
            *t += o;
        }
    }

    /// The time of all phases.
    pub fn total(&self) -> Duration {
        self.time.iter().sum()
    }

    /// The profile as a table: each phase's time, its share of all phases, and its time per
    /// program (`programs` checked), the largest first; phases that took no time are left out.
    pub fn table(&self, programs: u64) -> String {
        let total = self.total().as_secs_f64();
        let mut rows: Vec<(Phase, f64)> = Phase::ALL
            .iter()
            .map(|&p| (p, self.get(p).as_secs_f64()))
            .filter(|&(_, s)| s > 0.0)
            .collect();
        rows.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut out = format!(
            "{:<24} {:>10} {:>7} {:>14}\n",
            "phase", "seconds", "share", "ms per program"
        );
        for (phase, s) in rows {
            let share = if total > 0.0 { 100.0 * s / total } else { 0.0 };
            let per = 1e3 * s / programs.max(1) as f64;
            out += &format!("{:<24} {s:>10.3} {share:>6.1}% {per:>14.3}\n", phase.name());
        }
        out += &format!(
            "{:<24} {total:>10.3} {:>6.1}% {:>14.3}\n",
            "all phases (thread time)",
            100.0,
            1e3 * total / programs.max(1) as f64
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_and_print_largest_first() {
        let mut p = Profile::default();
        p.add_time(Phase::Oracle, Duration::from_millis(300));
        p.add_time(Phase::Compile, Duration::from_millis(700));
        let mut q = Profile::default();
        assert_eq!(q.time(Phase::Oracle, || 7), 7);
        q.add_time(Phase::Oracle, Duration::from_millis(100));
        p.add(&q);
        assert!(p.get(Phase::Oracle) >= Duration::from_millis(400));
        assert_eq!(p.get(Phase::Driver), Duration::ZERO);
        let t = p.table(10);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].starts_with("C compiler"), "{t}");
        assert!(lines[1].contains("63.6%"), "{t}");
        assert!(lines[2].starts_with("oracle"), "{t}");
        assert!(!t.contains("driver"), "{t}");
        assert!(lines[3].starts_with("all phases"), "{t}");
    }
}
