#!/bin/bash
# gpu-node-check.sh: what joulemark sees on a GPU node, in one short run (docs/exporter.md,
# "Checking a node"). Every run starts from a fresh state directory with unique run ids.
# Steps: facts (driver, open or proprietary kernel module, persistence and MIG modes, PID
# namespace); `joulemark doctor`; raw polling of fields 186/185 (GPU and module scope) and 83
# with NVML's timestamps (update periods, instant/counter bias) and the p50/p99/max latency of
# every NVML call the exporter makes; the exporter on NVML driving a full lifecycle around a
# stand-in engine (CUDA context, GPU memory, SM-bound kernels for $BUSY, then the context held
# $HOLD before it exits), so the release must wait for the process and the memory; GPU process
# visibility from the host's PID namespace and from a new one (unshare); the exporter's phase
# energy against the raw counter read around the phase posts. Results in $OUT: node-check.json,
# node-check.md, summary.txt, doctor.json, metrics.prom, exporter.log, work.tar.gz. Exit 1 when
# a check failed, among them (on NVML) GPU 0's formal mean power >= 1.5 x idle and its phase
# energy within 1% of the counter (deploy/internal/nodecheck/judge.go); the failure lines end
# the output. About 90 s on a GPU; GPU=sim runs it anywhere (no load: times only).
# Env: JOULEMARK (binary; default ./joulemark beside this script, else PATH), NODECHECK (the
# helper, go build ./deploy/internal/nodecheck; default ./nodecheck beside, else PATH), OUT
# (default /tmp/devout), PORT (default 9402), GPU (nvml or sim), BUSY (whole seconds, 30s), HOLD (4s),
# MEM_GIB (8).
set -u
START=$(date +%s.%N)
cd "$(dirname "$0")"
B=${JOULEMARK:-$PWD/joulemark}; command -v "$B" >/dev/null || B=$(command -v joulemark)
N=${NODECHECK:-$PWD/nodecheck}; command -v "$N" >/dev/null || N=$(command -v nodecheck)
O=${OUT:-/tmp/devout}; mkdir -p "$O"
W=$(mktemp -d /tmp/nodecheck.XXXXXX)   # fresh state on every run
RID=$(date -u +%Y%m%dT%H%M%S)-$$         # unique run ids on every run
G=${GPU:-nvml}; PORT=${PORT:-9402}; BUSY=${BUSY:-30s}; HOLD=${HOLD:-4s}
S=$W/summary.txt
sec() { echo; echo "===== $* ====="; }
TOK=nodecheck-token-$RID-0123456789abcdef
# get/post PATH: the body only (curl where present, else bash's /dev/tcp with HTTP/1.0)
req() {
  if command -v curl >/dev/null; then curl -s -X "$1" -H "Authorization: Bearer $TOK" "http://127.0.0.1:$PORT$2"; return; fi
  exec 3<>/dev/tcp/127.0.0.1/$PORT || return 1
  printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n\r\n' "$1" "$2" "$TOK" >&3
  sed '1,/^\r$/d' <&3; exec 3<&-
}
# phase RUN PHASE: the raw counter right before and right after the post, so that the report
# interpolates it to the exporter's boundary (the same boundaries for both energies)
phase() {
  "$N" counter --gpu="$G" > "$W/counter.$2.pre.json" 2>>"$W/nodecheck.err"
  req POST "/api/v1/runs/$1/phases/$2" >> "$W/posts.txt"; echo >> "$W/posts.txt"
  "$N" counter --gpu="$G" > "$W/counter.$2.json" 2>>"$W/nodecheck.err"
}
{ sec env; date -u; uname -a; id; nproc; "$B" --version; sec nvidia-smi; nvidia-smi 2>&1 | head -30; } > "$S" 2>&1
"$N" facts --gpu="$G" > "$W/facts.json" 2>>"$W/nodecheck.err"
timeout 60 "$B" doctor --gpu="$G" --format json --duration 3s --poll 1ms > "$O/doctor.json" 2>> "$W/doctor.err"; echo "doctor rc=$?" >> "$S"
timeout 60 "$N" poll --gpu="$G" --duration 5s --poll 2ms > "$W/poll.json" 2>>"$W/nodecheck.err"; echo "poll rc=$?" >> "$S"
echo "$TOK" > "$W/tok"
"$B" exporter --gpu="$G" --web.listen-address=127.0.0.1:$PORT --web.api-token-file="$W/tok" --storage.path="$W/data" \
  --release.hold=5s --release.max-wait=60s --nvml.retry-interval=5s > "$O/exporter.log" 2>&1 &
P=$!
for i in $(seq 1 100); do req GET /-/ready 2>/dev/null | grep -qi ready && break; sleep 0.2; done
{ sec "exporter ready after ~$((i/5)) s"; req GET /api/v1/gpus; echo; } >> "$S" 2>&1
R=nc-load-$RID
phase "$R" idle; sleep 8
"$N" load --gpu="$G" --busy="$BUSY" --hold="$HOLD" --mem-gib="${MEM_GIB:-8}" > "$W/load.json" 2>>"$W/nodecheck.err" &
L=$!
phase "$R" formal; sleep 3
"$N" procs --gpu="$G" > "$W/procs-host.json" 2>>"$W/nodecheck.err"
unshare --pid --fork --mount-proc "$N" procs --gpu="$G" > "$W/procs-unshare.json" 2> "$W/procs-unshare.err" || echo "unshare failed (rc $?)" >> "$W/procs-unshare.err"
sleep $(( ${BUSY%s} > 3 ? ${BUSY%s} - 3 : 0 ))
phase "$R" release                      # the engine still holds its context and memory for $HOLD
wait $L; echo "stand-in engine rc=$? exited at $(date +%s.%N)" >> "$S"
for k in $(seq 1 80); do req GET /api/v1/runs/$R > "$W/run.json"; grep -q '"state":"waiting"' "$W/run.json" || break; sleep 1; done
req GET /metrics > "$O/metrics.prom"
TS=$(date +%s.%N); kill -TERM $P; wait $P; rc=$?
echo "exporter rc=$rc, exited $(awk "BEGIN{print $(date +%s.%N) - $TS}") s after SIGTERM" >> "$S"
{ sec "exporter warnings"; grep -E 'level=(WARN|ERROR)' "$O/exporter.log" | head -20; sec "nodecheck errors"; cat "$W/nodecheck.err" "$W/doctor.err"; } >> "$S" 2>&1
awk "BEGIN{print $(date +%s.%N) - $START}" > "$W/elapsed.json"
"$N" report --dir "$W" --out "$O" 2> "$W/report.err"; RC=$?
cat "$W/report.err" >> "$S"
cp "$S" "$O/summary.txt"
tar -C "$W" -czf "$O/work.tar.gz" . 2>/dev/null
cat "$O/node-check.md" 2>/dev/null | tail -c 9000
cat "$W/report.err" >&2   # each failed check: its figure, measured value and bound
exit $RC
