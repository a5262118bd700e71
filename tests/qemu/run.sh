#!/usr/bin/env bash
# The qemu cgroup-v2 lane: boots Debian's own kernel under qemu (TCG) with a
# busybox initramfs, runs the guest driver (tests/qemu/guest/) against the real
# exporter on a real cgroup v2 hierarchy, and turns the guest's serial-console
# markers into pass/fail. See tests/qemu/README.md.
#
#   tests/qemu/run.sh [--exporter PATH | --no-exporter] [--trace-dump PATH] [--cache DIR]
#                     [--timeout SECONDS] [--keep] [--verbose] [--write-expected]
#   tests/qemu/run.sh --fetch-only [--cache DIR]
#
# --fetch-only installs the tools and fills the kernel cache, then exits (0, or
# 77 when the lane cannot run here): scripts/test.sh runs it in the background
# while it builds, so that the lane itself starts from a warm cache.
#
# Exit: 0 when every guest test passed, 77 when the lane was skipped because
# qemu cannot run here at all (ctest SKIP_RETURN_CODE: reported as skipped),
# 1 on any failure, a missing DONE marker or a timeout, 2 on a usage error.
# Every check named in tests/qemu/expected_checks.txt must PASS: one the guest
# never reported (a script that died midway) fails the lane. After adding or
# renaming a guest check, regenerate the list from a passing run:
#   tests/qemu/run.sh --exporter build/exporter/memcg_exporter \
#     --trace-dump build/tests/memcg_trace_raw_dump --write-expected
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${SCRIPT_DIR}/../.." && pwd)"
GUEST_DIR="${SCRIPT_DIR}/guest"
readonly SCRIPT_DIR REPO_ROOT GUEST_DIR

# Modules the guest insmods, in this order; each one's own `modinfo -F depends`
# is put in front of it, so a kernel that grows a dependency still works.
# crc32c_generic is not a declared dependency of ext4: ext4 asks the crypto API
# for "crc32c" at mount time, so it is listed explicitly.
readonly GUEST_MODULES=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev
                        virtio_pci virtio_blk crc16 crc32c_generic mbcache jbd2 ext4)
readonly STREAM_FILE_MIB=256

exporter="${MEMCG_QEMU_EXPORTER:-}"
exporter_explicit=0
[[ -n "${exporter}" ]] && exporter_explicit=1
no_exporter=0
trace_dump="${MEMCG_QEMU_TRACE_DUMP:-}"
cache_dir="${MEMCG_QEMU_CACHE:-/var/cache/memcg_exporter_test_qemu}"
timeout_s="${MEMCG_QEMU_TIMEOUT:-900}"
keep=0
verbose=0
write_expected=0
fetch_only=0
expected_file="${MEMCG_QEMU_EXPECTED:-${SCRIPT_DIR}/expected_checks.txt}"

usage() {
  sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while (($#)); do
  case "$1" in
    --exporter) exporter="${2:?--exporter needs a path}"; exporter_explicit=1; shift 2 ;;
    --exporter=*) exporter="${1#*=}"; exporter_explicit=1; shift ;;
    --trace-dump) trace_dump="${2:?--trace-dump needs a path}"; shift 2 ;;
    --trace-dump=*) trace_dump="${1#*=}"; shift ;;
    --no-exporter) no_exporter=1; shift ;;
    --cache) cache_dir="${2:?--cache needs a directory}"; shift 2 ;;
    --cache=*) cache_dir="${1#*=}"; shift ;;
    --timeout) timeout_s="${2:?--timeout needs seconds}"; shift 2 ;;
    --timeout=*) timeout_s="${1#*=}"; shift ;;
    --keep) keep=1; shift ;;
    --verbose|-v) verbose=1; shift ;;
    --write-expected) write_expected=1; shift ;;
    --fetch-only) fetch_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

t_start=${SECONDS}
log() { printf 'qemu lane: %s\n' "$*"; }
die() { printf 'qemu lane: ERROR: %s\n' "$*" >&2; echo "qemu: 0 passed, 1 failed"; exit 1; }
skip() { printf 'qemu lane: SKIPPED: %s\n' "$*"; exit 77; }

# --- clean-up: temp dir, loop mounts, a qemu still running ------------------
work=""
mounts=()
qemu_pid=""
cleanup() {
  local rc=$?
  set +e
  if [[ -n "${qemu_pid}" ]] && kill -0 "${qemu_pid}" 2>/dev/null; then
    kill "${qemu_pid}" 2>/dev/null
    wait "${qemu_pid}" 2>/dev/null
  fi
  local m
  for m in "${mounts[@]+"${mounts[@]}"}"; do
    umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null
  done
  if [[ -n "${work}" && -d "${work}" ]]; then
    if ((keep)); then
      echo "qemu lane: kept ${work}"
    else
      rm -rf -- "${work}"
    fi
  fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. tools ------------------------------------------------------------------
[[ "$(uname -m)" == x86_64 ]] || skip "host is $(uname -m), the lane boots an amd64 kernel"

declare -A tool_pkg=(
  [qemu-system-x86_64]=qemu-system-x86 [cpio]=cpio [mkfs.ext4]=e2fsprogs
  [modinfo]=kmod [gzip]=gzip [xz]=xz-utils [zstd]=zstd [timeout]=coreutils
  [dpkg]=dpkg [ldd]=libc-bin [flock]=util-linux
)
static_busybox() {
  [[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1
}
missing_pkgs=()
for t in "${!tool_pkg[@]}"; do
  command -v "${t}" >/dev/null 2>&1 || missing_pkgs+=("${tool_pkg[${t}]}")
done
static_busybox || missing_pkgs+=(busybox-static)
if ((${#missing_pkgs[@]})); then
  if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    for p in qemu-system-x86 busybox-static; do
      [[ " ${missing_pkgs[*]} " == *" ${p} "* ]] &&
        skip "${p} is not installed and cannot be installed here (needs root and apt-get)"
    done
    die "missing packages and no way to install them: ${missing_pkgs[*]}"
  fi
  log "installing ${missing_pkgs[*]}"
  apt_out=""
  apt_install() {
    apt_out="$(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                 "$@" 2>&1 >/dev/null)"
  }
  if ! apt_install "${missing_pkgs[@]}"; then
    # No or stale package lists: refresh once and try again.
    apt-get update -qq >/dev/null 2>&1 || true
    apt_install "${missing_pkgs[@]}" || {
      printf '%s\n' "${apt_out}" | tail -n 5 >&2
      command -v qemu-system-x86_64 >/dev/null 2>&1 ||
        skip "qemu-system-x86 could not be installed"
      die "apt-get install ${missing_pkgs[*]} failed"
    }
  fi
fi
static_busybox || skip "no static busybox at /bin/busybox"
qemu-system-x86_64 -version >/dev/null 2>&1 || skip "qemu-system-x86_64 does not run on this host"

# --- 2. the exporter ------------------------------------------------------------
if ((no_exporter || fetch_only)); then
  exporter=""
elif [[ -z "${exporter}" ]]; then
  exporter="${REPO_ROOT}/build/exporter/memcg_exporter"
fi
if [[ -n "${exporter}" ]]; then
  [[ "${exporter}" == /* ]] || exporter="${PWD}/${exporter}"
  if [[ ! -x "${exporter}" ]]; then
    ((exporter_explicit)) && die "exporter binary not found or not executable: ${exporter}"
    log "no exporter at ${exporter}: running the kernel-only tests" \
        "(build it, or pass --exporter PATH)"
    exporter=""
  fi
fi

# --- 3. kernel package, cached ---------------------------------------------------
mkdir -p "${cache_dir}" || die "cannot create cache dir ${cache_dir}"
# One fetch at a time: two lanes on one machine share the cache.
exec 9>"${cache_dir}/.lock"
flock -w 300 9 || die "cannot lock ${cache_dir}/.lock"
find_kernel_pkg() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }'
}
refresh_lists() {
  [[ "$(id -u)" -eq 0 ]] && apt-get update -qq >/dev/null 2>&1
  return 0
}
kernel_pkg="${MEMCG_QEMU_KERNEL_PKG:-}"
if [[ -z "${kernel_pkg}" ]]; then
  kernel_pkg="$(find_kernel_pkg)"
  if [[ -z "${kernel_pkg}" ]]; then
    refresh_lists
    kernel_pkg="$(find_kernel_pkg)"
  fi
  if [[ -z "${kernel_pkg}" ]]; then
    # Offline, or no package lists: fall back to the newest kernel in the cache.
    kernel_pkg="$(find "${cache_dir}" -mindepth 1 -maxdepth 1 -name 'linux-image-*' \
                    -printf '%f\n' | sort -V | tail -n 1)"
  fi
  [[ -n "${kernel_pkg}" ]] || die "cannot tell which package linux-image-amd64 depends on" \
                                   "(apt-cache depends linux-image-amd64 found nothing)"
fi
fetch_kernel() {  # $1: package; fills ${cache_dir}/$1/root
  local k="${cache_dir}/$1" deb
  rm -rf "${k}"
  mkdir -p "${k}"
  # apt's sandbox user cannot write to a root-owned cache dir; download as ourselves.
  (cd "${k}" && apt-get download -qq -o APT::Sandbox::User="$(id -un)" "$1" \
     >/dev/null 2>"${k}/download.err") || return 1
  deb="$(find "${k}" -maxdepth 1 -name '*.deb' | head -n 1)"
  dpkg -x "${deb}" "${k}/root" 2>>"${k}/download.err" || return 1
  rm -f "${deb}" "${k}/download.err"  # the unpacked tree is what we keep
  touch "${k}/.extracted"
}
if [[ ! -f "${cache_dir}/${kernel_pkg}/.extracted" ]]; then
  log "fetching ${kernel_pkg} into ${cache_dir}"
  if ! fetch_kernel "${kernel_pkg}"; then
    # Stale package lists name a kernel the archive no longer has.
    err="$(tail -n 3 "${cache_dir}/${kernel_pkg}/download.err" 2>/dev/null)"
    rm -rf "${cache_dir:?}/${kernel_pkg}"
    [[ -n "${MEMCG_QEMU_KERNEL_PKG:-}" ]] && die "fetching ${kernel_pkg} failed: ${err}"
    refresh_lists
    kernel_pkg="$(find_kernel_pkg)"
    [[ -n "${kernel_pkg}" ]] || die "fetching the kernel package failed: ${err}"
    fetch_kernel "${kernel_pkg}" ||
      die "fetching ${kernel_pkg} failed: $(tail -n 3 "${cache_dir}/${kernel_pkg}/download.err")"
  fi
  # Older kernels in the cache are of no further use.
  for old in "${cache_dir}"/linux-image-*; do
    [[ "${old}" == "${cache_dir}/${kernel_pkg}" ]] || rm -rf "${old}"
  done
fi
flock -u 9
exec 9>&-
kcache="${cache_dir}/${kernel_pkg}"
vmlinuz="$(find "${kcache}/root/boot" -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | head -n 1)"
[[ -f "${vmlinuz}" ]] || die "no vmlinuz in ${kcache}/root/boot"
kver="${vmlinuz##*/vmlinuz-}"
moddir="${kcache}/root/lib/modules/${kver}"
[[ -d "${moddir}" ]] || die "no modules dir ${moddir}"
if ((fetch_only)); then
  log "fetch only: ${kernel_pkg} is in ${cache_dir} ($((SECONDS - t_start)) s)"
  exit 0
fi

# --- 4. temp dir -----------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/memcg_exporter_test_qemu.XXXXXX")"
rootfs="${work}/rootfs"
mkdir -p "${rootfs}"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,mnt,tmp,run,tests} \
         "${rootfs}/lib/modules/memcg"

# --- 5. modules, in dependency order ---------------------------------------------
declare -A mod_path=()
while IFS= read -r f; do
  n="${f##*/}"; n="${n%%.ko*}"; n="${n//-/_}"
  mod_path[${n}]="${f}"
done < <(find "${moddir}/kernel" -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' \
           -o -name '*.ko.gz')
declare -A mod_done=()
mod_order=()
add_module() {
  local m="${1//-/_}" d f
  [[ -n "${mod_done[${m}]:-}" ]] && return 0
  mod_done[${m}]=1
  f="${mod_path[${m}]:-}"
  if [[ -z "${f}" ]]; then
    # Built into this kernel: nothing to load.
    grep -q "/${m}.ko" "${moddir}/modules.builtin" 2>/dev/null && return 0
    die "module ${m} is neither in ${moddir} nor built in"
  fi
  local deps
  deps="$(modinfo -F depends "${f}")"
  for d in ${deps//,/ }; do add_module "${d}"; done
  # busybox insmod takes plain .ko files only.
  case "${f}" in
    *.ko.xz) xz -dc "${f}" >"${rootfs}/lib/modules/memcg/${m}.ko" ;;
    *.ko.zst) zstd -qdc "${f}" >"${rootfs}/lib/modules/memcg/${m}.ko" ;;
    *.ko.gz) gzip -dc "${f}" >"${rootfs}/lib/modules/memcg/${m}.ko" ;;
    *) cp "${f}" "${rootfs}/lib/modules/memcg/${m}.ko" ;;
  esac
  mod_order+=("${m}")
}
for m in "${GUEST_MODULES[@]}"; do add_module "${m}"; done
printf '%s\n' "${mod_order[@]}" >"${rootfs}/lib/modules/memcg/order"

# --- 6. busybox, driver, exporter and its libraries -----------------------------------
cp /bin/busybox "${rootfs}/bin/busybox"
ln -s busybox "${rootfs}/bin/sh"
install -m 0755 "${GUEST_DIR}/init.sh" "${rootfs}/init"
install -m 0644 "${GUEST_DIR}/lib.sh" "${rootfs}/tests/lib.sh"
for t in "${GUEST_DIR}"/test_*.sh; do
  install -m 0644 "${t}" "${rootfs}/tests/${t##*/}"
done
# The shipped rules, for the in-process rule engine of test_40 (one page per event).
install -D -m 0644 "${REPO_ROOT}/alerts/memcg_exporter.rules.yml" \
  "${rootfs}/etc/memcg_exporter/memcg_exporter.rules.yml"
# The host kernel's event formats (the tracing unit tests' fixtures): the
# tracing test reports which of the guest kernel's formats differ from them.
if [[ -d "${REPO_ROOT}/tests/fixtures/tracefs/events" ]]; then
  mkdir -p "${rootfs}/tests/host_formats"
  cp -r "${REPO_ROOT}/tests/fixtures/tracefs/events/." "${rootfs}/tests/host_formats/"
fi
printf '127.0.0.1 localhost\n' >"${rootfs}/etc/hosts"
printf 'hosts: files\n' >"${rootfs}/etc/nsswitch.conf"
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"${rootfs}/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"${rootfs}/etc/group"

# copy_libs BINARY: every library it links, at the path the loader will look
# for it, plus the loader itself (the line with no "=>").
copy_libs() {
  local ldd_out lib
  ldd_out="$(ldd "$1" 2>/dev/null)" || return 0
  while read -r lib; do
    [[ -e "${lib}" && ! -e "${rootfs}${lib}" ]] || continue
    mkdir -p "${rootfs}$(dirname "${lib}")"
    cp -L "${lib}" "${rootfs}${lib}"
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"${ldd_out}")
}
if [[ -n "${exporter}" ]]; then
  install -m 0755 "${exporter}" "${rootfs}/usr/bin/memcg_exporter"
  # Debug info only makes the initramfs bigger and the TCG guest slower to unpack it.
  if command -v strip >/dev/null 2>&1; then
    strip --strip-debug "${rootfs}/usr/bin/memcg_exporter" 2>/dev/null || true
  fi
  copy_libs "${exporter}"
  # The tracer's reader on its own (test_20's record-by-record check).
  if [[ -n "${trace_dump}" ]]; then
    [[ -x "${trace_dump}" ]] || die "--trace-dump binary not found or not executable: ${trace_dump}"
    install -m 0755 "${trace_dump}" "${rootfs}/usr/bin/memcg_trace_raw_dump"
    strip --strip-debug "${rootfs}/usr/bin/memcg_trace_raw_dump" 2>/dev/null || true
    copy_libs "${trace_dump}"
  fi
fi

# --- 7. initramfs -------------------------------------------------------------------
initrd="${work}/initrd.gz"
(cd "${rootfs}" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 >"${initrd}") ||
  die "building the initramfs failed"

# --- 8. workload disk: ext4 holding a ${STREAM_FILE_MIB} MiB file ----------------------
disk="${work}/disk.img"
diskdir="${work}/disk"
mkdir -p "${diskdir}"
# Not zeros: mkfs.ext4 -d turns zero blocks into holes, and the guest must read
# real blocks through the page cache.
(yes 'memcg_exporter qemu lane streaming workload' || true) | head -c "$((STREAM_FILE_MIB << 20))" \
  >"${diskdir}/stream.bin"
disk_mib=$((STREAM_FILE_MIB + 64))
truncate -s "${disk_mib}M" "${disk}"
if ! mkfs.ext4 -q -F -L memcg_test -d "${diskdir}" "${disk}" >/dev/null 2>"${work}/mkfs.err"; then
  # Old e2fsprogs without -d: make it empty and fill it through a loop mount.
  mkfs.ext4 -q -F -L memcg_test "${disk}" >/dev/null || die "mkfs.ext4 failed"
  mkdir -p "${work}/mnt"
  mount -o loop "${disk}" "${work}/mnt" || die "loop-mounting ${disk} failed"
  mounts+=("${work}/mnt")
  cp "${diskdir}/stream.bin" "${work}/mnt/"
  umount "${work}/mnt"
  mounts=()
fi
rm -f "${diskdir}/stream.bin"

# --- 9. boot -----------------------------------------------------------------------------
console="${work}/console.log"
# tsc=reliable: keep the TSC as clocksource (the TCG guest otherwise falls back to
# hpet, whose emulated reads cost tens of us per trace event stamp).
# no_timer_check: on a loaded host the TCG guest's early IO-APIC timer check
# misses its ticks and the kernel panics ("IO-APIC + timer doesn't work!",
# seen with load 19 on 2 cores); the check proves nothing about a VM.
guest_args="console=ttyS0 quiet panic=-1 tsc=reliable no_timer_check"
((verbose)) && guest_args+=" memcg_test.verbose"
log "booting ${kernel_pkg} (${kver}) under qemu/TCG, timeout ${timeout_s}s," \
    "exporter: ${exporter:-none}"
t_boot=${SECONDS}
prep_s=$((t_boot - t_start))
# A TCG boot can hang before /init prints its first line (seen once on an idle
# host: SeaBIOS, "Booting from ROM..", then silence until the 900 s timeout).
# /init prints a MEMCG_TEST line at once, so a guest silent for boot_watch_s
# is killed and booted once more, without "quiet" so that its kernel messages
# show where a second hang stops. Only a silent boot is retried: a guest that
# started its tests is never run twice.
boot_watch_s="${MEMCG_QEMU_BOOT_WATCH:-300}"
hung=0
boot_once() {  # boot_once KERNEL-ARGS: runs the guest; sets qemu_rc, hung
  qemu_rc=0
  hung=0
  : >"${console}"
  timeout -k 5 "${timeout_s}" qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -nographic -no-reboot \
    -kernel "${vmlinuz}" -initrd "${initrd}" \
    -drive "file=${disk},format=raw,if=virtio" \
    -append "$1" </dev/null >"${console}" 2>&1 &
  qemu_pid=$!
  local waited=0
  while kill -0 "${qemu_pid}" 2>/dev/null && ! grep -aq 'MEMCG_TEST' "${console}"; do
    if ((waited >= boot_watch_s)); then
      hung=1
      kill "${qemu_pid}" 2>/dev/null || true
      break
    fi
    sleep 1
    waited=$((waited + 1))
  done
  wait "${qemu_pid}" || qemu_rc=$?
  qemu_pid=""
}
boot_once "${guest_args}"
if ((hung)); then
  log "the guest printed nothing in ${boot_watch_s}s (a boot hung under TCG); booting it again, without quiet"
  cp "${console}" "${console}.first-boot"
  boot_once "${guest_args/quiet /}"
fi
boot_s=$((SECONDS - t_boot))

# --- 10. results -------------------------------------------------------------------------
tr -d '\r' <"${console}" >"${console}.txt"
((verbose)) && sed 's/^/  | /' "${console}.txt"
passed=0
failed=0
skipped=0
done_seen=0
declare -A seen_pass=()
echo "qemu lane: results"
while read -r _ kind name rest; do
  case "${kind}" in
    PASS) passed=$((passed + 1)); seen_pass[${name}]=1; printf '  PASS  %s\n' "${name}" ;;
    FAIL) failed=$((failed + 1)); printf '  FAIL  %s: %s\n' "${name}" "${rest}" ;;
    SKIP) skipped=$((skipped + 1)); printf '  SKIP  %s: %s\n' "${name}" "${rest}" ;;
    INFO) printf '  info  %s %s\n' "${name}" "${rest}" ;;
    DONE) done_seen=1 ;;
  esac
done < <(grep -a -o 'MEMCG_TEST .*' "${console}.txt" || true)

if ((qemu_rc == 124 || qemu_rc == 137)); then
  failed=$((failed + 1))
  printf '  FAIL  guest: qemu timed out after %ss\n' "${timeout_s}"
elif ((!done_seen)); then
  failed=$((failed + 1))
  printf '  FAIL  guest: no DONE marker (qemu exit %s: guest crashed or stopped early)\n' \
    "${qemu_rc}"
fi
# The expected checks (tests/qemu/expected_checks.txt): each must have passed.
# A check that failed is already counted; one never reported, or skipped, is
# a failure here (a guest script that stopped early drops its later checks).
regen="tests/qemu/run.sh --exporter build/exporter/memcg_exporter --trace-dump build/tests/memcg_trace_raw_dump --write-expected"
if ((write_expected)); then
  if ((failed == 0 && passed > 0 && done_seen)); then
    { echo "# The guest checks the qemu lane must see PASS (tests/qemu/run.sh), one per line."
      echo "# Regenerate after adding or renaming a guest check, from a passing run:"
      echo "#   ${regen}"
      printf '%s\n' "${!seen_pass[@]}" | LC_ALL=C sort; } >"${expected_file}"
    log "wrote ${passed} expected checks to ${expected_file}"
  else
    log "--write-expected: not written, the run did not pass"
    failed=$((failed + 1))
  fi
elif [[ -f "${expected_file}" ]]; then
  declare -A reported=()
  while read -r _ kind name _; do
    if [[ ${kind} == PASS || ${kind} == FAIL || ${kind} == SKIP ]]; then reported[${name}]=${kind}; fi
  done < <(grep -a -o 'MEMCG_TEST .*' "${console}.txt" || true)
  expected_n=0
  while read -r name; do
    if [[ -z ${name} || ${name} == \#* ]]; then continue; fi
    expected_n=$((expected_n + 1))
    if [[ -n ${seen_pass[${name}]:-} ]]; then continue; fi
    case "${reported[${name}]:-}" in
      FAIL) ;;  # counted above
      SKIP) failed=$((failed + 1)); printf '  FAIL  %s: an expected check was skipped\n' "${name}" ;;
      *) failed=$((failed + 1))
         printf '  FAIL  %s: an expected check never reported (the guest stopped early or it was removed)\n' "${name}" ;;
    esac
  done <"${expected_file}"
  for name in "${!seen_pass[@]}"; do
    if ! grep -qxF -- "${name}" "${expected_file}"; then
      log "note: ${name} passed but is not in ${expected_file##*/} (regenerate: ${regen})"
    fi
  done
  log "${expected_n} expected checks in ${expected_file##*/}"
else
  failed=$((failed + 1))
  printf '  FAIL  expected checks: no %s (regenerate: %s)\n' "${expected_file}" "${regen}"
fi
if ((failed && !verbose)); then
  echo "qemu lane: last 40 console lines:"
  grep -av 'MEMCG_TEST ' "${console}.txt" | tail -n 40 | sed 's/^/  | /'
fi
((skipped)) && log "${skipped} skipped"
log "prepare ${prep_s}s, boot+tests ${boot_s}s, total $((SECONDS - t_start))s"
echo "qemu: ${passed} passed, ${failed} failed"
((failed == 0 && passed > 0))
