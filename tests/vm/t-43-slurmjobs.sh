#!/bin/sh
# Jobs as Slurm names them: the cgroups Slurm 22.05's cgroup/v2 plugin
# makes (docs/slurm.md), made here as slurmd makes them (its job, step,
# user and slurm directories root's, the tasks' given to the job's user),
# with uid 65534's processes in two tasks of step 0 and of the batch step,
# and a root process in step 0's slurmstepd cgroup (first: the step has no
# user until the user's are seen, never root's). A job is its Slurm
# job id, step and user in every view, a step's tasks one series: TOTALS,
# Prometheus, Supermon, AGG cgroup (magnet-top -m) count each exactly;
# the user's own TOTALS lists its steps; a user's own subtree named like
# a job (job_99/step_0/user/task_0 under its delegated cgroup) is a plain
# path.
. ./lib.sh

log=/tmp/magnetd-slurm.log
cg=/sys/fs/cgroup
scope=$cg/system.slice/slurmstepd.scope
job=$scope/job_42
user=$cg/t43u65534
prom=127.0.0.1:8653 mon=127.0.0.1:2709

load
magnet-ctl probe add kprobe __x64_sys_getpid >/dev/null || fail "probe add"
mkdir -p $job/step_0/user/task_0 $job/step_0/user/task_1 $job/step_0/slurm \
	$job/step_batch/user/task_0 || fail "mkdir the job's cgroups"
# Slurm chowns a task's directory to the job's user (common_cgroup_instantiate).
chown 65534:65534 $job/step_0/user/task_0 $job/step_0/user/task_1 \
	$job/step_batch/user/task_0 || fail "chown the tasks"
# A user's own subtree, delegated, and a job lookalike in it.
mkdir $user || fail "mkdir $user"
chown 65534:65534 $user $user/cgroup.procs $user/cgroup.threads \
	$user/cgroup.subtree_control || fail "chown $user"
asuser 65534 mkdir -p $user/job_99/step_0/user/task_0 || fail "the user's lookalike"

# The directories made, deepest first: gone when the test ends.
cleanup() {
	for d in $job/step_0/user/task_0 $job/step_0/user/task_1 $job/step_0/user \
		$job/step_0/slurm $job/step_0 $job/step_batch/user/task_0 \
		$job/step_batch/user $job/step_batch $job $scope $cg/system.slice \
		$user/job_99/step_0/user/task_0 $user/job_99/step_0/user \
		$user/job_99/step_0 $user/job_99 $user; do
		rmdir "$d" 2>/dev/null
	done
}

magnetd -f --prometheus $prom --supermon $mon >$log 2>&1 &
pid=$! rc=0
trap 'rc=$?; kill $pid 2>/dev/null; wait $pid 2>/dev/null
	[ $rc = 0 ] || failed_log $log; cleanup' EXIT
magnetd_up $log

# N getpid in cgroup DIR as UID (root moves it there, as slurmstepd does).
fire() { # dir uid n
	sh -c "echo \$\$ >$1/cgroup.procs && exec asuser $2 mgtest fire-n $3" >/dev/null ||
		fail "fire $3 in $1 as $2"
}
# An AGG cgroup client over the workload: magnet-top, machine lines, one
# interval long enough for all of it.
magnet-top -m -N -n 1 -d 10 >/tmp/top 2>&1 &
top=$!
mdtest wait-stat aggregators 3 30 >/dev/null || fail "magnet-top's AGGs: $(cat /tmp/top)"

s0=$(stat -c %i $job/step_0) sd=$(stat -c %i $job/step_0/slurm)
sb=$(stat -c %i $job/step_batch) lk=$(stat -c %i $user/job_99/step_0/user/task_0)
totals() { mdtest cmd TOTALS; }	# as root, on the Unix socket: every job
want() { # line: TOTALS has it, once magnetd has read the records
	i=0
	until totals | grep -qxF -- "$1"; do
		i=$((i + 1))
		[ $i -lt 50 ] || fail "TOTALS without '$1': $(totals | grep '^job')"
		sleep 0.2
	done
}

# slurmstepd first, as Slurm starts it: root's threads alone make the step
# nobody's yet (no uid), not root's, in TOTALS and Prometheus.
fire $job/step_0/slurm 0 30
nouid="job $sd /system.slice/slurmstepd.scope/job_42/step_0/slurm events=30 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=0 slurm_stepd=1"
want "$nouid"
sleep 1	# its TASK record handled too, surely
totals | grep -qxF -- "$nouid" || fail "slurmstepd alone: $(totals | grep "^job $sd ")"
MDTEST_ADDR=$prom mdtest http /metrics >/tmp/scrape 2>&1 || fail "scrape: $(cat /tmp/scrape)"
grep -q 'uid="0"' /tmp/scrape && fail "a step as root's: $(grep 'uid="0"' /tmp/scrape)"
echo "slurmstepd alone: no uid"

fire $job/step_0/user/task_0 65534 1000
fire $job/step_0/user/task_1 65534 500
fire $job/step_batch/user/task_0 65534 70
fire $user/job_99/step_0/user/task_0 65534 40
# A step's two tasks, one job line: the step's cgroup, its Slurm words.
want "job $s0 /system.slice/slurmstepd.scope/job_42/step_0 events=1500 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=0 uid=65534"
want "job $sd /system.slice/slurmstepd.scope/job_42/step_0/slurm events=30 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=0 slurm_stepd=1 uid=65534"
want "job $sb /system.slice/slurmstepd.scope/job_42/step_batch events=70 sock_bytes=0 exported=1 intr=0 lost_fair=0 slurm_job_id=42 slurm_step=batch uid=65534"
# The lookalike: its path, as any cgroup.
want "job $lk /t43u65534/job_99/step_0/user/task_0 events=40 sock_bytes=0 exported=1 intr=0 lost_fair=0"
totals | grep -q "slurmstepd.scope/.*/task_" && fail "a task's cgroup has a job line of its own: $(totals | grep '^job')"
echo "TOTALS: $(totals | grep -c 'slurm_job_id=42') series of job 42"

# The user's own TOTALS: its steps (owner: the threads of the step's cgroups).
MDTEST_UID=65534 mdtest cmd TOTALS >/tmp/own || fail "TOTALS as 65534"
grep -q "^job $s0 .* slurm_job_id=42 slurm_step=0 uid=65534$" /tmp/own ||
	fail "uid 65534 does not see its step: $(cat /tmp/own)"
grep -q "^job $lk " /tmp/own || fail "uid 65534 does not see its own cgroup: $(cat /tmp/own)"

# Prometheus: one series per step, labelled.
MDTEST_ADDR=$prom mdtest http /metrics >/tmp/scrape 2>&1 || fail "scrape: $(cat /tmp/scrape)"
for l in \
	'magnet_job_events_total{cgroup="/system.slice/slurmstepd.scope/job_42/step_0",slurm_job_id="42",slurm_step="0",uid="65534"} 1500' \
	'magnet_job_events_total{cgroup="/system.slice/slurmstepd.scope/job_42/step_0/slurm",slurm_job_id="42",slurm_step="0",slurm_stepd="1",uid="65534"} 30' \
	'magnet_job_events_total{cgroup="/system.slice/slurmstepd.scope/job_42/step_batch",slurm_job_id="42",slurm_step="batch",uid="65534"} 70' \
	'magnet_job_events_total{cgroup="/t43u65534/job_99/step_0/user/task_0"} 40'; do
	tr -d '\r' </tmp/scrape | grep -qxF "$l" ||
		fail "no '$l' in /metrics: $(grep '^magnet_job_events' /tmp/scrape)"
done
echo "Prometheus: $(grep -c '^magnet_job_events_total{.*slurm_job_id="42"' /tmp/scrape) series of job 42"

# Supermon: the step's entry with its Slurm variables.
MDTEST_ADDR=$mon mdtest mon S >/tmp/mon 2>&1 || fail "supermon: $(cat /tmp/mon)"
grep -qF "(job (cgroup $s0) (path \"/system.slice/slurmstepd.scope/job_42/step_0\") (events 1500) (sock_bytes 0) (slurm_job_id 42) (slurm_step \"0\") (uid 65534))" /tmp/mon ||
	fail "Supermon: $(cat /tmp/mon)"

wait $top || fail "magnet-top: $(cat /tmp/top)"
# AGG cgroup (magnet-top's jobs view): the step's tasks in one entry, over
# the intervals; the Slurm fields after the path.
sum=$(awk -F'\t' -v id="$s0" '$1 == "job" && $2 == id && $6 == 42 && $7 == "0" && $8 == 65534 { n += $4 }
	END { print n + 0 }' /tmp/top)
[ "$sum" = 1500 ] || fail "magnet-top: step 0 counted $sum, not 1500: $(grep '^job' /tmp/top)"
grep -q "^job	[0-9]*	/system.slice/slurmstepd.scope/job_42/step_0/user/task_" /tmp/top &&
	fail "magnet-top shows a task alone: $(grep '^job' /tmp/top)"
echo "magnet-top: step 0's 1500 events in its entry: $(grep "^job	$s0	" /tmp/top | head -n 1)"
