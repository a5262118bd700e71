#!/usr/bin/env bash
# Installs the Debian packages memcg_exporter needs, only those missing.
#   deps.sh build   compilers and libraries: only what the exporter's build needs
#                   (README's first command; a fresh machine's first scrape waits for it)
#   deps.sh test    + what the tests use (promtool and a Prometheus server, curl, amtool,
#                   openssl for the TLS test's certificates, strace for the kill -9 test,
#                   python3 with python3-yaml for the alerts/dashboards checks and
#                   python3-snappy for the PromQL agreement test's remote write, chromium
#                   for the live view's browser test (playwright-core from npm drives it), the
#                   deployment checks' tools)
#   deps.sh bench   + what the benchmarks compare against (node_exporter, bpftrace, trace-cmd)
#   deps.sh fuzz    + clang and its libFuzzer runtime (scripts/fuzz.sh)
#   deps.sh trial   + the HTTP server trial's libraries (bench/http_trial)
#   (scripts/test.sh's fuzz stage calls deps.sh fuzz itself)
set -euo pipefail
build=(build-essential cmake pkg-config git zlib1g-dev prometheus-cpp-dev
       libtraceevent-dev libtracefs-dev nlohmann-json3-dev libgtest-dev libgmock-dev
       libbenchmark-dev libre2-dev libcurl4-openssl-dev
       libyaml-cpp-dev libcrypt-dev libssl-dev libcap-dev)
# The vmscan collector's bpf backend (tracing/bpf): without them it is not built and
# `auto` picks tracefs. clang alone is a large download, so the plain build (run.sh)
# goes without; the test, bench and fuzz groups build and test the backend. ccache
# speeds up repeated builds (CI, development), not a first one.
bpf=(libbpf-dev bpftool clang)
dev=(ccache "${bpf[@]}")
# deployment checks (tests/deploy): compose, yamllint, amtool, python3 + yaml, the .deb
# (dpkg-dev for dpkg-shlibdeps, systemd-analyze). node and npm (the Kubernetes schema
# validator, installed into the build tree) come with this machine kind's image; Debian's
# npm package conflicts with that nodejs, so they are only installed when missing.
test=(prometheus curl jq docker-compose yamllint prometheus-alertmanager python3
      python3-yaml python3-snappy dpkg-dev binutils systemd e2fsprogs mount util-linux
      chromium openssl strace bc
      # e2e.deb_upgrade_systemd: a Debian rootfs booted with systemd in a container
      debootstrap systemd-container)
bench=(prometheus-node-exporter bc python3 bpftrace trace-cmd)
fuzz=(clang libclang-rt-dev)
trial=(libmicrohttpd-dev libboost-dev python3 openssl)
want=("${build[@]}")
case "${1:-build}" in
  build) ;;
  # The container image's build stage (docker/Dockerfile): the exporter with its
  # bpf backend, whose toolchain a first build on a developer's machine skips.
  image) want+=("${bpf[@]}") ;;
  test) want+=("${dev[@]}" "${test[@]}"); command -v npm >/dev/null || want+=(nodejs npm) ;;
  bench) want+=("${dev[@]}" "${test[@]}" "${bench[@]}"); command -v npm >/dev/null || want+=(nodejs npm) ;;
  fuzz) want+=("${dev[@]}" "${fuzz[@]}") ;;
  trial) want+=("${trial[@]}") ;;
  *) echo "usage: $0 [build|image|test|bench|fuzz|trial]" >&2; exit 2 ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
  echo "deps.sh: run as root to install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
