#!/usr/bin/env bash
# The server's CPU time per request (all its threads' run time from /proc/<pid>/task/*/schedstat, over the requests
# wrk counted): steadier than req/s on a shared machine.
# usage: benches/cpu_per_request/run.sh ROUNDS BIN...   (release binaries; needs wrk, taskset, curl, python3 for sock)
# env: LOG (RUST_LOG, default warn), ERR (the server's stderr: null | pipe (read by cat) | file | sock (a unix stream
#      socket with JOURNAL_STREAM set, as under systemd)), DUR (wrk duration, 5s), POST_LUA (wrk's POST script,
#      default ../shared/bench/peer402/post.lua)
# Server pinned to cpu0, wrk -t1 -c16 pinned to cpu1; per round each binary: POST /service (402) then GET /health.
set -u
ROUNDS=$1; shift
DUR=${DUR:-5s}; LOG=${LOG:-warn}; ERR=${ERR:-null}
D=$(cd "$(dirname "$0")" && pwd)
POST_LUA=${POST_LUA:-$D/../../../shared/bench/peer402/post.lua}
port=4190
for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    port=$((port+1))
    W=$(mktemp -d)
    cmd=(env WEBSEARCHD_LISTEN=127.0.0.1:$port WEBSEARCHD_STATE_DIR=$W/state WEBSEARCHD_PUBLIC_URL=http://127.0.0.1:$port
         WEBSEARCHD_MAP_LAYERS=none RUST_LOG=$LOG WEBSEARCHD_PAY_TO=0x209693Bc6afc0C5328bA36FaF03C514EF312287C
         WEBSEARCHD_FACILITATOR_URL=http://127.0.0.1:9 taskset -c 0 "$bin" serve)
    case $ERR in
      null) "${cmd[@]}" 2>/dev/null & pid=$! ;;
      pipe) "${cmd[@]}" 2> >(cat >/dev/null) & pid=$! ;;
      file) "${cmd[@]}" 2>"$W/err.log" & pid=$! ;;
      sock) python3 "$D/sockrun.py" "${cmd[@]}" & pid=$! ;;
    esac
    for i in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.1; done
    spid=$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
    [ -r /proc/$spid/stat ] || spid=$pid
    cpu() { cat /proc/$spid/task/*/schedstat 2>/dev/null | awk '{s+=$1} END{print s}'; }
    one() { local c0 c1 out; c0=$(cpu); out=$(taskset -c 1 wrk -t1 -c16 -d$DUR --latency "$@"); c1=$(cpu)
      echo "$out" | awk -v dc=$((c1-c0)) '/requests in/{n=$1} /Requests\/sec/{rps=$2} / 99%/{p=$2} END{printf "%s req/s p99 %s n %d cpu %.2f us/req", rps, p, n, dc/1000/n}'; }
    a=$(one -s "$POST_LUA" "http://127.0.0.1:$port/service")
    b=$(one "http://127.0.0.1:$port/health")
    echo "round=$r bin=$(basename "$bin") log=$LOG err=$ERR 402: $a health: $b"
    kill "$spid" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$W"
  done
done
