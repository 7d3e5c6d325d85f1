#!/bin/bash
# throttle-split.sh SECONDS NEIGHBOURS THREADS: runs THREADS spinning shells
# under a 20 ms / 100 ms CFS quota in a cgroup of their own (v1 cpu, with
# twins in cpuacct and the v2 hierarchy, on a hybrid node, as root), and
# NEIGHBOURS spinning shells without a quota in another, for SECONDS, and
# prints what the kernel says of the throttled ones: summed runqueue wait
# and run time (/proc/<pid>/schedstat), throttled time and periods
# (cpu.stat) and PSI (cpu.pressure of the v2 twin). SHARES sets both
# cgroups' cpu.shares (default 1024), PIN a CPU every shell is pinned to.
# The README's split of the wait quotes its output.
set -eu
T=${1:-10} NB=${2:-0} NT=${3:-1}
name=schedstatd-split-$$
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	for h in cpu cpuacct unified; do rmdir "/sys/fs/cgroup/$h/$name" "/sys/fs/cgroup/$h/$name-nb" 2>/dev/null || true; done
}
trap cleanup EXIT
for h in cpu cpuacct unified; do mkdir "/sys/fs/cgroup/$h/$name" "/sys/fs/cgroup/$h/$name-nb"; done
echo 100000 > "/sys/fs/cgroup/cpu/$name/cpu.cfs_period_us"
echo 20000 > "/sys/fs/cgroup/cpu/$name/cpu.cfs_quota_us"
echo "${SHARES:-1024}" > "/sys/fs/cgroup/cpu/$name/cpu.shares"
echo "${SHARES:-1024}" > "/sys/fs/cgroup/cpu/$name-nb/cpu.shares"
spin() { # spin CGROUP: a spinning shell in CGROUP of every hierarchy
	sh -c "for h in cpu cpuacct unified; do echo \$\$ > /sys/fs/cgroup/\$h/$1/cgroup.procs; done; exec ${PIN:+taskset -c $PIN} sh -c 'while :; do :; done'" &
	pids+=($!)
}
for _ in $(seq "$NT"); do spin "$name"; done
spinners=("${pids[@]}")
for _ in $(seq "$NB"); do spin "$name-nb"; done
sleep 1
read_all() { # wait run throttled_ns periods throttled_periods psi_some_us psi_full_us
	local w=0 r=0 a b c
	for p in "${spinners[@]}"; do read -r a b c < "/proc/$p/schedstat"; w=$((w + b)); r=$((r + a)); done
	echo "$w $r $(awk '/^throttled_time /{t=$2} /^nr_periods /{p=$2} /^nr_throttled /{n=$2} END{print t, p, n}' "/sys/fs/cgroup/cpu/$name/cpu.stat") \
		$(awk '{split($5, v, "="); printf "%s ", v[2]}' "/sys/fs/cgroup/unified/$name/cpu.pressure")"
}
read -r -a A <<< "$(read_all)"; t0=$(date +%s.%N)
sleep "$T"
read -r -a B <<< "$(read_all)"; t1=$(date +%s.%N)
awk -v wall="$(echo "$t1 - $t0" | bc)" -v nt="$NT" -v w=$((B[0] - A[0])) -v r=$((B[1] - A[1])) -v tt=$((B[2] - A[2])) \
	-v np=$((B[3] - A[3])) -v nth=$((B[4] - A[4])) -v ps=$((B[5] - A[5])) -v pf=$((B[6] - A[6])) 'BEGIN {
	printf "wall %.2fs threads %d: wait %.3fs run %.3fs throttled %.3fs (%d of %d periods) psi some %.3fs full %.3fs; wait - throttled %.3fs\n",
		wall, nt, w / 1e9, r / 1e9, tt / 1e9, nth, np, ps / 1e6, pf / 1e6, (w - tt) / 1e9 }'
