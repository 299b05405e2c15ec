#!/bin/bash
# usage: exporter/testdata/exporter-cost.sh BIN INTERVAL SECONDS (BIN: a joulemark binary)
# Prints %core and write syscalls/s of an exporter on 8 simulated GPUs with one active run, no scrapes
BIN=$1; IV=$2; DUR=$3
D=$(mktemp -d); PORT=$((20000 + RANDOM % 20000))
TOKEN=cost-test-token-0123456789
JOULEMARK_API_TOKEN=$TOKEN $BIN exporter --gpu=sim --gpus=8 --sample.interval=$IV --storage.path=$D/data --web.listen-address=127.0.0.1:$PORT --host.powercap-path= > $D/log 2>&1 &
PID=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:$PORT/-/ready >/dev/null && break; sleep 0.2; done
curl -sf -X POST -H "Authorization: Bearer $TOKEN" http://127.0.0.1:$PORT/api/v1/runs/cost-1/phases/idle >/dev/null || echo "phase POST failed"
sleep 3
read_cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
read_w() { awk '/^syscw/{print $2}' /proc/$PID/io; }
c0=$(read_cpu); w0=$(read_w); t0=$(date +%s.%N)
sleep $DUR
c1=$(read_cpu); w1=$(read_w); t1=$(date +%s.%N)
TCK=$(getconf CLK_TCK)
echo "$(basename $BIN) interval=$IV: $(echo "($c1-$c0)/$TCK/($t1-$t0)*100" | bc -l | xargs printf '%.2f')% of a core, $(echo "($w1-$w0)/($t1-$t0)" | bc -l | xargs printf '%.1f') write syscalls/s"
kill $PID; wait $PID 2>/dev/null; rm -rf $D
