#!/usr/bin/env bash
# Runs a command (and every process it starts) on the processor time the
# rest of the machine leaves: the checks and the other packages' lane
# beside the real-pods suite, whose pods run in the real node's cgroup,
# where nice does not reach.
#
# As root, the command runs in a CPU cgroup of low weight (cgroup v1
# cpu.shares, or v2 cpu.weight), an eighth of a default process's:
# while the real node's pods, the kubelet or a build on the way to them
# want the processors, they get them; what they leave, the command gets
# in full. Anyone else, or a machine without a writable CPU cgroup, gets
# nice 10 alone.
#
# Usage: hack/background.sh COMMAND [ARG...]
#        hack/background.sh --pid PID   (moves a running process, such as
#                                        a shell running a lane)
set -euo pipefail

name=app-operator-background

# join_cgroup PID: moves PID (and so whatever it starts from then on) into
# the low-weight cgroup.
join_cgroup() {
  local dir
  if [[ -w /sys/fs/cgroup/cpu/cgroup.procs ]]; then
    dir=/sys/fs/cgroup/cpu/$name
    mkdir -p "$dir" && echo 128 >"$dir/cpu.shares" && echo "$1" >"$dir/cgroup.procs"
  elif [[ -w /sys/fs/cgroup/cgroup.procs ]] && grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    dir=/sys/fs/cgroup/$name
    mkdir -p "$dir" && echo 12 >"$dir/cpu.weight" && echo "$1" >"$dir/cgroup.procs"
  else
    return 1
  fi
}

# background PID: the cgroup where it can, nice 10 in any case.
background() {
  if [[ $(id -u) -eq 0 ]]; then
    join_cgroup "$1" 2>/dev/null || echo "background: no writable CPU cgroup; nice 10 alone" >&2
  fi
  renice -n 10 -p "$1" >/dev/null
}

if [[ ${1:-} == --pid ]]; then
  background "${2:?usage: background.sh --pid PID}"
  exit
fi
background "$$"
exec "$@"
