#!/bin/bash
# gpu-node-check.sh: what joulemark sees on a real GPU node, in one run (docs/exporter.md,
# "Checking a node"): nvidia-smi, `joulemark doctor` (json, text), the exporter on NVML for
# ~50 s with /metrics, /healthz and two lifecycles at idle whose releases must close (one
# judged from NVML's process list, one with the bench's engine-exit report), then a timed
# SIGTERM shutdown.
# Env: JOULEMARK (binary; default ./joulemark beside this script, else PATH), OUT (results;
# default /tmp/devout), PORT (default 9402), GPU (nvml; sim to try it anywhere).
set -u
cd "$(dirname "$0")"
B=${JOULEMARK:-$PWD/joulemark}; command -v "$B" >/dev/null || B=$(command -v joulemark)
O=${OUT:-/tmp/devout}; W=/tmp/devwork; mkdir -p "$O" "$W"
S=$W/summary.txt
sec() { echo; echo "===== $* ====="; }
# http METHOD PATH [HEADER]: curl where present, else bash's /dev/tcp (HTTP/1.0)
http() {
  if [ -z "${NOCURL:-}" ] && command -v curl >/dev/null; then curl -s -X "$1" ${3:+-H "$3"} -w '\n[HTTP %{http_code}]\n' "http://127.0.0.1:${PORT:-9402}$2"; return; fi
  exec 3<>/dev/tcp/127.0.0.1/${PORT:-9402} || return 1
  printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n%s\r\n' "$1" "$2" "${3:+$3$'\r\n'}" >&3
  sed '1{s/^HTTP\/[0-9.]* \([0-9]*\).*/[HTTP \1]/;p;d};1,/^\r$/d' <&3; exec 3<&-
}
{
sec env; date -u; uname -a; id; nproc; ldd --version | head -1; ldd "$B"
sec nvidia-smi; nvidia-smi
sec "nvidia-smi --query-gpu"; nvidia-smi --query-gpu=name,pci.bus_id,driver_version,vbios_version,mig.mode.current,power.draw,power.draw.average,power.draw.instant,power.limit,clocks.sm,temperature.gpu,memory.used,compute_mode --format=csv
sec version; "$B" --version
} > "$S" 2>&1
nvidia-smi -q > "$W/nvidia-smi-q.txt" 2>&1
sec "doctor json (5 s, poll 1 ms)" >> "$S"
timeout 90 "$B" doctor --gpu=${GPU:-nvml} --format json --duration 5s --poll 1ms > "$O/doctor.json" 2> "$W/doctor.err"; echo "doctor json rc=$?" >> "$S"; cat "$W/doctor.err" >> "$S"
sec "doctor text (3 s, poll 2 ms)" >> "$S"
timeout 90 "$B" doctor --gpu=${GPU:-nvml} --format text --duration 3s > "$O/doctor.txt" 2>&1; echo "doctor text rc=$?" >> "$S"; cat "$O/doctor.txt" >> "$S"
# exporter on NVML
echo "device-check-token-0123456789abcdef" > $W/tok
"$B" exporter --gpu=${GPU:-nvml} --web.listen-address=127.0.0.1:${PORT:-9402} --web.api-token-file=$W/tok --storage.path=$W/data \
  --release.hold=5s --release.max-wait=40s --nvml.retry-interval=5s > "$O/exporter.log" 2>&1 &
P=$!
U=http://127.0.0.1:${PORT:-9402}
for i in $(seq 1 100); do http GET /-/ready 2>/dev/null | grep -q 'HTTP 200' && break; sleep 0.2; done
sec "exporter ready after ~$((i/5)) s" >> "$S"
H="Authorization: Bearer $(cat $W/tok)"
{ sec healthz; http GET /healthz; sec gpus; http GET /api/v1/gpus; echo; } >> "$S" 2>&1
http GET /metrics > $W/metrics-0.prom
# a real lifecycle at idle: idle 8 s, formal 3 s, release (hold 5 s) -> must close
T0=$(date +%s.%N)
{ sec "phase posts"; http POST /api/v1/runs/dev-idle/phases/idle "$H"
sleep 8; http POST /api/v1/runs/dev-idle/phases/formal "$H"
sleep 3; http POST /api/v1/runs/dev-idle/phases/release "$H"; } > $W/posts.txt 2>&1
for k in 1 2 3 4 5 6; do sleep 2.5; http GET /metrics > $W/metrics-$k.prom; done
for k in $(seq 1 30); do st=$(http GET /api/v1/runs/dev-idle "$H"); echo "$st" | grep -q '"state":"waiting"' || break; sleep 1; done
{ sec "run dev-idle status after $(awk "BEGIN{print $(date +%s.%N) - $T0}") s"; echo "$st"
  sec "dev-idle release criteria (process basis: nvml_processes, or unverified without process queries)"; echo "$st" | grep -o '"criteria":\[[^]]*\]'; } >> "$S" 2>&1
# the same with the bench's report that the engine exited (basis engine_exit)
{ sec "phase posts (dev-exit)"; http POST /api/v1/runs/dev-exit/phases/idle "$H"
sleep 5; http POST /api/v1/runs/dev-exit/phases/formal "$H"
sleep 2; http POST /api/v1/runs/dev-exit/phases/release "$H"; sleep 1; http POST /api/v1/runs/dev-exit/engine-exited "$H"; } >> $W/posts.txt 2>&1
for k in $(seq 1 30); do st=$(http GET /api/v1/runs/dev-exit "$H"); echo "$st" | grep -q '"state":"waiting"' || break; sleep 1; done
{ sec "dev-exit release criteria (process basis: engine_exit)"; echo "$st" | grep -o '"release":{[^}]*"closed_by[^}]*}\|"criteria":\[[^]]*\]'
  sec "GPU probe (power/energy scope steps, from the exporter log)"; grep -E 'GPU probed|GPU could not be opened|GPU opened' "$O/exporter.log"
  sec "healthz at end"; http GET /healthz; } >> "$S" 2>&1
cp $W/metrics-6.prom "$O/metrics.prom"
{ sec "metrics of interest (last scrape)"; grep -E '^joulemark_(gpu_info|gpu_power|gpu_energy_joules|gpu_up|gpu_last_sample|sampler_|gpu_power_average|gpu_sample_duration_seconds_(sum|count)|gpu_clock_event|gpu_memory|run_release)' $W/metrics-6.prom; } >> "$S"
{ sec "sample duration histogram (NVML fast read at 10 Hz)"; grep '^joulemark_gpu_sample_duration_seconds' $W/metrics-6.prom; } >> "$S"
{ sec "power and energy across scrapes"; for f in $W/metrics-*.prom; do echo "$f $(grep -E '^joulemark_gpu_(power_watts|energy_joules_total|power_average_watts)' $f | tr '\n' ' ')"; done; } >> "$S"
TS=$(date +%s.%N); kill -TERM $P; wait $P; rc=$?
echo "exporter rc=$rc, exited $(awk "BEGIN{print $(date +%s.%N) - $TS}") s after SIGTERM (bounded at ~5 s even behind a hung NVML call)" >> "$S"
{ sec "exporter log: warnings and errors"; grep -E 'level=(WARN|ERROR)' "$O/exporter.log" | head -40; } >> "$S"
cp "$S" "$O/summary.txt"
tar -C $W -czf "$O/work.tar.gz" . 2>/dev/null
ls -la "$O"
cat "$S" | tail -c 9000
