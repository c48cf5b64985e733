//! TeIL reference interpreter (the oracle) and fast evaluator. See issue 3.
