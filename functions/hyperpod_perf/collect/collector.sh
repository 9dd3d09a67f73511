#!/usr/bin/env bash
# hyperpod-perf node collector: prints raw command output in hpd sections, judges nothing.
#   === hpd:begin <name> nonce=<N> ===  ...raw output...  === hpd:end <name> rc=<rc> nonce=<N> ===
# <N> is this run's random nonce (32 hex digits from /dev/urandom), printed in every marker and in
# `meta`, never exported to a tool nor put on a command line (argv is world-readable): a tool's
# output cannot know it, so it cannot forge a section boundary.
# Sections come in the order of SECTION_ORDER in collect/snapshot.py. Read-only by design:
# the only writes go to a private `mktemp -d` directory that the EXIT trap removes; no
# service is touched, nothing is installed, no network is used.
# Every command runs under `timeout` (a hung `lfs df` shows as rc=124), a missing tool
# shows as rc=127, each section is capped and the whole output stays under ~1 MiB.
# Environment (all optional): HPD_TIMEOUT seconds per section (20), HPD_SYSFS (/sys),
# HPD_PROCFS (/proc), HPD_ROOT (/) for files and mount points, HPD_SECTION_CAP (262144)
# and HPD_TOTAL_CAP (1048576) bytes, HPD_STAT_INTERVAL seconds between /proc/stat reads (1).
# Values the node cannot tell are printed empty (`key=`).
# The sec_* functions run in child shells (`bash -c sec_x` under timeout), hence SC2317.
# shellcheck disable=SC2317
set -u
export LC_ALL=C
export HPD_VERSION=2
HPD_TIMEOUT=${HPD_TIMEOUT:-20}
# A positive number only: GNU `timeout 0` (or 0.0) means no limit at all.
[[ $HPD_TIMEOUT =~ ^[0-9]+(\.[0-9]+)?$ && $HPD_TIMEOUT =~ [1-9] ]] || HPD_TIMEOUT=20
HPD_ROOT=${HPD_ROOT:-/}
export HPD_TIMEOUT HPD_SYSFS=${HPD_SYSFS:-/sys} HPD_PROCFS=${HPD_PROCFS:-/proc} HPD_ROOT=${HPD_ROOT%/}
export HPD_STAT_INTERVAL=${HPD_STAT_INTERVAL:-1}
export HPD_GPU_FIELDS=index,name,pci.bus_id,temperature.gpu,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,ecc.errors.corrected.volatile.total,clocks_event_reasons.active,power.draw,power.limit,driver_version,remapped_rows.pending,remapped_rows.failure,remapped_rows.correctable,remapped_rows.uncorrectable,serial,uuid
SECTION_CAP=${HPD_SECTION_CAP:-262144}
TOTAL_CAP=${HPD_TOTAL_CAP:-1048576}
# SSM sessions start with a short PATH; the EFA tools live outside it on DLAMI images.
export PATH="${PATH:-/usr/bin:/bin}:/usr/sbin:/sbin:/opt/amazon/efa/bin"

HPD_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hpd.XXXXXX") || exit 1
export HPD_TMP
trap 'rm -rf -- "$HPD_TMP"' EXIT
unset HPD_NONCE # one inherited from the environment would be exported to every tool
HPD_NONCE=$(od -An -N16 -tx1 /dev/urandom 2>/dev/null | tr -d ' \n')
[[ $HPD_NONCE =~ ^[0-9a-f]{32}$ ]] || exit 1
# sec_meta (a child shell) prints it from the private directory, not from its environment.
printf '%s\n' "$HPD_NONCE" >"$HPD_TMP/nonce" || exit 1
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# --- section bodies: each runs in a child bash under `timeout` and returns its rc ---------

sec_meta() {
  local up id itype="" group="" product
  printf 'collector_version=%s\n' "$HPD_VERSION"
  printf 'hostname=%s\n' "$(cat "$HPD_PROCFS/sys/kernel/hostname" 2>/dev/null || hostname)"
  printf 'kernel=%s\n' "$(cat "$HPD_PROCFS/sys/kernel/osrelease" 2>/dev/null)"
  read -r up _ 2>/dev/null <"$HPD_PROCFS/uptime"
  printf 'uptime_s=%s\n' "${up%.*}"
  printf 'date_utc=%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  id=$(cat "$HPD_SYSFS/devices/virtual/dmi/id/board_asset_tag" 2>/dev/null)
  [[ $id =~ ^i-[0-9a-f]{8,17}$ ]] || id=""
  local rcfg="$HPD_ROOT/opt/ml/config/resource_config.json"
  if [[ -r $rcfg ]] && command -v python3 >/dev/null; then
    local ips=()
    read -ra ips <<<"$(hostname -I 2>/dev/null)"
    # HyperPod lists each instance group's type and members; find the group holding this node.
    read -r group itype < <(python3 -c '
import json, sys
keys = set(sys.argv[2:]) - {""}
for g in json.load(open(sys.argv[1])).get("InstanceGroups") or []:
    for i in g.get("Instances") or []:
        if keys & {str(v) for v in i.values()}:
            print(g.get("Name") or g.get("InstanceGroupName") or "-", g.get("InstanceType", ""))
            raise SystemExit
' "$rcfg" "$id" "${ips[@]}" 2>/dev/null)
    [[ $group == "-" ]] && group=""
  fi
  if [[ -z $itype ]]; then
    product=$(cat "$HPD_SYSFS/devices/virtual/dmi/id/product_name" 2>/dev/null)
    [[ $product =~ ^[a-z][a-z0-9-]*\.[a-z0-9]+$ ]] && itype=$product
  fi
  printf 'instance_id=%s\ninstance_type=%s\ninstance_group=%s\n' "$id" "$itype" "$group"
  printf 'timeout_s=%s\n' "$HPD_TIMEOUT"
  printf 'nonce=%s\n' "$(cat "$HPD_TMP/nonce")"
}

sec_gpu_query() {
  local out rc
  out=$(nvidia-smi --query-gpu="$HPD_GPU_FIELDS" --format=csv 2>&1)
  rc=$?
  # Drivers before 535 name the field clocks_throttle_reasons.active.
  if ((rc != 0 && rc != 127)) && [[ $out == *"not a valid field"* ]]; then
    nvidia-smi --query-gpu="${HPD_GPU_FIELDS/clocks_event_reasons/clocks_throttle_reasons}" --format=csv
    return
  fi
  [[ -n $out ]] && printf '%s\n' "$out"
  return "$rc"
}

dmesg_lines() { # <extended regex> <last n> [-i]: matching `dmesg -T` lines, rc of dmesg itself
  local d="$HPD_TMP/dmesg"
  if [[ ! -e $d.rc ]]; then
    dmesg -T >"$d.txt" 2>"$d.err"
    echo "$?" >"$d.rc"
  fi
  cat "$d.err"
  grep -E ${3:+"$3"} -- "$1" "$d.txt" | tail -n "$2"
  return "$(cat "$d.rc")"
}
sec_xid() { dmesg_lines 'NVRM: Xid|SXid|fallen off the bus' 200; }
# Case-insensitive: the memory-cgroup kill reads `Memory cgroup out of memory: Killed process ...`.
sec_oom() { dmesg_lines 'out of memory|oom-kill' 50 -i; }

sec_efa_ports() {
  local d s rc=0
  for d in "$HPD_SYSFS"/class/infiniband/*; do
    [[ -e $d ]] || continue
    s=$(cat "$d/ports/1/state" 2>&1) || rc=1
    printf '%s %s\n' "${d##*/}" "$s"
  done
  return "$rc"
}

sec_efa_counters() {
  local d f v rc=0
  for d in "$HPD_SYSFS"/class/infiniband/*; do
    for f in "$d"/ports/1/hw_counters/*; do
      [[ -f $f ]] || continue
      v=""
      if ! IFS= read -r v 2>/dev/null <"$f" && [[ -z $v ]]; then
        v="<unreadable>"
        rc=1
      fi
      printf '%s %s %s\n' "${d##*/}" "${f##*/}" "$v"
    done
  done
  return "$rc"
}

sec_versions() {
  local r="$HPD_ROOT" v f
  shopt -s nullglob
  v=$(cat "$HPD_SYSFS/module/nvidia/version" 2>/dev/null)
  printf 'driver=%s\n' "$v"
  v=""
  if [[ -r $r/usr/local/cuda/version.json ]]; then
    v=$(grep -o -m1 '"version"[[:space:]]*:[[:space:]]*"[0-9.]*"' "$r/usr/local/cuda/version.json" | grep -o '[0-9][0-9.]*')
  elif [[ -e $r/usr/local/cuda ]]; then
    v=$(readlink -m "$r/usr/local/cuda")
    v=${v##*/cuda-}
    [[ $v =~ ^[0-9][0-9.]*$ ]] || v=""
  fi
  printf 'cuda=%s\n' "$v"
  v=$(sed -n 's/^# EFA installer version: *//p' "$r/opt/amazon/efa_installed_packages" 2>/dev/null | head -n1)
  printf 'efa_installer=%s\n' "$v"
  printf 'efa_module=%s\n' "$(cat "$HPD_SYSFS/module/efa/version" 2>/dev/null)"
  v=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: *//p' | head -n1)
  printf 'libfabric=%s\n' "$v"
  v=""
  for f in "$r"/opt/amazon/ofi-nccl/lib*/libnccl-net*.so "$r"/opt/aws-ofi-nccl/lib*/libnccl-net*.so; do
    # The plugin logs "Initializing aws-ofi-nccl <version>"; that string is in the library.
    v=$(grep -a -o -m1 'aws-ofi-nccl [0-9][0-9A-Za-z.+-]*' "$f" | head -n1)
    v=${v#aws-ofi-nccl }
    [[ -n $v ]] && break
  done
  printf 'aws_ofi_nccl=%s\n' "$v"
  v=$(for f in "$r"/usr/lib/x86_64-linux-gnu/libnccl.so.2.* "$r"/usr/lib64/libnccl.so.2.* \
    "$r"/usr/local/cuda/lib*/libnccl.so.2.* "$r"/opt/nccl/build/lib/libnccl.so.2.*; do
    printf '%s\n' "${f##*/libnccl.so.}"
  done | sort -V | tail -n1)
  printf 'nccl=%s\n' "$v"
  v=$(nv-fabricmanager --version 2>/dev/null | grep -o -m1 '[0-9][0-9.]*[0-9]' | head -n1)
  printf 'fabric_manager=%s\n' "$v"
}

sec_cpu_governor() {
  local f n g
  for f in "$HPD_SYSFS"/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; do
    [[ -r $f ]] || continue
    n=${f%/cpufreq/*}
    g=""
    IFS= read -r g 2>/dev/null <"$f"
    printf '%s %s\n' "${n##*/}" "$g"
  done | sort -k1.4n
}

sec_df() {
  local p list=()
  for p in / /dev/shm /fsx /opt/dlami/nvme /opt/sagemaker; do
    [[ -d $HPD_ROOT$p ]] && list+=("$HPD_ROOT$p")
  done
  ((${#list[@]} == 0)) || df -kP "${list[@]}"
}

sec_lfs_df() {
  local mp r rc=0
  while read -r _ mp; do
    lfs df -h "$mp"
    r=$?
    ((r == 0)) || rc=$r
  done < <(awk '$3 == "lustre" && !seen[$1]++ {print $1, $2}' "$HPD_PROCFS/mounts")
  return "$rc"
}

sec_pcie_aer() {
  # The kernel's AER counters (aer_dev_*) of the NVIDIA functions and the EFA devices, verbatim
  # under a `== <bdf> vendor= device= class=` header; a device without the files shows only
  # its header (AER statistics not exposed: not readable, not a fault).
  local d f vendor device
  for d in "$HPD_SYSFS"/bus/pci/devices/*; do
    [[ -e $d ]] || continue
    IFS= read -r vendor 2>/dev/null <"$d/vendor" || continue
    IFS= read -r device 2>/dev/null <"$d/device"
    case $vendor:$device in
      0x10de:*) ;;
      0x1d0f:0xefa*) ;;
      *) continue ;;
    esac
    printf '== %s vendor=%s device=%s class=%s\n' "${d##*/}" "$vendor" "$device" "$(cat "$d/class" 2>/dev/null)"
    for f in "$d"/aer_dev_correctable "$d"/aer_dev_nonfatal "$d"/aer_dev_fatal; do
      [[ -e $f ]] || continue
      printf -- '-- %s\n' "${f##*/}"
      cat "$f" 2>/dev/null || echo "<unreadable>"
    done
  done
  return 0
}

sec_cpu_stat() {
  grep '^cpu ' "$HPD_PROCFS/stat" || return
  sleep "$HPD_STAT_INTERVAL"
  grep '^cpu ' "$HPD_PROCFS/stat"
}

export -f sec_meta sec_gpu_query dmesg_lines sec_xid sec_oom sec_efa_ports sec_efa_counters \
  sec_versions sec_cpu_governor sec_df sec_lfs_df sec_cpu_stat sec_pcie_aer

# --- the runner: timeout, watchdog, caps -----------------------------------------------------

EMITTED=0
SECTIONS_LEFT=22

emit() { # <name> <command...>
  local name=$1 cap pid deadline rc size start=$SECONDS
  local out="$HPD_TMP/$1.out" rcf="$HPD_TMP/$1.rc" sec="$HPD_TMP/$1.sec"
  shift
  SECTIONS_LEFT=$((SECTIONS_LEFT - 1))
  # Keep room for the markers of every section still to come, so all of them always appear.
  cap=$((TOTAL_CAP - EMITTED - 200 * (SECTIONS_LEFT + 1)))
  ((SECTION_CAP < cap)) && cap=$SECTION_CAP
  ((cap < 0)) && cap=0
  # head keeps the first cap+1 bytes, cat drains the rest so the command ends with its own rc.
  # timeout leads its own process group; killing that group afterwards ends any leftover
  # child (e.g. one that ignored SIGTERM) that would otherwise hold the pipe open.
  ( { timeout -k 2 "$HPD_TIMEOUT" "$@" </dev/null 2>&1 &
      tpid=$!
      wait "$tpid"
      echo "$?" >"$rcf"
      kill -KILL -- "-$tpid" 2>/dev/null; } |
    { head -c "$((cap + 1))" >"$out"; cat >/dev/null; } ) >/dev/null 2>&1 &
  pid=$!
  deadline=$((SECONDS + ${HPD_TIMEOUT%.*} + 5))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then
    rc=124 # still stuck after SIGKILL (uninterruptible I/O): leave it behind, report the hang
  else
    wait "$pid"
    rc=$(cat "$rcf" 2>/dev/null)
    [[ $rc =~ ^[0-9]+$ ]] || rc=1
    # timeout -k answers 137 when TERM was ignored and KILL was needed: still a hang.
    ((rc == 137 && ${HPD_TIMEOUT%.*} <= SECONDS - start)) && rc=124
  fi
  size=$(wc -c <"$out" 2>/dev/null || echo 0)
  {
    printf '=== hpd:begin %s nonce=%s ===\n' "$name" "$HPD_NONCE"
    if ((cap < size)); then
      head -c "$cap" "$out"
      printf '\n[hpd: output truncated: first %d bytes kept]\n' "$cap"
    elif ((0 < size)); then
      cat "$out"
      [[ -z $(tail -c 1 "$out") ]] || echo
    fi
    printf '=== hpd:end %s rc=%s nonce=%s ===\n' "$name" "$rc" "$HPD_NONCE"
  } >"$sec"
  cat "$sec"
  EMITTED=$((EMITTED + $(wc -c <"$sec")))
}

emit meta bash -c sec_meta
emit gpu-query bash -c sec_gpu_query
emit gpu-topo nvidia-smi topo -m
emit nvlink-status nvidia-smi nvlink -s
emit nvlink-errors nvidia-smi nvlink -e
emit xid bash -c sec_xid
emit efa-ports bash -c sec_efa_ports
emit efa-counters bash -c sec_efa_counters
emit fi-info fi_info -p efa
emit versions bash -c sec_versions
emit cpu-governor bash -c sec_cpu_governor
emit fabric-manager systemctl is-active nvidia-fabricmanager
# shellcheck disable=SC2016 # an awk program, not shell
emit mounts awk '$3 ~ /^(lustre|nfs|nfs4|ext4|xfs)$/' "$HPD_PROCFS/mounts"
emit df bash -c sec_df
emit lfs-df bash -c sec_lfs_df
emit cpu-stat bash -c sec_cpu_stat
emit io-pressure cat "$HPD_PROCFS/pressure/io"
emit memlock bash -c 'ulimit -l'
emit oom bash -c sec_oom
# PCIe link errors: the GPUs' replay counters (no --query-gpu field exists) and the AER counters.
emit gpu-pcie nvidia-smi -q -d PCIE
emit pcie-aer bash -c sec_pcie_aer
# The cluster's switch (or block) topology as slurmctld knows it: a read-only query every Slurm
# node can make; elsewhere (EKS) scontrol is missing (rc=127). Read by Evaluate, not a node check.
emit slurm-topology scontrol show topology
exit 0
