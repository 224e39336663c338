#!/usr/bin/env bash
# check_tree.sh - checks on the tracked files that need no build: fails if
#   - a committed benchmark result (docs/benchmarks/) holds an absolute path
#     outside the system's own (a build or scratch directory: results carry
#     repository-relative paths, bench/ writes them so);
#   - a tracked file refers to what is not in the repository or not part of
#     the code: numbered issues, work sessions, engineers, branches named in
#     prose, design or style documents kept elsewhere, a shared directory
#     outside the tree, or files under /work.
# Run from anywhere in the repository; scripts/test.sh runs it first.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

fail=0
check() { # title, then git grep arguments
	local title=$1 out
	shift
	out=$(git grep -nI "$@" || true)
	if [ -n "$out" ]; then
		echo "check_tree.sh: $title:" >&2
		echo "$out" >&2
		fail=1
	fi
}

# Absolute paths in committed results.  /usr/bin/python3, /proc/stat,
# /run/slipstream/... name the system's own files and are fine.
check "absolute path in a committed result" \
	-E '(^|[^[:alnum:]_.~-])/(work|tmp|home|root|mnt|srv|scratch)/' -- 'docs/benchmarks/**'

# References to things outside the repository.  This file holds the
# patterns and is left out.
ORD='first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth'
ORD="$ORD|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth"
ORD="$ORD|twentieth|twenty-[a-z]+|thirtieth|thirty-[a-z]+"
PATTERNS=(
	'\bissues? #?[0-9]+'                               # "issue 5", "issue 6 item 2"
	"\\b(this|that|last|previous|next|earlier|later|work|$ORD)('s)? sessions?\\b"
	'\bengineers?\b'
	'\b(DESIGN|STYLE)\.md\b'
	'\.\./shared\b'
	'\bbranch(es)? `'                                  # a branch named in prose
	'(^|[^[:alnum:]_.~-])/work/'                       # the machine's work tree
)
for p in "${PATTERNS[@]}"; do
	check "reference outside the repository ($p)" -iE "$p" -- . ':!scripts/check_tree.sh'
done

if [ "$fail" -ne 0 ]; then
	echo "check_tree.sh: FAILED" >&2
	exit 1
fi
echo "check_tree.sh: ok"
