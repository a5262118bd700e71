#!/bin/sh
# /init of the qemu lane's initramfs (busybox sh, PID 1).
#
# Brings up what every guest test needs (proc, sys, devtmpfs, the modules, the
# virtio workload disk at /mnt, cgroup2 at /sys/fs/cgroup with +memory, lo),
# then runs each /tests/test_*.sh in its own subshell, prints the DONE marker
# and powers off. Results go to the serial console as lines
#   MEMCG_TEST PASS <name> | MEMCG_TEST FAIL <name> <reason> |
#   MEMCG_TEST SKIP <name> <reason> | MEMCG_TEST INFO <text> | MEMCG_TEST DONE
# which tests/qemu/run.sh turns into the lane's result. A test file that dies
# half-way loses its remaining results but not the other files'; a guest that
# dies before DONE fails the lane.
/bin/busybox --install -s
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
umask 022

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# For the tracing collectors (and their tests): the kernel's own tracefs.
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# Kernel messages (OOM reports, ...) stay off the console the results travel on.
echo 1 >/proc/sys/kernel/printk

. /tests/lib.sh

finish() {
  sync
  mt_info "tests done at uptime $(cut -d' ' -f1 /proc/uptime)s"
  echo "MEMCG_TEST DONE"
  poweroff -f
  # Not reached; if poweroff failed, exiting PID 1 panics and panic=-1 with
  # qemu -no-reboot ends the VM all the same.
  exit 0
}

mt_info "kernel $(uname -r), $(nproc) cpu, $(awk '/^MemTotal/ { print $2 / 1024 " MiB" }' /proc/meminfo)," \
  "/init started at uptime $(cut -d' ' -f1 /proc/uptime)s"

# --- modules, in the order run.sh resolved from modinfo depends -----------------
mods_ok=1
for m in $(cat /lib/modules/memcg/order); do
  if ! out="$(insmod "/lib/modules/memcg/${m}.ko" 2>&1)"; then
    mt_fail setup_modules "insmod ${m}: ${out}"
    mods_ok=0
    break
  fi
done
[ "${mods_ok}" = 1 ] && mt_pass setup_modules

# --- the workload disk --------------------------------------------------------
i=0
while [ ! -b /dev/vda ] && [ "${i}" -lt 100 ]; do
  sleep 0.1
  i=$((i + 1))
done
if out="$(mount -t ext4 /dev/vda /mnt 2>&1)" && [ -f /mnt/stream.bin ]; then
  mt_pass setup_disk
else
  mt_fail setup_disk "mount -t ext4 /dev/vda /mnt: ${out:-no /mnt/stream.bin}"
fi

# --- cgroup v2 ------------------------------------------------------------------
if ! out="$(mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>&1)"; then
  mt_fail setup_cgroup2 "mount -t cgroup2: ${out}"
  finish
fi
if ! echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
  mt_fail setup_cgroup2 "cannot enable +memory in cgroup.subtree_control" \
    "(controllers: $(cat /sys/fs/cgroup/cgroup.controllers))"
  finish
fi
mt_pass setup_cgroup2

ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up

for t in /tests/test_*.sh; do
  [ -f "${t}" ] || continue
  mt_info "running ${t##*/} at uptime $(uptime_s)s"
  # shellcheck source=/dev/null
  (. "${t}")
done
finish
