#!/bin/bash
# usage: benchjob/testdata/client-cost.sh BIN [REQUESTS] [ROUNDS] [WRK_SECONDS]
# (BIN: a joulemark binary; defaults 200000 requests, 3 rounds, 10 s of wrk)
#
# The client's CPU cost beside wrk's, in one run, against the same canned
# nginx SSE endpoint (docs/nginx-sse.conf on a free port): each round runs
# wrk -t2 -c64 for WRK_SECONDS, then `BIN bench --concurrency 64` for
# REQUESTS requests, and prints for each the CPU (user + system, getrusage
# through /usr/bin/time, not wall) per request and per streamed token, and
# the bench/wrk ratio. nginx's own CPU counts for neither. Needs wrk and
# nginx (Debian: apt-get install wrk nginx). See docs/bench.md.
set -euo pipefail
BIN=$(realpath "$1"); N=${2:-200000}; ROUNDS=${3:-3}; WRKS=${4:-10}
CONF=$(dirname "$0")/../../docs/nginx-sse.conf
D=$(mktemp -d); PORT=$((20000 + RANDOM % 20000))
mkdir -p "$D/nginx"
sed "s/127.0.0.1:18200/127.0.0.1:$PORT/" "$CONF" > "$D/nginx.conf"
TOKENS=$(grep -o '"text":" tok"' "$CONF" | wc -l) # token chunks per answer
cat > "$D/post.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"m","prompt":"hello","max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}'
EOF
nginx -p "$D/nginx" -c "$D/nginx.conf" 2> "$D/nginx.log" &
NGINX=$!
trap 'kill $NGINX 2>/dev/null; wait $NGINX 2>/dev/null; rm -rf "$D"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.1; done
URL=http://127.0.0.1:$PORT/v1

# cpu_us FILE: the user + system µs /usr/bin/time wrote to FILE.
cpu_us() { awk '/^cpu/{split($2, a, "+"); printf "%d", (a[1] + a[2]) * 1e6}' "$1"; }
# per X Y: X / Y with two decimals.
per() { awk -v x="$1" -v y="$2" 'BEGIN{printf "%.2f", x / y}'; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $TOKENS tokens per answer; 64 streams"
printf '%-6s %-6s %10s %10s %10s %10s\n' round client requests cpu_s us/req us/token
for r in $(seq "$ROUNDS"); do
	/usr/bin/time -o "$D/wrk.time" -f "cpu %U+%S" wrk -t2 -c64 -d"${WRKS}s" -s "$D/post.lua" "$URL/completions" > "$D/wrk.out"
	wn=$(awk '/requests in/{print $1}' "$D/wrk.out")
	if grep -q "Non-2xx" "$D/wrk.out"; then echo "wrk: non-2xx answers"; cat "$D/wrk.out"; exit 1; fi
	wc=$(cpu_us "$D/wrk.time")
	rm -rf "$D/runs"
	/usr/bin/time -o "$D/bench.time" -f "cpu %U+%S" "$BIN" bench --target "$URL" --model m --engine.no-lifecycle \
		--concurrency 64 --requests "$N" --workload.mean-input-tokens 30 --set workload.stddev_input_tokens=0 \
		--workload.mean-output-tokens "$TOKENS" --set workload.stddev_output_tokens=0 --runs-dir "$D/runs" > "$D/bench.out" 2>&1 ||
		{ echo "bench failed:"; tail -20 "$D/bench.out"; exit 1; }
	bc=$(cpu_us "$D/bench.time")
	wus=$(per "$wc" "$wn"); bus=$(per "$bc" "$N")
	printf '%-6s %-6s %10d %10.2f %10s %10s\n' "$r" wrk "$wn" "$(per "$wc" 1e6)" "$wus" "$(per "$wus" "$TOKENS")"
	printf '%-6s %-6s %10d %10.2f %10s %10s   bench/wrk %s\n' "$r" bench "$N" "$(per "$bc" 1e6)" "$bus" "$(per "$bus" "$TOKENS")" "$(per "$bus" "$wus")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
