#!/usr/bin/env bash
# Every metric family the running exporter lists (GET /api/v1/metrics) or exposes
# (/metrics, its # TYPE lines) is in the generated metric reference (docs/metrics.md):
# a family added outside the parts exporter/reference.cpp describes fails here.
# No root: the committed fixture tree, tracing off.
# usage: metrics_coverage.sh path/to/memcg_exporter SOURCE_DIR
set -euo pipefail
exporter=$(realpath "$1")
src=$(realpath "$2")
fixtures=$src/tests/fixtures
tmp=$(mktemp -d /tmp/memcg_exporter_test_docs_XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
"$exporter" --web.listen-address=127.0.0.1:0 --path.cgroupfs="$fixtures/cgroupfs/v1" \
  --path.procfs="$fixtures/procfs" --no-collector.vmscan 2>"$tmp/log" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*msg="\{0,1\}listening"\{0,1\} .* port=\([0-9]*\).*/\1/p' "$tmp/log" | head -1)
  [ -n "$port" ] && curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/log"; echo "exporter exited"; exit 1; }
  sleep 0.2
done
[ -n "$port" ] || { cat "$tmp/log"; echo "no listening port in the log"; exit 1; }
curl -fsS "http://127.0.0.1:$port/api/v1/metrics" >"$tmp/api.json"
curl -fsS "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"
python3 - "$tmp/api.json" "$tmp/metrics.txt" "$src/docs/metrics.md" <<'PY'
import json, re, sys
api = {m["name"] for m in json.load(open(sys.argv[1]))["metrics"]}
exposed = set(re.findall(r"^# TYPE (\S+) ", open(sys.argv[2]).read(), re.M))
documented = set(re.findall(r"^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \|", open(sys.argv[3]).read(), re.M))
missing = sorted((api | exposed) - documented)
for name in missing:
    print(f"{name}: served by the exporter, not in docs/metrics.md")
print(f"{len(api)} families listed, {len(exposed)} exposed, {len(documented)} documented, "
      f"{len(missing)} missing")
sys.exit(1 if missing else 0)
PY
