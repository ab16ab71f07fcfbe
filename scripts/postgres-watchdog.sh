#!/usr/bin/env bash
# Stops a test's PostgreSQL cluster once the test process is gone.
#
#   scripts/postgres-watchdog.sh OWNER_PID OWNER_START_TIME CLUSTER_DIR
#
# `stackpack_test_support::servers::Postgres` starts one per cluster, in a process
# group of its own. A test stopped normally stops its cluster when the `Postgres`
# is dropped (`pg_ctl stop`); one killed outright (SIGKILL, a nextest timeout) runs
# no Drop, and `pg_ctl` detached the server from the test's session, so without
# this the cluster would run until the machine stops. Once OWNER_PID is gone (its
# start time, OWNER_START_TIME, field 22 of /proc/PID/stat, is compared too, so a
# recycled process id does not keep the cluster alive; the owner passes it because
# on a loaded machine this script may start only after the owner was killed), this
# sends the postmaster of CLUSTER_DIR/data SIGQUIT (PostgreSQL's immediate
# shutdown) and removes CLUSTER_DIR. It exits by itself as soon as CLUSTER_DIR/data
# is gone (the test stopped its cluster and removed the folder).
set -uo pipefail
[ $# -eq 3 ] || { sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
owner=$1
owner_started=$2
dir=$3
data=$dir/data

started() { # PID: its start time (field 22 of /proc/PID/stat), empty when gone
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # The command name (field 2) may hold spaces: count fields after its ')'.
  echo "${stat##*) }" | cut -d' ' -f20
}

while [ -d "$data" ] && [ "$(started "$owner")" = "$owner_started" ]; do
  sleep 1
done
[ -d "$data" ] || exit 0

# The owner is gone and its cluster is not: the postmaster's pid is the first line
# of postmaster.pid; make sure it is a postgres process before signalling it.
postmaster=$(head -n1 "$data/postmaster.pid" 2>/dev/null)
if [ -n "$postmaster" ] && tr '\0' ' ' < "/proc/$postmaster/cmdline" 2>/dev/null | grep -q postgres; then
  kill -QUIT "$postmaster" 2>/dev/null
  for _ in $(seq 100); do
    kill -0 "$postmaster" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$postmaster" 2>/dev/null && kill -KILL "$postmaster" 2>/dev/null
fi
# Only a folder that is a cluster's (initdb wrote PG_VERSION) is removed.
[ -f "$data/PG_VERSION" ] && rm -rf -- "$dir"
exit 0
