#!/usr/bin/env bash
# The VS Code extension's checks, for CI: install the locked dependencies, run the TextMate
# grammar tests (every token of the test files, taken from the corpus, has its scope; every
# keyword and operator is covered), and build the .vsix.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm test
npm run package
