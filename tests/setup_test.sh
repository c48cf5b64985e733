#!/usr/bin/env bash
# ./test's prerequisite check fails early and clearly (tests/README.md): with one tool taken
# off PATH, `./test --check PART` stops within seconds, naming the tool, what needs it and the
# command that installs it. ./test runs this after its own check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A directory of symbolic links to every command on PATH except `$1`.
path_without() {
    local dir="$tmp/without-$1" d f n
    mkdir -p "$dir"
    IFS=: read -ra dirs <<<"$PATH"
    for d in "${dirs[@]}"; do
        for f in "$d"/*; do
            n=${f##*/}
            [ "$n" = "$1" ] || [ -e "$dir/$n" ] || ln -s "$f" "$dir/$n" 2>/dev/null || true
        done
    done
    echo "$dir"
}

# expect_failure TOOL PART MESSAGE: without TOOL, `./test --check PART` exits 1 in under 10 s
# and prints MESSAGE.
expect_failure() {
    local tool=$1 part=$2 message=$3 bin status=0 start
    bin=$(path_without "$tool")
    start=$SECONDS
    env PATH="$bin" TEIL_TEST_NO_INSTALL=1 bash ./test --check "$part" >"$tmp/out" 2>"$tmp/err" || status=$?
    if [ "$status" != 1 ]; then
        echo "setup_test: without $tool, ./test --check $part exited $status, not 1" >&2
        cat "$tmp/err" >&2
        exit 1
    fi
    if ! grep -qF -- "$message" "$tmp/err"; then
        echo "setup_test: without $tool, ./test --check $part did not say: $message" >&2
        cat "$tmp/err" >&2
        exit 1
    fi
    if [ $((SECONDS - start)) -ge 10 ]; then
        echo "setup_test: without $tool, ./test --check $part took $((SECONDS - start)) s" >&2
        exit 1
    fi
}

expect_failure npm --web \
    'error: ./test needs `npm` for the playground'"'"'s build (npm ci from web/package-lock.json); it is not installed. Install it: sudo apt-get install npm'
expect_failure cargo --python \
    'error: ./test needs `cargo` for every part (install Rust with rustup: https://rustup.rs)'
expect_failure python3 --python 'Install it: sudo apt-get install python3'
# With everything on PATH, the check of the Rust part passes.
TEIL_TEST_NO_INSTALL=1 bash ./test --check --rust >/dev/null
echo "setup_test: ./test's prerequisite check fails early and clearly (3 cases)"
