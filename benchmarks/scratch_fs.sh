#!/usr/bin/env bash
# A new, empty ext4 file system for benchmarks/all.py --work (root only):
#
#     benchmarks/scratch_fs.sh up [DIR] [SIZE]     # default /mnt/cf-bench, 24G; prints DIR
#     benchmarks/scratch_fs.sh down [DIR]          # unmounts it and deletes its image
#
# New, so that no file was deleted on it in the last minutes (ext4 then makes new files dearer); on a loop
# device with direct I/O, so that what a render writes is cached once, not a second time as the image's own
# pages: with the image cached, the million-GPU renders paid 3.7-5.2 us of system time per page fault against
# 2.8 us (docs/speed.md).
set -euo pipefail
action=${1:?usage: scratch_fs.sh up|down [DIR] [SIZE]}
dir=${2:-/mnt/cf-bench}
image="$dir.img"
case "$action" in
  up)
    fallocate -l "${3:-24G}" "$image"
    mkfs.ext4 -q -F "$image"
    mkdir -p "$dir"
    mount "$(losetup -f --show --direct-io=on "$image")" "$dir"
    echo "$dir"
    ;;
  down)
    device=$(findmnt -n -o SOURCE "$dir")
    umount "$dir"
    losetup -d "$device" 2>/dev/null || true
    rm -f "$image"
    ;;
  *) echo "usage: scratch_fs.sh up|down [DIR] [SIZE]" >&2; exit 2 ;;
esac
