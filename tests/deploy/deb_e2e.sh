#!/usr/bin/env bash
# The .deb end to end (root): build it with CPack, compare its files with the
# install manifest, install it with dpkg, `systemd-analyze verify` the unit,
# run the installed binary on a free loopback port and scrape /metrics,
# upgrade over itself, then dpkg --purge and check nothing of it is left. The machine is left as found,
# also on failure (the trap purges). Skipped (77) when not root, without
# dpkg/cpack, or when memcg-exporter (or its files) were there before.
#   deb_e2e.sh <source dir> <build dir>
set -euo pipefail
src=$1 build=$2
pkg=memcg-exporter
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root (dpkg -i)"; exit 77; }
for t in dpkg dpkg-deb cpack curl; do
  command -v $t >/dev/null || { echo "SKIPPED: $t is not installed"; exit 77; }
done
if dpkg-query -W -f='${Status}' $pkg 2>/dev/null | grep -q installed; then
  echo "SKIPPED: $pkg is installed on this machine already; not touching it"; exit 77
fi
for f in /usr/bin/memcg_exporter /etc/default/memcg_exporter \
         /usr/lib/systemd/system/memcg_exporter.service /usr/share/memcg_exporter; do
  [ ! -e $f ] || { echo "SKIPPED: $f exists (not from the package); not touching it"; exit 77; }
done
tmp=$(mktemp -d /tmp/memcg_exporter_test_deploy_deb.XXXXXX)
pid=
cleanup() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  if dpkg-query -W -f='${Status}' $pkg 2>/dev/null | grep -qv 'not-installed'; then
    dpkg --purge $pkg >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# 1. Build the package (into the build tree) and list it.
(cd "$build" && cpack --config CPackConfig.cmake >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; exit 1; }
deb=$(ls -t "$build"/packages/${pkg}_*.deb | head -1)
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"
dpkg-deb -f "$deb" Package Version Depends
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {sub(/^\./, "", $6); print $6}' | sort > "$tmp/deb.files"
DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr --strip >/dev/null
sort -u "$build/install_manifest.txt" > "$tmp/manifest.files"
echo "package: $(wc -l < "$tmp/deb.files") files; install manifest (prefix /usr): $(wc -l < "$tmp/manifest.files") files"
if ! diff -u "$tmp/manifest.files" "$tmp/deb.files"; then
  echo "FAIL: the package's files are not the install manifest"; exit 1
fi
grep -qx /usr/bin/memcg_exporter "$tmp/deb.files"
grep -qx /usr/lib/systemd/system/memcg_exporter.service "$tmp/deb.files"
grep -qx /etc/default/memcg_exporter "$tmp/deb.files"

# 2. Install.
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; exit 1; }
dpkg-query -W -f='${Conffiles}\n' $pkg | grep -q /etc/default/memcg_exporter ||
  { echo "FAIL: /etc/default/memcg_exporter is not a conffile"; exit 1; }
dpkg -L $pkg | while read -r f; do [ -d "$f" ] || echo "$f"; done | sort > "$tmp/installed.files"
echo "installed: $(wc -l < "$tmp/installed.files") files"
# The unit's user, made by postinst.
getent passwd memcg_exporter >/dev/null || { echo "FAIL: postinst made no memcg_exporter user"; exit 1; }
# Grafana's dashboard provider, as installed, reads the installed dashboards.
prov=/usr/share/memcg_exporter/dashboards/provisioning/dashboards.yml
ppath=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["providers"][0]["options"]["path"])' "$prov")
n=$(ls "$ppath"/*.json 2>/dev/null | wc -l)
[ "$n" -eq 3 ] || { echo "FAIL: $prov reads $ppath, which holds $n dashboards (want 3)"; exit 1; }
echo "grafana provisioning: $prov reads $ppath ($n dashboards)"

# 3. The unit.
if command -v systemd-analyze >/dev/null; then
  if ! systemd-analyze verify /usr/lib/systemd/system/memcg_exporter.service >"$tmp/verify.log" 2>&1; then
    cat "$tmp/verify.log"; echo "FAIL: systemd-analyze verify"; exit 1
  fi
  if grep -i memcg_exporter "$tmp/verify.log"; then
    echo "FAIL: systemd-analyze verify complains about the unit"; exit 1
  fi
  echo "systemd-analyze verify: clean"
  # The hardening, as systemd scores it (lower is tighter): a regression gate.
  score=$(systemd-analyze security --offline=true /usr/lib/systemd/system/memcg_exporter.service 2>/dev/null |
          sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  echo "systemd-analyze security: exposure ${score:-?} (gate: <= 2.5)"
  if [ -z "$score" ] || ! awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }'; then
    echo "FAIL: the unit's hardening regressed"; exit 1
  fi
else
  echo "note: systemd-analyze not installed: the unit is not verified"
fi

# 4. The installed binary serves /metrics.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
/usr/bin/memcg_exporter --web.listen-address=127.0.0.1:$port --no-collector.vmscan >"$tmp/exporter.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -fsS -o "$tmp/metrics" "http://127.0.0.1:$port/metrics" 2>/dev/null && break
  sleep 0.1
done
[ -s "$tmp/metrics" ] || { cat "$tmp/exporter.log"; echo "FAIL: no /metrics from the installed binary"; exit 1; }
grep -q '^memcg_exporter_build_info{' "$tmp/metrics"
grep -q '^memcg_exporter_collector_success{collector="memory_stat"} 1' "$tmp/metrics"
echo "installed binary: /metrics on 127.0.0.1:$port, $(grep -c '^memcg' "$tmp/metrics") samples"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

# 5. Upgrade over the installed package (the same build, a second `dpkg -i`:
# dpkg runs prerm upgrade and postinst configure <old version>, as for a newer
# one): the edited conffile is kept, the user stays, and with systemd running
# a started service is restarted on the new binary (new MainPID).
echo 'ARGS="--no-collector.vmscan"  # memcg_exporter_test edit' >> /etc/default/memcg_exporter
oldpid=
if [ -d /run/systemd/system ]; then
  systemctl start memcg_exporter.service
  sleep 1
  oldpid=$(systemctl show -p MainPID --value memcg_exporter.service)
fi
dpkg -i "$deb" >"$tmp/upgrade.log" 2>&1 || { cat "$tmp/upgrade.log"; exit 1; }
grep -q 'memcg_exporter_test edit' /etc/default/memcg_exporter ||
  { echo "FAIL: the upgrade replaced the edited conffile"; exit 1; }
getent passwd memcg_exporter >/dev/null || { echo "FAIL: the upgrade lost the user"; exit 1; }
if [ -n "$oldpid" ]; then
  newpid=$(systemctl show -p MainPID --value memcg_exporter.service)
  [ "$newpid" != 0 ] && [ "$newpid" != "$oldpid" ] ||
    { echo "FAIL: the service was not restarted on upgrade (MainPID $oldpid -> $newpid)"; exit 1; }
  systemctl stop memcg_exporter.service
  echo "upgrade: conffile kept, service restarted (MainPID $oldpid -> $newpid)"
else
  echo "upgrade: conffile kept, user kept (no systemd running here: the restart on upgrade is not exercised)"
fi

# 6. Purge: nothing of it is left.
dpkg --purge $pkg >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; exit 1; }
if dpkg-query -W -f='${Status}' $pkg 2>/dev/null | grep -qv 'not-installed'; then
  echo "FAIL: $pkg still known to dpkg after purge"; exit 1
fi
left=0
while read -r f; do [ ! -e "$f" ] || { echo "left behind: $f"; left=$((left + 1)); }; done < "$tmp/installed.files"
for d in /usr/share/memcg_exporter /usr/share/doc/$pkg /var/lib/memcg_exporter /var/log/memcg_exporter; do
  [ ! -e $d ] || { echo "left behind: $d"; left=$((left + 1)); }
done
if getent passwd memcg_exporter >/dev/null; then echo "left behind: user memcg_exporter"; left=$((left + 1)); fi
[ $left -eq 0 ] || { echo "FAIL: $left paths left after purge"; exit 1; }
echo "purged: $(wc -l < "$tmp/installed.files") files removed, none left"
