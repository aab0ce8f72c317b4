#!/usr/bin/env bash
# Fails when git tracks a compiled program (an ELF, Mach-O or PE file) or a
# file larger than MAX_BYTES: build output belongs under the ignored bin/
# and dist/, and every clone would carry such a file for ever.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MAX_BYTES=${MAX_BYTES:-2000000}
status=0
while IFS= read -r -d '' f; do
	[[ -f $f ]] || continue
	size=$(stat -c %s -- "$f")
	if ((size > MAX_BYTES)); then
		echo "tracked file $f is $size bytes (more than $MAX_BYTES)"
		status=1
	fi
	magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
	case $magic in
	7f454c46 | cffaedfe | cefaedfe | feedface | feedfacf | 4d5a*)
		echo "tracked file $f is a compiled program"
		status=1
		;;
	esac
done < <(git ls-files -z)
exit $status
