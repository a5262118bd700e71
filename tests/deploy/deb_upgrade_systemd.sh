#!/usr/bin/env bash
# The .deb under a real systemd (root): an upgrade restarts the service.
#
# This machine's PID 1 is not systemd, so the package's maintainer scripts are
# run inside a container that boots one: systemd-nspawn --boot on a minimal
# Debian rootfs (debootstrap, cached under the build tree), read-only with a
# tmpfs overlay (--volatile=overlay: the cache is never changed), with its own
# network namespace (the exporter listens on the container's loopback only).
# The script drives it from outside with nsenter:
#   1. two .debs: the build tree's, and an older build of the same tree
#      (-DMEMCG_VERSION=<version>~old1, built in <build>/memcg_exporter_test_deb_old);
#   2. dpkg -i the older: the user is made, the unit is neither enabled nor
#      started (the package's policy); `systemctl enable --now`, /metrics
#      reports the old version;
#   3. dpkg -i the newer: MainPID changes, /metrics reports the new version;
#   4. systemctl reload (ExecReload, SIGHUP): the same MainPID, still active;
#   5. dpkg --purge: the service is stopped, the unit, its enablement link,
#      the conffile, the state/log directories and the user are gone.
# The container, its overlay and every mount of it are gone at exit, also on
# failure (they live in the container's mount namespace; the trap powers it
# off, then kills it).
#   deb_upgrade_systemd.sh <source dir> <build dir>
# Env: MEMCG_DEB_ROOTFS (the rootfs cache; default <build>/memcg_exporter_test_deb_rootfs),
#      MEMCG_DEB_MIRROR (debootstrap's mirror; default http://deb.debian.org/debian).
# Exit 77 (skipped) when not root or a tool is missing.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
pkg=memcg-exporter
unit=memcg_exporter.service
t0=$SECONDS
say() { printf '[%4ds] %s\n' $((SECONDS - t0)) "$*"; }
fail() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root (debootstrap, systemd-nspawn)"; exit 77; }
for t in systemd-nspawn:systemd-container debootstrap:debootstrap nsenter:util-linux \
         cpack:cmake cmake:cmake unshare:util-linux mount:mount dpkg-deb:dpkg flock:util-linux; do
  command -v "${t%%:*}" >/dev/null ||
    { echo "SKIPPED: ${t%%:*} is not installed (Debian package ${t#*:}, scripts/deps.sh test)"; exit 77; }
done

rootfs=${MEMCG_DEB_ROOTFS:-$build/memcg_exporter_test_deb_rootfs}
mirror=${MEMCG_DEB_MIRROR:-http://deb.debian.org/debian}
olddir=$build/memcg_exporter_test_deb_old
# The rootfs is removed and remade: never a path that is not the test's.
case "$(basename "$rootfs")" in
  memcg_exporter_test*) ;;
  *) echo "MEMCG_DEB_ROOTFS must end in a directory named memcg_exporter_test*: $rootfs" >&2; exit 2 ;;
esac
tmp=$(mktemp -d /tmp/memcg_exporter_test_deb_systemd.XXXXXX)
# A machine name is a host name (no '_'); our cgroups carry the test prefix.
machine=memcg-exporter-test-deb-$$ cgname=memcg_exporter_test_deb_$$
nspawn_pid='' leader='' cgdirs=() nspawn_run_existed=1 making_rootfs=0 debootstrap_pid=''
[ -d /run/systemd/nspawn ] || nspawn_run_existed=0
cleanup() {
  local rc=$?
  set +e
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    # SIGTERM to nspawn --boot asks the container's systemd to power off.
    kill -TERM "$nspawn_pid" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$nspawn_pid" 2>/dev/null; then
      say "the container did not power off in 30 s: killed"
      [ -z "$leader" ] || kill -KILL "$leader" 2>/dev/null
      kill -KILL "$nspawn_pid" 2>/dev/null
    fi
    wait "$nspawn_pid" 2>/dev/null
  fi
  # Without a host systemd, nspawn (--keep-unit) splits the cgroup it runs in
  # into payload/ and supervisor/ and leaves them: that cgroup is ours.
  local d
  for d in "${cgdirs[@]+"${cgdirs[@]}"}"; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
    [ ! -d "$d" ] || say "could not remove cgroup $d"
  done
  # nspawn's per-machine directory (it refuses to rm -rf on a disk-backed /run).
  rm -rf "/run/systemd/nspawn/propagate/$machine"
  if [ $nspawn_run_existed = 0 ]; then
    rmdir /run/systemd/nspawn/propagate /run/systemd/nspawn/locks /run/systemd/nspawn 2>/dev/null
  fi
  if [ $rc -ne 0 ] && [ -s "$tmp/boot.log" ]; then
    echo "--- container console (last 40 lines)"; tail -n 40 "$tmp/boot.log"
  fi
  # An unfinished rootfs (debootstrap failed or was stopped): its /proc and
  # /sys mounts, then the tree.
  if [ $making_rootfs = 1 ] && [ -d "$rootfs.new" ]; then
    if [ -n "$debootstrap_pid" ]; then
      pkill -TERM -P "$debootstrap_pid" 2>/dev/null; kill -TERM "$debootstrap_pid" 2>/dev/null
      wait "$debootstrap_pid" 2>/dev/null
    fi
    for m in proc sys dev/pts dev; do umount -l "$rootfs.new/$m" 2>/dev/null; done
    mountpoint -q "$rootfs.new/proc" || rm -rf --one-file-system "$rootfs.new"
  fi
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. The newer .deb: the build tree's own (as e2e.deb builds it).
(cd "$build" && cpack --config CPackConfig.cmake >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack in $build"; }
newver=$(sed -n 's/.*kVersion = "\(.*\)";/\1/p' "$build/generated/common/version.h")
[ -n "$newver" ] || fail "no version in $build/generated/common/version.h"
newdeb=$(ls "$build"/packages/${pkg}_"${newver}"_*.deb 2>/dev/null | head -1)
[ -f "$newdeb" ] || fail "cpack wrote no ${pkg}_${newver}_*.deb in $build/packages"

# The older: the same tree built again with a lower version, in its own build
# tree (kept: a rerun rebuilds nothing). It is configured and built in a
# private mount namespace where it is bind-mounted over the main build tree's
# path: every compile line, working directory and debug-info path is then the
# main build's, so with ccache only the files that include common/version.h
# are compiled again, the rest are cache hits of the main build. Only the two
# packaged programs are built (cpack builds nothing more: the install rules
# do not depend on `all`).
oldver="${newver}~old1"
dpkg --compare-versions "$oldver" lt "$newver" || fail "$oldver does not sort before $newver"
cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -1; }
# The install rules package both (packaging/CMakeLists.txt).
targets=(memcg_exporter memcgtool)
mkdir -p "$olddir"
cat >"$tmp/build-old.sh" <<EOS
set -e
mount --bind "$olddir" "$build"
cmake -S "$src" -B "$build" -DMEMCG_VERSION="$oldver" -DBUILD_TESTING=OFF -DBUILD_BENCH=OFF \\
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \\
  -DCMAKE_BUILD_TYPE="$(cache_get CMAKE_BUILD_TYPE)" -DMEMCG_WERROR="$(cache_get MEMCG_WERROR)" \\
  -DCMAKE_C_COMPILER="$(cache_get CMAKE_C_COMPILER)" -DCMAKE_CXX_COMPILER="$(cache_get CMAKE_CXX_COMPILER)" \\
  -DCMAKE_C_COMPILER_LAUNCHER="$(cache_get CMAKE_C_COMPILER_LAUNCHER)" \\
  -DCMAKE_CXX_COMPILER_LAUNCHER="$(cache_get CMAKE_CXX_COMPILER_LAUNCHER)" >/dev/null
nice -n 10 cmake --build "$build" -j2 --target ${targets[*]}
cd "$build" && cpack --config CPackConfig.cmake
EOS
say "building the older package ($oldver) in $olddir"
tb=$SECONDS
unshare --mount --propagation private bash "$tmp/build-old.sh" >"$tmp/old-build.log" 2>&1 ||
  { tail -n 40 "$tmp/old-build.log"; fail "building $oldver in $olddir"; }
say "built $oldver in $((SECONDS - tb)) s"
olddeb=$(ls "$olddir"/packages/${pkg}_"${oldver}"_*.deb 2>/dev/null | head -1)
[ -f "$olddeb" ] || fail "cpack wrote no ${pkg}_${oldver}_*.deb in $olddir/packages"
# (tar stops reading at the file: dpkg-deb's broken pipe is expected.)
cmp -s <(dpkg-deb --fsys-tarfile "$olddeb" 2>/dev/null | tar -xOf - ./usr/bin/memcg_exporter) \
       <(dpkg-deb --fsys-tarfile "$newdeb" 2>/dev/null | tar -xOf - ./usr/bin/memcg_exporter) &&
  fail "the two packages hold the same binary"
mkdir "$tmp/debs"
cp "$olddeb" "$tmp/debs/old.deb"
cp "$newdeb" "$tmp/debs/new.deb"
say "packages: $(basename "$olddeb") -> $(basename "$newdeb")"

# 2. The rootfs: systemd, adduser, curl and the packages' dependencies. Made
# once (under a lock: parallel runs share it) and kept; remade when the
# dependency list changes.
include=$({ echo systemd systemd-sysv adduser curl | tr ' ' '\n'
           dpkg-deb -f "$newdeb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//'; } |
         sed 's/[[:space:]]//g' | grep -v '^$' | sort -u | paste -sd, -)
exec 9>"$rootfs.lock"
flock -w 900 9 || fail "cannot lock $rootfs.lock"
if [ "$(cat "$rootfs/.memcg_exporter_test_include" 2>/dev/null)" != "$include" ]; then
  say "debootstrap bookworm into $rootfs (--include=$include)"
  rm -rf "$rootfs" "$rootfs.new"
  making_rootfs=1
  # In the background, so that a TERM (ctest's timeout) reaches the trap at once.
  debootstrap --variant=minbase --include="$include" bookworm "$rootfs.new" "$mirror" \
    >"$tmp/debootstrap.log" 2>&1 &
  debootstrap_pid=$!
  if ! wait $debootstrap_pid; then
    tail -n 20 "$tmp/debootstrap.log"
    fail "debootstrap (mirror $mirror)"
  fi
  # No getty on the console, no network setup: nothing the test waits for.
  chroot "$rootfs.new" systemctl mask console-getty.service systemd-networkd-wait-online.service \
    >/dev/null 2>&1 || true
  echo "$include" > "$rootfs.new/.memcg_exporter_test_include"
  mv "$rootfs.new" "$rootfs"
  making_rootfs=0 debootstrap_pid=''
fi
flock -u 9

# 3. Boot it. --register=no --keep-unit: no machined or host systemd to ask
# for a scope. --volatile=overlay: every write goes to a tmpfs.
# nspawn runs in a cgroup of our own (in each hierarchy systemd uses: the
# named v1 one and the unified one of a hybrid host, or the v2 root), which
# the trap removes with what nspawn made inside it.
if mountpoint -q /sys/fs/cgroup/systemd; then
  cgdirs+=("/sys/fs/cgroup/systemd/$cgname")
  mountpoint -q /sys/fs/cgroup/unified && cgdirs+=("/sys/fs/cgroup/unified/$cgname")
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cgdirs+=("/sys/fs/cgroup/$cgname")
fi
for d in "${cgdirs[@]+"${cgdirs[@]}"}"; do mkdir "$d"; done
say "booting systemd in $rootfs (systemd-nspawn --boot)"
(
  for d in "${cgdirs[@]+"${cgdirs[@]}"}"; do echo $BASHPID > "$d/cgroup.procs"; done
  exec systemd-nspawn --quiet --boot --directory="$rootfs" --volatile=overlay --register=no \
    --keep-unit --private-network --machine="$machine" --console=pipe \
    --bind-ro="$tmp/debs:/memcg_exporter_test"
) </dev/null >"$tmp/boot.log" 2>&1 &
nspawn_pid=$!
for _ in $(seq 100); do
  kill -0 "$nspawn_pid" 2>/dev/null || { wait "$nspawn_pid" || true; nspawn_pid=; cat "$tmp/boot.log"; fail "systemd-nspawn exited"; }
  # The container's PID 1: nspawn's child running systemd.
  for c in $(pgrep -P "$nspawn_pid" || true); do
    [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && leader=$c
  done
  [ -z "$leader" ] || break
  sleep 0.2
done
[ -n "$leader" ] || fail "no systemd under systemd-nspawn (pid $nspawn_pid)"
ct() {
  nsenter --target "$leader" --mount --uts --ipc --net --pid --cgroup --root --wd -- \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
state=
for _ in $(seq 600); do
  state=$(ct systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  kill -0 "$nspawn_pid" 2>/dev/null || fail "the container stopped while booting"
  sleep 0.2
done
case "$state" in
  running) ;;
  degraded) say "note: the container's systemd is degraded: $(ct systemctl --failed --plain --no-legend | awk '{print $1}' | paste -sd' ' -)" ;;
  *) fail "the container's systemd did not finish booting in 120 s (state: ${state:-none})" ;;
esac
say "systemd $(ct systemctl --version | head -1 | awk '{print $2}') is up ($state), PID 1 in the container"

mainpid() { ct systemctl show -p MainPID --value $unit; }
# /metrics' build_info version, from inside the container (its own loopback).
port=9712
metrics_version() {
  local v
  for _ in $(seq 100); do
    v=$(ct curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" 2>/dev/null |
        sed -n 's/^memcg_exporter_build_info{.*version="\([^"]*\)".*/\1/p') || true
    [ -n "$v" ] && { echo "$v"; return 0; }
    sleep 0.2
  done
  return 1
}
wait_active() {
  local s
  for _ in $(seq 100); do
    s=$(ct systemctl is-active $unit || true)
    [ "$s" = active ] && return 0
    [ "$s" = failed ] && break
    sleep 0.2
  done
  ct journalctl -u $unit --no-pager -n 30 || true
  fail "$unit is ${s:-?}, not active"
}

# 4. Install the older: user made, unit neither enabled nor started.
ct dpkg -i /memcg_exporter_test/old.deb >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i $oldver"; }
ct getent passwd memcg_exporter >/dev/null || fail "postinst made no memcg_exporter user"
en=$(ct systemctl is-enabled $unit || true) act=$(ct systemctl is-active $unit || true)
[ "$en" = disabled ] && [ "$act" = inactive ] ||
  fail "after a fresh install the unit is $en/$act (policy: disabled/inactive)"
say "installed $oldver: unit $en/$act, user memcg_exporter made"
# What an operator does: set the flags, enable and start it. The vmscan
# collector is off: the container shares this host's kernel and tracefs.
ct sh -c "echo 'ARGS=\"--web.listen-address=127.0.0.1:$port --no-collector.vmscan\"' >> /etc/default/memcg_exporter"
ct systemctl enable --now $unit >"$tmp/enable.log" 2>&1 || { cat "$tmp/enable.log"; fail "systemctl enable --now"; }
wait_active
pid1=$(mainpid)
v1=$(metrics_version) || fail "no build_info from /metrics of $oldver"
[ "$v1" = "$oldver" ] || fail "/metrics reports version $v1, installed $oldver"
say "started: MainPID $pid1, /metrics build_info version=\"$v1\""

# 5. Upgrade: postinst restarts it on the new binary.
ct dpkg -i /memcg_exporter_test/new.deb >"$tmp/upgrade.log" 2>&1 || { cat "$tmp/upgrade.log"; fail "dpkg -i $newver"; }
wait_active
pid2=$(mainpid)
[ "$pid2" != 0 ] && [ "$pid2" != "$pid1" ] || fail "the upgrade did not restart the service (MainPID $pid1 -> $pid2)"
v2=$(metrics_version) || fail "no build_info from /metrics after the upgrade"
[ "$v2" = "$newver" ] || fail "after the upgrade /metrics reports version $v2, want $newver"
[ "$(ct systemctl is-enabled $unit)" = enabled ] || fail "the upgrade lost the enablement"
ct grep -q -- "--no-collector.vmscan" /etc/default/memcg_exporter || fail "the upgrade replaced the edited conffile"
say "upgraded to $newver: MainPID $pid1 -> $pid2, /metrics build_info version=\"$v2\", still enabled, conffile kept"

# 6. Reload: SIGHUP, the same process.
restarts=$(ct systemctl show -p NRestarts --value $unit)
ct systemctl reload $unit || fail "systemctl reload"
sleep 1
pid3=$(mainpid)
[ "$pid3" = "$pid2" ] || fail "reload changed MainPID $pid2 -> $pid3"
wait_active
[ "$(ct systemctl show -p NRestarts --value $unit)" = "$restarts" ] || fail "the service restarted on reload"
v3=$(metrics_version) || fail "no /metrics after reload"
[ "$v3" = "$newver" ] || fail "after reload /metrics reports version $v3"
say "reloaded: MainPID $pid3 unchanged, active, /metrics answers"

# 7. Purge: stopped, and nothing of it left.
ct dpkg --purge $pkg >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "dpkg --purge"; }
ct sh -c "kill -0 $pid3" 2>/dev/null && fail "the service (pid $pid3) still runs after purge"
load=$(ct systemctl show -p LoadState --value $unit)
[ "$load" = not-found ] || fail "systemd still knows $unit after purge (LoadState=$load)"
left=0
for f in /usr/bin/memcg_exporter /usr/lib/systemd/system/$unit /etc/default/memcg_exporter \
         /etc/systemd/system/multi-user.target.wants/$unit /etc/systemd/system/$unit \
         /var/lib/systemd/deb-systemd-helper-enabled/$unit.dsh-also \
         /var/lib/memcg_exporter /var/log/memcg_exporter /usr/share/memcg_exporter; do
  if ct test -e "$f" || ct test -L "$f"; then say "left behind: $f"; left=$((left + 1)); fi
done
ct getent passwd memcg_exporter >/dev/null && { say "left behind: user memcg_exporter"; left=$((left + 1)); }
ct getent group memcg_exporter >/dev/null && { say "left behind: group memcg_exporter"; left=$((left + 1)); }
[ $left -eq 0 ] || fail "$left things left after purge"
say "purged: service stopped, unit, enablement link, conffile, directories and user gone"

# 8. Power off; the trap checks it went.
ct systemctl poweroff >/dev/null 2>&1 || true
for _ in $(seq 150); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
if ! kill -0 "$nspawn_pid" 2>/dev/null; then wait "$nspawn_pid" || true; nspawn_pid=; fi
[ -z "$nspawn_pid" ] || fail "the container did not power off in 30 s"
say "PASS: install $oldver, upgrade to $newver (restart), reload, purge under systemd"
