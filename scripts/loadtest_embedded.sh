#!/usr/bin/env bash
# A bounded headless Locust run against an embedded `skbqa serve` on 127.0.0.1, which this script starts and
# stops itself. Usage: scripts/loadtest_embedded.sh INDEX USERS RUN_TIME  (e.g. .skbqa/biomed-sample 4 20s)
set -euo pipefail
index=${1:?index directory}
users=${2:-4}
run_time=${3:-20s}
bin=$(dirname "$0")/../.venv/bin
port=$("$bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$bin/skbqa" serve --index "$index" --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$log"' EXIT
# the server prints one line once it is serving; give it two minutes at most
for _ in $(seq 240); do
  grep -q "serving" "$log" && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
grep -q "serving" "$log" || { echo "skbqa serve did not become ready" >&2; exit 1; }
"$bin/python" "$(dirname "$0")/../loadtest/headless.py" --host "127.0.0.1:$port" --users "$users" \
  --spawn-rate "$users" --run-time "$run_time"
