#!/usr/bin/env bash
# Runs one bowline-stress command against two builds, alternated, each run against a fresh
# server and database, and prints a line per run: the tool's operation lines, how long the
# database's writes were held, its verdict, and the CPU the server, PostgreSQL's backends
# and the whole machine used during the run. How FIGURES.md compares a change with the
# build before it on a machine whose speed drifts within the hour.
#
#   src/bin/bowline-stress/alternate.sh [--rounds N] [--postgres URL] BEFORE AFTER -- ARGS...
#
# BEFORE and AFTER are directories holding a release build's `bowline` and
# `bowline-stress` (copy them out of target/release: a build replaces them). ARGS go to
# bowline-stress, e.g. `--scenario create --connections 16 --duration 15s`. With
# --postgres (a URL of the server without parameters, e.g.
# postgres://postgres@127.0.0.1:5432/postgres), each run gets a database of its own
# there, dropped after it; without it, SQLite in a fresh data directory. Needs psql for
# PostgreSQL.
set -euo pipefail

rounds=3
postgres=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --postgres) postgres=$2; shift 2 ;;
    *) break ;;
  esac
done
if [[ $# -lt 3 || "$3" != "--" ]]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
builds=("$1" "$2")
shift 3

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# Clock ticks `$1` over `$2` seconds, as cores used.
cores() { awk -v t="$1" -v s="$2" 'BEGIN { printf "%.2f cores", t / 100 / s }'; }
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
backend_ticks() {
  local total=0 pid
  for pid in $(pgrep -f "postgres: .* $1 " || true); do
    total=$((total + $(ticks "$pid")))
  done
  echo "$total"
}

# One run of `$1/bowline-stress ARGS` against a fresh `$1/bowline` (in a subshell of its
# own: its cleanup runs when that subshell exits).
run() {
  local build=$1
  shift
  local url="" http="" metrics_port attempt
  # Globals of this run's subshell, for its cleanup on any exit.
  dir=$(mktemp -d)
  database=""
  server=""
  trap cleanup EXIT
  if [[ -n "$postgres" ]]; then
    database="bench_$(date +%s)_$RANDOM"
    psql -q "$postgres" -c "CREATE DATABASE $database" >/dev/null
    url="${postgres%/*}/$database"
  fi
  for attempt in 1 2 3 4 5; do
    metrics_port=$((20000 + RANDOM % 40000))
    env ${url:+DATABASE_URL="$url"} DATA_DIR="$dir" PORT=0 METRICS_PORT="$metrics_port" \
      AUTH_RATE_LIMIT=false LOG_LEVEL=info "$build/bowline" >"$dir/server.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do
      http=$(grep -o '"http":"[^"]*"' "$dir/server.log" | head -1 | cut -d'"' -f4 || true)
      [[ -n "$http" ]] || ! kill -0 "$server" 2>/dev/null && break
      sleep 0.1
    done
    kill -0 "$server" 2>/dev/null && [[ -n "$http" ]] && break
    wait "$server" 2>/dev/null || true
    http=""
    echo "attempt $attempt: the server did not start (metrics port $metrics_port)" >&2
  done
  if [[ -z "$http" ]]; then
    cat "$dir/server.log" >&2
    return 1
  fi
  local started server0 backends0 busy0 ended server1 backends1 busy1 status=0
  started=$(date +%s%N)
  server0=$(ticks "$server")
  backends0=$(backend_ticks "${database:-none}")
  busy0=$(machine_busy)
  "$build/bowline-stress" --base "http://$http" --metrics "http://127.0.0.1:$metrics_port/metrics" \
    "$@" >"$dir/stress.txt" 2>&1 || status=$?
  ended=$(date +%s%N)
  server1=$(ticks "$server")
  backends1=$(backend_ticks "${database:-none}")
  busy1=$(machine_busy)
  local seconds capacity
  seconds=$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  capacity=$(awk -v s="$seconds" -v n="$(nproc)" 'BEGIN { print s * n * 100 }')
  printf '%s | %s | %s | exit %s | %s s: server %s, PostgreSQL %s, machine %s %% busy\n' \
    "$(grep -E '^(create|update|link|attendance|delete|list|mixed|all) ' "$dir/stress.txt" \
      | tr -s ' ' | paste -sd ';' -)" \
    "$(grep -E '^database' "$dir/stress.txt" | tr -s ' ' || true)" \
    "$(grep -E '^result' "$dir/stress.txt" || true)" "$status" "$seconds" \
    "$(cores $((server1 - server0)) "$seconds")" \
    "$(cores $((backends1 - backends0)) "$seconds")" \
    "$(awk -v t=$((busy1 - busy0)) -v c="$capacity" 'BEGIN { printf "%.0f", 100 * t / c }')"
}

# Stops a run's server and removes its database and data directory (run's EXIT trap).
cleanup() {
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  if [[ -n "$database" ]]; then
    psql -q "$postgres" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null || true
  fi
  rm -rf "$dir"
}

for round in $(seq "$rounds"); do
  for build in "${builds[@]}"; do
    printf 'round %s, %s: %s\n' "$round" "$build" "$(run "$build" "$@")"
  done
done
