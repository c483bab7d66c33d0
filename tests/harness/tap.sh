# TAP helpers for the harness tests: `plan N`, then `check DESCRIPTION CMD...`
# prints "ok"/"not ok" by CMD's exit status; `expect_fail DESCRIPTION
# PATTERN CMD...` passes when CMD fails and its output matches PATTERN.
# shellcheck shell=bash
tap_n=0
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

plan() {
	echo "TAP version 13"
	echo "1..$1"
}

check() {
	local desc=$1
	shift
	tap_n=$((tap_n + 1))
	if "$@" >"$scratch/out" 2>&1; then
		echo "ok $tap_n $desc"
	else
		echo "not ok $tap_n $desc"
		sed 's/^/# /' "$scratch/out"
	fi
}

expect_fail() {
	local desc=$1 pattern=$2
	shift 2
	tap_n=$((tap_n + 1))
	if "$@" >"$scratch/out" 2>&1; then
		echo "not ok $tap_n $desc # command succeeded"
	elif grep -qE "$pattern" "$scratch/out"; then
		echo "ok $tap_n $desc"
	else
		echo "not ok $tap_n $desc # output does not match /$pattern/"
	fi
	sed 's/^/# /' "$scratch/out"
}
