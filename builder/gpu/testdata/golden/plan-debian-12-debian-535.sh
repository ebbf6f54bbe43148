#!/bin/sh
# gpuhost-gpu plan: written by the gpuhost-gpu provisioner from its
# configuration alone (`gpuhost plan` prints the same text). It installs the
# pinned NVIDIA stack, holds it, configures containerd, and checks the pins.
# distro: debian 12 bookworm; driver: debian proprietary 535.261.03-1
set -eu

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
GPUHOST_STEP=start
GPUHOST_WORK=$(mktemp -d)
GPUHOST_POLICY_RC=

step() {
	GPUHOST_STEP=$1
	echo "==> gpuhost-gpu step: $1"
}

die() {
	echo "gpuhost-gpu: $*" >&2
	exit 1
}

cleanup() {
	rc=$?
	rm -rf "$GPUHOST_WORK"
	if [ -n "$GPUHOST_POLICY_RC" ]; then
		rm -f /usr/sbin/policy-rc.d
	fi
	if [ "$rc" -ne 0 ]; then
		echo "==> gpuhost-gpu failed in step: $GPUHOST_STEP (exit $rc)" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

apt_install() {
	apt-get install -y --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@"
}

unit_file() {
	for d in /etc/systemd/system /lib/systemd/system /usr/lib/systemd/system; do
		if [ -f "$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
	return 1
}

# enable_unit works offline: systemctl enable needs no running systemd, and
# without systemctl the wants link is what enable would make.
enable_unit() {
	f=$(unit_file "$1") || die "unit $1 is not installed"
	if command -v systemctl >/dev/null 2>&1; then
		systemctl enable "$1"
	else
		mkdir -p /etc/systemd/system/multi-user.target.wants
		ln -sf "$f" "/etc/systemd/system/multi-user.target.wants/$1"
	fi
}

mask_unit() {
	if command -v systemctl >/dev/null 2>&1; then
		systemctl mask "$@"
	else
		mkdir -p /etc/systemd/system
		for u in "$@"; do
			ln -sf /dev/null "/etc/systemd/system/$u"
		done
	fi
}

# pin_check PKG VERSION: the package is installed and held, at VERSION
# unless VERSION is empty.
pin_check() {
	found=$(dpkg-query -W -f='${Version} ${Status}' "$1" 2>/dev/null) || found="not installed"
	if [ -n "$2" ]; then
		want="$2 hold ok installed"
	else
		want="<any> hold ok installed"
	fi
	case "$found" in
	"$2 hold ok installed") return 0 ;;
	*" hold ok installed")
		if [ -z "$2" ]; then
			return 0
		fi
		;;
	esac
	echo "pin check failed: $1 is $found, want $want" >&2
	exit 1
}

# Package scripts must not start services on an image being built.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 0755 /usr/sbin/policy-rc.d
	GPUHOST_POLICY_RC=1
fi

step "apt components"
# NVIDIA's userspace is in non-free, glx-alternative-nvidia in contrib.
gpuhost_components() {
	awk '
	($1 == "deb" || $1 == "deb-src") {
		out = ""
		for (i = 1; i <= NF; i++) {
			if ($i == "contrib" || $i == "non-free" || $i == "non-free-firmware") continue
			out = out (out == "" ? "" : " ") $i
		}
		if (out ~ / main( |$)/) out = out " contrib non-free non-free-firmware"
		print out
		next
	}
	$1 == "Components:" {
		out = "Components:"
		for (i = 2; i <= NF; i++) {
			if ($i == "contrib" || $i == "non-free" || $i == "non-free-firmware") continue
			out = out " " $i
		}
		print out " contrib non-free non-free-firmware"
		next
	}
	{ print }
	' "$1" >"$1.gpuhost"
	cat "$1.gpuhost" >"$1"
	rm -f "$1.gpuhost"
}
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	if [ -f "$f" ]; then
		gpuhost_components "$f"
	fi
done

step "apt preferences"
# Every binary of the driver's source package at the pinned version, so that
# exact-version dependencies do not resolve to a newer build.
cat >/etc/apt/preferences.d/gpuhost-nvidia.pref <<'EOF'
Package: src:nvidia-graphics-drivers
Pin: version 535.261.03-1
Pin-Priority: 1001

Package: src:nvidia-persistenced
Pin: version 535.171.04-1~deb12u1
Pin-Priority: 1001
EOF

step "apt update"
apt-get update

step "install driver"
apt_install 'libnvidia-ml1=535.261.03-1' 'nvidia-smi=535.261.03-1' 'nvidia-persistenced=535.171.04-1~deb12u1'

step "install containerd"
apt_install 'containerd'

step "hold"
apt-mark hold 'libnvidia-ml1' 'nvidia-smi' 'nvidia-persistenced'

step "containerd config"
command -v containerd >/dev/null 2>&1 || die "containerd is not installed"
ctr_version=$(containerd --version | awk '{print $3}')
ctr_version=${ctr_version#v}
case "$ctr_version" in
1.*)
	ctr_schema=2
	ctr_cri='io.containerd.grpc.v1.cri'
	;;
2.*)
	ctr_schema=3
	ctr_cri='io.containerd.cri.v1.runtime'
	;;
*) die "containerd $ctr_version is neither 1.x nor 2.x" ;;
esac
mkdir -p /etc/containerd/conf.d
ctr_config=/etc/containerd/config.toml
if [ ! -f "$ctr_config" ] || ! grep -Eq '^[[:space:]]*[^#[:space:]]' "$ctr_config"; then
	printf 'version = %s\nimports = ["/etc/containerd/conf.d/*.toml"]\n' "$ctr_schema" >"$ctr_config"
elif ! grep -Eq '^[[:space:]]*version[[:space:]]*=' "$ctr_config"; then
	die "$ctr_config has settings but no version line; refusing to guess its schema"
elif ! grep -Eq '^[[:space:]]*imports[[:space:]]*=' "$ctr_config"; then
	{
		echo 'imports = ["/etc/containerd/conf.d/*.toml"]'
		cat "$ctr_config"
	} >"$ctr_config.gpuhost"
	cat "$ctr_config.gpuhost" >"$ctr_config"
	rm -f "$ctr_config.gpuhost"
elif ! grep -q '/etc/containerd/conf.d/\*\.toml' "$ctr_config"; then
	die "$ctr_config imports other files but not /etc/containerd/conf.d/*.toml"
fi
nvidia_runtime=
if command -v nvidia-container-runtime >/dev/null 2>&1; then
	nvidia_runtime=$(command -v nvidia-container-runtime)
fi
# Imports merge in name order after config.toml; this one sorts last, so
# its runtime settings win over the toolkit's.
{
	echo '# Written by the gpuhost-gpu provisioner.'
	echo "version = $ctr_schema"
	echo
	echo "[plugins.\"$ctr_cri\".containerd]"
	echo '  default_runtime_name = "runc"'
	echo
	echo "[plugins.\"$ctr_cri\".containerd.runtimes.runc]"
	echo '  runtime_type = "io.containerd.runc.v2"'
	echo
	echo "[plugins.\"$ctr_cri\".containerd.runtimes.runc.options]"
	echo '  SystemdCgroup = true'
	if [ -n "$nvidia_runtime" ]; then
		echo
		echo "[plugins.\"$ctr_cri\".containerd.runtimes.nvidia]"
		echo '  runtime_type = "io.containerd.runc.v2"'
		echo '  privileged_without_host_devices = false'
		echo
		echo "[plugins.\"$ctr_cri\".containerd.runtimes.nvidia.options]"
		echo "  BinaryName = \"$nvidia_runtime\""
		echo '  SystemdCgroup = true'
	fi
} >/etc/containerd/conf.d/99-zz-gpuhost.toml
chmod 0644 /etc/containerd/conf.d/99-zz-gpuhost.toml

step "blacklist nouveau"
# The NVIDIA driver and nouveau cannot drive the same GPU; only the full
# driver packages ship this file, so the userspace-only sources need it too.
cat >/etc/modprobe.d/gpuhost-blacklist-nouveau.conf <<'EOF'
# Written by the gpuhost-gpu provisioner.
blacklist nouveau
options nouveau modeset=0
EOF
chmod 0644 /etc/modprobe.d/gpuhost-blacklist-nouveau.conf
# On the kernel command line too, where an initramfs made without this
# file still reads it.
mkdir -p /etc/default/grub.d
cat >/etc/default/grub.d/60-gpuhost-nouveau.cfg <<'EOF'
# Written by the gpuhost-gpu provisioner: keep nouveau off the GPUs.
GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX modprobe.blacklist=nouveau nouveau.modeset=0"
EOF
if [ -f /etc/kernel/cmdline ] && ! grep -q 'modprobe.blacklist=nouveau' /etc/kernel/cmdline; then
	printf '%s modprobe.blacklist=nouveau nouveau.modeset=0\n' "$(cat /etc/kernel/cmdline)" >/etc/kernel/cmdline.gpuhost
	cat /etc/kernel/cmdline.gpuhost >/etc/kernel/cmdline
	rm -f /etc/kernel/cmdline.gpuhost
fi
if command -v update-initramfs >/dev/null 2>&1 && ls /boot/initrd.img-* >/dev/null 2>&1; then
	update-initramfs -u -k all
fi

step "cgroup v2"
mkdir -p /etc/default/grub.d
cat >/etc/default/grub.d/60-gpuhost.cfg <<'EOF'
# Written by the gpuhost-gpu provisioner: boot with the unified cgroup v2 hierarchy.
GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1"
EOF
if [ -f /etc/kernel/cmdline ] && ! grep -q 'systemd.unified_cgroup_hierarchy=1' /etc/kernel/cmdline; then
	printf '%s systemd.unified_cgroup_hierarchy=1\n' "$(cat /etc/kernel/cmdline)" >/etc/kernel/cmdline.gpuhost
	cat /etc/kernel/cmdline.gpuhost >/etc/kernel/cmdline
	rm -f /etc/kernel/cmdline.gpuhost
fi
# A chroot cannot probe the boot device; the image's builder writes grub.cfg.
if [ -f /boot/grub/grub.cfg ] && command -v update-grub >/dev/null 2>&1 && ! ischroot 2>/dev/null; then
	update-grub
fi

step "memory limits"
mkdir -p '/etc/systemd/system/user.slice.d'
cat >'/etc/systemd/system/user.slice.d/50-gpuhost-memory.conf' <<'EOF'
# Written by the gpuhost-gpu provisioner (memory_limits).
[Slice]
MemoryMax=50%
MemoryHigh=40%
EOF
chmod 0644 '/etc/systemd/system/user.slice.d/50-gpuhost-memory.conf'

step "services"
enable_unit 'nvidia-persistenced.service'

step "unattended upgrades"
mask_unit unattended-upgrades.service apt-daily.timer apt-daily-upgrade.timer

step "verify pins"
pin_check 'libnvidia-ml1' '535.261.03-1'
pin_check 'nvidia-smi' '535.261.03-1'
pin_check 'nvidia-persistenced' '535.171.04-1~deb12u1'

step done
echo "gpuhost-gpu: all pins installed and held"
