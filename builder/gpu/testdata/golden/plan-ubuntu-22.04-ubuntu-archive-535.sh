#!/bin/sh
# gpuhost-gpu plan: written by the gpuhost-gpu provisioner from its
# configuration alone (`gpuhost plan` prints the same text). It installs the
# pinned NVIDIA stack, holds it, configures containerd,
# and checks the pins.
# distro: ubuntu 22.04 jammy; driver: ubuntu-archive proprietary 535.247.01-0ubuntu0.22.04.1
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

# fetch URL FILE SHA256: download, and refuse the file unless its digest is
# the pinned one. Nothing fetched is installed before this check. Over
# https, or plain http to a mirror on this machine's loopback.
fetch() {
	case "$1" in
	https://*) proto='=https' ;;
	http://127.*|http://localhost:*|http://localhost/*|http://\[::1\]*) proto='=http' ;;
	*) die "refusing to fetch $1: not https, nor http on loopback" ;;
	esac
	curl -fsSL --retry 3 --proto "$proto" --tlsv1.2 -o "$2" "$1"
	got=$(sha256sum "$2" | cut -d' ' -f1)
	[ "$got" = "$3" ] || die "sha256 of $1 is $got, want $3"
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

# available PKG VERSION: the apt sources carry PKG at VERSION (at any
# version when VERSION is empty); otherwise say which versions they carry.
available() {
	have=$(apt-cache madison "$1" | awk -F'|' '{ gsub(/ /, "", $2); if (!seen[$2]++) printf "%s%s", (n++ ? ", " : ""), $2 }')
	if [ -z "$have" ]; then
		echo "gpuhost-gpu: $1 is not in the apt sources at any version" >&2
		return 1
	fi
	if [ -z "$2" ]; then
		return 0
	fi
	case ", $have, " in
	*", $2, "*) return 0 ;;
	esac
	echo "gpuhost-gpu: $1=$2 is not in the apt sources, which have $1 at: $have" >&2
	return 1
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

# installed_packages FILE: NAME ARCH VERSION of every installed package,
# sorted.
installed_packages() {
	dpkg-query -W -f='${Package} ${Architecture} ${Version} ${Status}\n' |
		awk '$6 == "installed" { print $1, $2, $3 }' | LC_ALL=C sort >"$1"
}

# apt_index FILE: NAME ARCH VERSION SHA256 of every package build apt's
# Packages indexes offer: what apt checks a download against.
apt_index() {
	apt-get indextargets --format '$(FILENAME)' 'Created-By: Packages' | while IFS= read -r f; do
		if [ -f "$f" ]; then
			/usr/lib/apt/apt-helper cat-file "$f"
		fi
	done | awk '
	/^Package: / { p = $2 }
	/^Version: / { v = $2 }
	/^Architecture: / { a = $2 }
	/^SHA256: / { s = $2 }
	/^$/ { if (p != "" && s != "") print p, a, v, s; p = v = a = s = "" }
	END { if (p != "" && s != "") print p, a, v, s }
	' | LC_ALL=C sort -u >"$1"
}

# Package scripts must not start services on an image being built.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 0755 /usr/sbin/policy-rc.d
	GPUHOST_POLICY_RC=1
fi

step "apt preferences"
# Every binary of the driver's source package at the pinned version, so that
# exact-version dependencies do not resolve to a newer build.
cat >/etc/apt/preferences.d/gpuhost-nvidia.pref <<'EOF'
Package: src:nvidia-graphics-drivers-535-server
Pin: version 535.247.01-0ubuntu0.22.04.1
Pin-Priority: 1001
EOF

step "apt update"
apt-get update
apt_install ca-certificates curl gpg

step "container toolkit repository"
fetch 'https://nvidia.github.io/libnvidia-container/gpgkey' "$GPUHOST_WORK/nvidia-container-toolkit.key" '1111111111111111111111111111111111111111111111111111111111111111'
gpg --batch --yes --dearmor -o '/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg' "$GPUHOST_WORK/nvidia-container-toolkit.key"
chmod 0644 '/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg'
echo 'deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /' >/etc/apt/sources.list.d/nvidia-container-toolkit.list

step "apt update"
apt-get update

step "pins available"
# Every pin is looked up before anything is installed: a version missing
# from the repository fails here, naming the versions it has.
missing=
available 'nvidia-headless-no-dkms-535-server' '535.247.01-0ubuntu0.22.04.1' || missing=1
available 'nvidia-utils-535-server' '535.247.01-0ubuntu0.22.04.1' || missing=1
available 'nvidia-fabricmanager-535' '535.247.01-0ubuntu0.22.04.1' || missing=1
available 'nvidia-container-toolkit' '1.17.8-1' || missing=1
available 'nvidia-container-toolkit-base' '1.17.8-1' || missing=1
available 'libnvidia-container-tools' '1.17.8-1' || missing=1
available 'libnvidia-container1' '1.17.8-1' || missing=1
available 'linux-modules-nvidia-535-server-5.15.0-153-generic' '' || missing=1
available 'containerd' '' || missing=1
[ -z "$missing" ] || die "pinned packages are missing from the apt sources (above)"

step "install driver"
apt_install 'nvidia-headless-no-dkms-535-server=535.247.01-0ubuntu0.22.04.1' 'nvidia-utils-535-server=535.247.01-0ubuntu0.22.04.1' 'linux-modules-nvidia-535-server-5.15.0-153-generic'

step "install fabric manager"
apt_install 'nvidia-fabricmanager-535=535.247.01-0ubuntu0.22.04.1'

step "install container toolkit"
apt_install 'nvidia-container-toolkit=1.17.8-1' 'nvidia-container-toolkit-base=1.17.8-1' 'libnvidia-container-tools=1.17.8-1' 'libnvidia-container1=1.17.8-1'

step "install containerd"
apt_install 'containerd'

step "hold"
apt-mark hold 'linux-image-5.15.0-153-generic' 'nvidia-headless-no-dkms-535-server' 'nvidia-utils-535-server' 'linux-modules-nvidia-535-server-5.15.0-153-generic' 'nvidia-fabricmanager-535' 'nvidia-container-toolkit' 'nvidia-container-toolkit-base' 'libnvidia-container-tools' 'libnvidia-container1'
if dpkg-query -W -f='${Status}' 'linux-headers-5.15.0-153-generic' 2>/dev/null | grep -q 'ok installed'; then
	apt-mark hold 'linux-headers-5.15.0-153-generic'
fi

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
nvidia-ctk runtime configure --runtime=containerd --set-as-default
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
[ -n "$nvidia_runtime" ] || die "containerd.default_runtime is nvidia but nvidia-container-runtime is not installed"
# Imports merge in name order after config.toml; this one sorts last, so
# its runtime settings win over the toolkit's.
{
	echo '# Written by the gpuhost-gpu provisioner.'
	echo "version = $ctr_schema"
	echo
	echo "[plugins.\"$ctr_cri\".containerd]"
	echo '  default_runtime_name = "nvidia"'
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

step "services"
enable_unit 'nvidia-persistenced.service'
enable_unit 'nvidia-fabricmanager.service'

step "unattended upgrades"
mask_unit unattended-upgrades.service apt-daily.timer apt-daily-upgrade.timer

step "verify pins"
pin_check 'linux-image-5.15.0-153-generic' ''
pin_check 'nvidia-headless-no-dkms-535-server' '535.247.01-0ubuntu0.22.04.1'
pin_check 'nvidia-utils-535-server' '535.247.01-0ubuntu0.22.04.1'
pin_check 'linux-modules-nvidia-535-server-5.15.0-153-generic' ''
pin_check 'nvidia-fabricmanager-535' '535.247.01-0ubuntu0.22.04.1'
pin_check 'nvidia-container-toolkit' '1.17.8-1'
pin_check 'nvidia-container-toolkit-base' '1.17.8-1'
pin_check 'libnvidia-container-tools' '1.17.8-1'
pin_check 'libnvidia-container1' '1.17.8-1'
if dpkg-query -W -f='${Status}' 'linux-headers-5.15.0-153-generic' 2>/dev/null | grep -q 'ok installed'; then
	pin_check 'linux-headers-5.15.0-153-generic' ''
fi

step "verify payload"
# What the packages put on disk, at the pinned versions. The loader's
# libnvidia-ml.so.1 (what NVML users open) must be the driver's build.
nvml=$(ldconfig -p | awk '$1 == "libnvidia-ml.so.1" { print $NF }')
[ -n "$nvml" ] || die "libnvidia-ml.so.1 is not in the dynamic loader's cache (ldconfig -p)"
for lib in $nvml; do
	real=$(readlink -f "$lib")
	[ "${real##*/}" = 'libnvidia-ml.so.535.247.01' ] || die "$lib is ${real##*/}, want libnvidia-ml.so.535.247.01"
done
# The module for the image's kernel, read from its file: a chroot runs the
# build host's kernel, so neither modprobe nor /proc/driver/nvidia/version
# (which the booted host's NVML facts report) can say anything here.
mods=$(find '/lib/modules/5.15.0-153-generic' -type f \( -name 'nvidia.ko' -o -name 'nvidia.ko.*' \))
[ -n "$mods" ] || die "no nvidia kernel module under /lib/modules/5.15.0-153-generic"
for mod in $mods; do
	got=$(modinfo -F version "$mod") || die "modinfo cannot read $mod"
	[ "$got" = '535.247.01' ] || die "$mod is version ${got:-unknown}, want 535.247.01"
done
# nvidia-ctk is nvidia-container-toolkit-base's; nvidia-container-cli's
# lib-version is the libnvidia-container1 it loaded.
got=$(nvidia-ctk --version | sed -n 's/^NVIDIA Container Toolkit CLI version //p')
[ "$got" = '1.17.8' ] || die "nvidia-ctk --version reports ${got:-no version}, want 1.17.8"
cli=$(nvidia-container-cli --version)
for field in cli-version lib-version; do
	got=$(echo "$cli" | sed -n "s/^$field: //p")
	[ "$got" = '1.17.8' ] || die "nvidia-container-cli --version reports $field ${got:-none}, want 1.17.8"
done

step "package digests"
# The sha256 of every installed package's .deb: the one apt's index gives
# for that build, the index apt checks a download against. Only where the
# index has no single sum for it (no source lists it any more, or two list
# different files) the file in the apt cache: a cache kept across builds
# can hold a file of the same name from an older archive, which a
# bootstrap taken from the bootstrap cache never made apt check again.
installed_packages "$GPUHOST_WORK/installed"
apt_index "$GPUHOST_WORK/index"
while read -r name arch version; do
	deb="/var/cache/apt/archives/${name}_$(echo "$version" | sed 's/:/%3a/g')_${arch}.deb"
	if [ -f "$deb" ]; then
		echo "$name $arch $version $(sha256sum <"$deb" | cut -d' ' -f1)"
	fi
done <"$GPUHOST_WORK/installed" >"$GPUHOST_WORK/cached"
{
	echo 'gpuhost.lock/v1'
	awk '
	FILENAME == ARGV[1] { cached[$1 " " $2 " " $3] = $4; next }
	FILENAME == ARGV[2] { k = $1 " " $2 " " $3; n[k]++; sum[k] = $4; next }
	{
		k = $1 " " $2 " " $3
		if (n[k] == 1) print "package " $1 "=" $3 " " $2 " " sum[k]
		else if (k in cached) print "package " $1 "=" $3 " " $2 " " cached[k]
	}
	' "$GPUHOST_WORK/cached" "$GPUHOST_WORK/index" "$GPUHOST_WORK/installed"
} >"$GPUHOST_WORK/digests"
cp "$GPUHOST_WORK/digests" '/tmp/gpuhost-gpu-debs.lock'

step "caches"
# apt's binary caches and ldconfig's auxiliary cache record when and in what
# inode order this build ran, not what it installed; apt and ldconfig make
# them again, and mmdebstrap leaves them out of its bootstrap alike. dpkg's
# status-old is the database before its last run, which says in what order
# the build installed, not what; dpkg writes it again on its next run.
rm -f /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin /var/cache/ldconfig/aux-cache /var/lib/dpkg/status-old

step done
echo "gpuhost-gpu: all pins installed and held, payload at the pinned versions"
