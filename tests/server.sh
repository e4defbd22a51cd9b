# Shared by tests/e2e/run.sh and tests/contract/run.sh (sourced): stopping a memvault server
# they started, and waiting until one is ready. The caller sets SERVER_PID, DATA (removed on
# stop), BASE and SERVER_LOG.

stop_server() {
  if [ -n "${SERVER_PID:-}" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
  rm -rf "${DATA:?}"
}

# Returns once GET /readyz answers 200; exits the script (with the log's end) when the server
# stops first or is not ready within 120 s.
wait_until_ready() {
  for _ in $(seq 1 600); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "memvault exited before it was ready; its log:" >&2
      tail -n 40 "$SERVER_LOG" >&2
      exit 1
    fi
    if curl -fsS "$BASE/readyz" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  echo "memvault was not ready within 120 s; its log:" >&2
  tail -n 40 "$SERVER_LOG" >&2
  exit 1
}
