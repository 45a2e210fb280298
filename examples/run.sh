#!/usr/bin/env bash
# Started by `make run`: two echo backends and `switchyard run` on the
# manifests in this folder. Ctrl-C stops everything, NGINX included.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/switchyard}
STATE_DIR=${STATE_DIR:-.state}
pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

"$BIN" echo --listen 127.0.0.1:9001 --service echo-a --pod echo-a-1 & pids+=($!)
"$BIN" echo --listen 127.0.0.1:9002 --service echo-b --pod echo-b-1 & pids+=($!)
"$BIN" run --manifests examples --state-dir "$STATE_DIR" --http-addr 127.0.0.1:8080 --https-addr 127.0.0.1:8443 "$@" & pids+=($!)

for _ in $(seq 1 100); do
  curl -s -o /dev/null -H 'Host: echo.switchyard.local' http://127.0.0.1:8080/ && break
  sleep 0.1
done
cat <<'MSG'

Switchyard is serving the Ingresses in examples/. Try:

  curl -H 'Host: echo.switchyard.local' http://127.0.0.1:8080/hello        # echo-a
  curl -H 'Host: echo.switchyard.local' http://127.0.0.1:8080/b/anything   # echo-b (Prefix /b)
  curl -H 'Host: echo.switchyard.local' http://127.0.0.1:8080/exact        # echo-b (Exact)
  curl -H 'Host: unknown.example.com' http://127.0.0.1:8080/               # 404 from the default server
  curl -k --resolve secure.switchyard.local:8443:127.0.0.1 https://secure.switchyard.local:8443/   # TLS by SNI

Edit a file in examples/ and the change is served within milliseconds
(endpoint changes without an NGINX reload). Ctrl-C stops everything.
MSG
wait "${pids[2]}"
