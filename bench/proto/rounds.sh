#!/bin/sh
# Interleaved rounds over every prototype design, so the shared machine's drift hits all alike.
#   sh bench/proto/rounds.sh a|b ROUNDS SECONDS    (after npx tsc -p .; needs /tmp/spawn-helper:
#   cc -O2 -o /tmp/spawn-helper bench/proto/spawn-helper.c)
set -u
kind=$1; rounds=$2; secs=$3
M="node dist/bench/proto/measure.js"
H="node dist/bench/proto/http-server.js --port {port}"
N="node dist/bench/proto/net-server.js --port {port}"
for r in $(seq 1 "$rounds"); do
  echo "# round $r $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$kind" = a ]; then
    $M http-ok-1proc ok 32 "$secs" -- $H --mode ok
    $M net-ok-1proc ok 32 "$secs" -- $N --mode ok
    $M http-1proc a 32 "$secs" -- $H
    $M http-cluster2-rr a 32 "$secs" -- $H --workers 2
    $M http-cluster2-none a 32 "$secs" -- $H --workers 2 --sched none
    $M http-cluster3-rr a 32 "$secs" -- $H --workers 3
    $M net-1proc a 32 "$secs" -- $N
    $M net-cluster2-rr a 32 "$secs" -- $N --workers 2
    $M net-cluster2-none a 32 "$secs" -- $N --workers 2 --sched none
    $M net-cluster3-rr a 32 "$secs" -- $N --workers 3
  else
    $M net-pipes b 8 "$secs" -- $N --spawn pipes
    $M net-ignore b 8 "$secs" -- $N --spawn ignore
    $M net-helper-node b 8 "$secs" -- $N --spawn helper-node
    $M net-helper-c b 8 "$secs" -- $N --spawn helper-c
    $M net-helper-c-x2 b 8 "$secs" -- $N --spawn helper-c:2
    $M net-cluster2-helper-c b 8 "$secs" -- $N --spawn helper-c --workers 2
    $M http-pipes b 8 "$secs" -- $H --spawn pipes
    $M http-helper-c b 8 "$secs" -- $H --spawn helper-c
    $M http-cluster2-pipes b 8 "$secs" -- $H --spawn pipes --workers 2
    $M http-cluster2-helper-c b 8 "$secs" -- $H --spawn helper-c --workers 2
  fi
done
