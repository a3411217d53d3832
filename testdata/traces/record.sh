#!/usr/bin/env bash
# Records the workloads of testdata/traces with `tasklist trace`, from the programs in src/:
# each NAME.strace is one workload's trace. Needs root (unshare --pid), strace, a C compiler,
# make, python3 and go. Then `go test ./replay/ -run TestTraces -update` rewrites the replay
# summaries (NAME.golden) from the new traces.
#
# usage: [OUT=DIR] testdata/traces/record.sh [NAME...]   (all workloads by default; OUT, where
# the traces go, is testdata/traces by default)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; out="${OUT:-$here}"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

tasklist="$work/tasklist"
(cd "$root" && go build -o "$tasklist" ./cmd/tasklist)
cp -r "$here/src/." "$work/"
cc -O1 -o "$work/sem" "$work/sem.c"
cc -O1 -pthread -o "$work/threadexec" "$work/threadexec.c"
(cd "$work/goexec" && go test -c -o "$work/goexec.test" .)

# record NAME CMD...: the trace runs in the work directory, so paths in it are the same on
# every machine.
record() {
	local name=$1
	shift
	if [ ${#selected[@]} -gt 0 ] && [[ ! " ${selected[*]} " =~ " $name " ]]; then
		return
	fi
	echo "== $name: $*"
	(cd "$work" && "$tasklist" trace -o "$out/$name.strace" -- "$@") || echo "($name exited $?)"
}

selected=("$@")
record jobctl bash ./jobctl.sh
record make make -s -j2 -C make
record multiproc python3 ./multiproc.py
record sem ./sem
record threadexec ./threadexec
record goexec ./goexec.test -test.count=1
record unshare unshare --pid --fork sh -c 'sleep 0.01 & wait; echo $$'
record timeout timeout 0.2 sleep 5
record nice nice -n 5 sh -c 'sleep 0.01 & wait'
