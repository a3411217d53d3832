#!/bin/bash
# Job control as an interactive user would drive it: background jobs, wait -n,
# kill %N, a job's status, and a pipeline.
set -m
sleep 5 &
sleep 0.2 &
wait -n
kill %1
wait
(exit 3) &
wait $!
echo "status $?"
echo one two | tr a-z A-Z | cat
