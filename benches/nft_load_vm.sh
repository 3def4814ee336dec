#!/usr/bin/env bash
# The nft_load bench (benches/nft_load.rs) on another kernel than the host's: boots
# Debian's kernel package PKG (default linux-image-6.12.117+deb12-amd64, the 6.12
# series OpenWrt 25.12 runs, which lacks the per-commit array of nft_set_rbtree)
# under qemu-system-x86_64 with nf_tables, and runs a static build of the bench in
# it, with Debian's nft and its libraries (from this machine) at /usr/sbin/nft.
# Software emulation (TCG): user space is slowed more than the kernel, so compare
# rows of one run, not figures with the host's (docs/performance.md).
#   cargo zigbuild --release --bench nft_load --target x86_64-unknown-linux-musl
#   benches/nft_load_vm.sh target/x86_64-unknown-linux-musl/release/deps/nft_load-HASH [PKG]
# Needs (Debian): qemu-system-x86, busybox-static, cpio, nftables, zstd; downloads
# PKG once into ${NFT_VM_CACHE:-$HOME/.cache/nft-load-vm}. The bench's last part
# (the daemon's VmHWM) needs the project's binary and stops the run there.
set -euo pipefail
bench=$(realpath "${1:?usage: benches/nft_load_vm.sh BENCH [PKG]}")
pkg=${2:-linux-image-6.12.117+deb12-amd64}
cache=${NFT_VM_CACHE:-$HOME/.cache/nft-load-vm}/$pkg
if [ ! -d "$cache/lib/modules" ]; then
  mkdir -p "$cache"
  (cd "$cache" && apt-get download "$pkg" >/dev/null && dpkg-deb -x "$pkg"_*.deb . && rm -f "$pkg"_*.deb)
fi
kdir=$(find "$cache"/lib/modules -mindepth 1 -maxdepth 1 -type d | head -1)/kernel
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
r=$work/root; mkdir -p "$r"/bin "$r"/lib/mods "$r"/proc "$r"/sys "$r"/dev "$r"/tmp "$r"/usr/sbin "$r"/nft
cp "$(command -v busybox)" "$r"/bin/busybox
for m in crypto/crc32c_generic lib/libcrc32c net/netfilter/nfnetlink net/netfilter/nf_tables; do
  if [ -f "$kdir/$m.ko.xz" ]; then xz -dc "$kdir/$m.ko.xz" > "$r/lib/mods/${m##*/}.ko"; fi
  if [ -f "$kdir/$m.ko.zst" ]; then zstd -qdc "$kdir/$m.ko.zst" > "$r/lib/mods/${m##*/}.ko"; fi
done
cp /usr/sbin/nft "$r"/nft/
for l in $(ldd /usr/sbin/nft | awk '/=>/{print $3} /ld-linux/{print $1}'); do cp -L "$l" "$r"/nft/; done
printf '#!/bin/sh\nexec /nft/ld-linux-x86-64.so.2 --library-path /nft /nft/nft "$@"\n' > "$r"/usr/sbin/nft
chmod +x "$r"/usr/sbin/nft
cp "$bench" "$r"/bin/bench
cat > "$r"/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmpfs /tmp
for m in crc32c_generic libcrc32c nfnetlink nf_tables; do [ -f /lib/mods/$m.ko ] && insmod /lib/mods/$m.ko; done
ip link set lo up
echo "nft_load_vm: kernel $(uname -r)"
cd /tmp && /bin/bench; echo "nft_load_vm: exit $?"
poweroff -f
INIT
chmod +x "$r"/init
(cd "$r" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$work"/initramfs.gz)
# KVM would be faster, but on this project's machines (nested) it stops the guest
# with an emulation error; TCG is what works everywhere.
timeout 3600 qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 1024 \
  -kernel "$(ls "$cache"/boot/vmlinuz-*)" -initrd "$work"/initramfs.gz \
  -append "console=ttyS0 loglevel=3 panic=-1" -nographic -no-reboot </dev/null 2>&1 \
  | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/^.*nft_load_vm: kernel/nft_load_vm: kernel/' \
  | sed -n '/^nft_load_vm: kernel/,/^nft_load_vm: exit/p'
