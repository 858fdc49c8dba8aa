# Sourced by the kernel measurement scripts: checks for root and fio, then attaches a loop
# device over a 1 GiB file in /dev/shm filled with random bytes (reads copy real pages, not the
# shared zero page), and detaches it and removes the file on exit.
# Sets: img (the file), dev (/dev/loopN), n (loopN), size_mib, out (a scratch JSON file).
command -v fio >/dev/null || { echo "$0: needs fio (apt-get install fio)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root for losetup" >&2; exit 1; }
img=$(mktemp /dev/shm/blksim-loop.XXXXXX)
out=$(mktemp /tmp/blksim-loop.XXXXXX.json)
dev=""
shm_loop_cleanup() {
  [ -n "$dev" ] && losetup -d "$dev" 2>/dev/null || true
  rm -f "$img" "$out"
}
trap shm_loop_cleanup EXIT
size_mib=1024
truncate -s ${size_mib}M "$img"
dd if=/dev/urandom of="$img" bs=1M count=$size_mib conv=notrunc status=none
dev=$(losetup -f --show "$img")
n=$(basename "$dev")
echo "# kernel $(uname -r), $(fio --version), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
