#!/usr/bin/env bash
# moto, the emulator of the AWS cloud API, on this machine's loopback: the "customer's
# AWS account" the example stacks apply against in the demo and the tests. It speaks
# the AWS APIs (EC2/VPC, S3, IAM, EKS, STS, ...) on one port; point the AWS provider's
# `endpoints {}` (the stacks' `aws_endpoint` input) at the URL it prints.
#
#   scripts/moto.sh start DIR [PORT]   start it on 127.0.0.1:PORT (default: a free port),
#                                      wait until it answers, print its URL; writes
#                                      DIR/moto.pid, DIR/moto.url and DIR/moto.log
#   scripts/moto.sh stop DIR           stop the one started with DIR (TERM, then KILL)
#   scripts/moto.sh url DIR            print its URL
#   scripts/moto.sh reset DIR          forget every resource it holds
#
# AWS-managed IAM policies (arn:aws:iam::aws:policy/...) exist because it starts with
# MOTO_IAM_LOAD_MANAGED_POLICIES=true. Every account id and credential is accepted;
# resources belong to account 123456789012 unless MOTO_ACCOUNT_ID says otherwise.
# It runs as scripts/moto-server.py: moto with two of its answers corrected to AWS's own
# (see there), so that an unchanged stack plans no change.
# With MOTO_OWNER_PID set, it stops by itself once that process is gone (the tests set
# their own, so a killed test leaves no emulator behind).
# Needs the PyPI package moto[server] (scripts/install-test-deps.sh installs it).
set -euo pipefail
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '6,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
command=$1
dir=$2

alive() { # PID: true when it is the moto server we started
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q 'moto-server.py'
}
running() { # PID of our own child: true until it exits (its command line may still be changing)
  kill -0 "$1" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
}

case "$command" in
  start)
    mkdir -p "$dir"
    if [ -f "$dir/moto.pid" ] && alive "$(cat "$dir/moto.pid")"; then
      echo "moto.sh: already running (pid $(cat "$dir/moto.pid")); stop it first: $0 stop $dir" >&2
      exit 1
    fi
    port=${3:-$($PYTHON -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    url=http://127.0.0.1:$port
    # Its own session, so that it outlives this script and a terminal's Ctrl-C.
    MOTO_IAM_LOAD_MANAGED_POLICIES=true setsid "$PYTHON" "$here/moto-server.py" -H 127.0.0.1 -p "$port" \
      < /dev/null > "$dir/moto.log" 2>&1 &
    pid=$!
    echo "$pid" > "$dir/moto.pid"
    # Ready when it answers its own API; give up after 60 s or when it dies.
    for _ in $(seq 1 600); do
      if ! running "$pid"; then
        echo "moto.sh: moto exited before answering on $url; its log:" >&2
        cat "$dir/moto.log" >&2
        rm -f "$dir/moto.pid"
        exit 1
      fi
      if $PYTHON -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/moto-api/data.json", timeout=1)' "$url" 2>/dev/null; then
        echo "$url" > "$dir/moto.url"
        echo "$url"
        exit 0
      fi
      sleep 0.1
    done
    echo "moto.sh: moto did not answer on $url within 60 s" >&2
    kill "$pid" 2>/dev/null || true
    rm -f "$dir/moto.pid"
    exit 1
    ;;
  stop)
    [ -f "$dir/moto.pid" ] || exit 0
    pid=$(cat "$dir/moto.pid")
    if alive "$pid"; then
      kill -TERM "$pid"
      for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
      alive "$pid" && kill -KILL "$pid"
    fi
    rm -f "$dir/moto.pid" "$dir/moto.url"
    ;;
  url)
    cat "$dir/moto.url"
    ;;
  reset)
    $PYTHON -c 'import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/moto-api/reset", method="POST"), timeout=10)' "$(cat "$dir/moto.url")"
    ;;
  *)
    usage
    ;;
esac
