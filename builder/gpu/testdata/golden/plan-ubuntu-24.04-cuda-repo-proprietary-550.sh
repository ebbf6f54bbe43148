#!/bin/sh
# gpuhost-gpu plan: written by the gpuhost-gpu provisioner from its
# configuration alone (`gpuhost plan` prints the same text). It installs the
# pinned NVIDIA stack, holds it, configures containerd, hardens the host,
# and checks the pins.
# distro: ubuntu 24.04 noble; driver: cuda-repo proprietary 550.163.01-0ubuntu1
set -eu

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C
GPUHOST_STEP=start
GPUHOST_WORK=$(mktemp -d)
GPUHOST_POLICY_RC=
GPUHOST_RUN_SSHD=

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
	# sshd -T's runtime directory, where the plan made it.
	if [ -n "$GPUHOST_RUN_SSHD" ]; then
		rmdir /run/sshd 2>/dev/null || true
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

# cuda_set PKG VERSION SUFFIX MAJOR writes PKG at VERSION (apt's candidate
# when empty) and every package of its CUDA release that its dependencies
# reach to $GPUHOST_WORK/cuda-set, one "name version" a line. NVIDIA's meta
# packages depend on each part of the release with ">=" the release's own
# build of it (cuda-toolkit-12-2 12.2.2-1 on cuda-libraries-12-2 (>= 12.2.2),
# that on cuda-cudart-12-2 (>= 12.2.140)), which every later update of the
# release satisfies too, so apt alone would take the newest of each. The set
# takes the release's own build for ">=": that version, at any revision, and
# nothing later. When the sources have only later builds (the release's own
# was withdrawn), the build fails naming the package: a later build belongs
# to another release, which is what the pin is there to keep out. Other
# operators take the oldest version the dependant accepts; a dependency
# with no version takes the dependant's version, or else the candidate.
# The release's packages are those named for it (-SUFFIX, as in
# cuda-nvcc-12-2 and libcublas-12-2) and the configuration packages they
# share (cuda-toolkit-MAJOR-config-common, cuda-toolkit-config-common);
# what else they need (dkms, a JRE) comes from the distribution and is left
# to apt.
cuda_set() {
	set_file=$GPUHOST_WORK/cuda-set
	ver=$2
	if [ -z "$ver" ]; then
		ver=$(apt-cache policy "$1" | awk '$1 == "Candidate:" { print $2 }')
	fi
	printf '%s %s\n' "$1" "$ver" >"$set_file"
	n=1
	while entry=$(sed -n "${n}p" "$set_file") && [ -n "$entry" ]; do
		n=$((n + 1))
		pkg=${entry% *}
		ver=${entry#* }
		apt-cache show "$pkg=$ver" >"$GPUHOST_WORK/cuda-show" || die "apt-cache cannot show $pkg=$ver"
		# The first stanza's dependencies, one a line as "name op version",
		# the first of each set of alternatives.
		awk '/^$/ { exit } /^(Pre-)?Depends: / { sub(/^[^:]*: /, ""); print }' "$GPUHOST_WORK/cuda-show" | tr ',' '\n' |
			sed -E -e 's/\|.*//' -e 's/^[[:space:]]*([^[:space:](]+)[[:space:]]*(\(([<>=]+)[[:space:]]*([^)[:space:]]+)\))?.*$/\1 \3 \4/' >"$GPUHOST_WORK/cuda-deps"
		while read -r dep op want; do
			dep=${dep%%:*}
			case "$dep" in
			*"-$3" | *"-$3-"* | "cuda-toolkit-$4-config-common" | cuda-toolkit-config-common) ;;
			*) continue ;;
			esac
			if grep -q "^$dep " "$set_file"; then
				continue
			fi
			best=
			if [ -z "$op" ]; then
				# Nothing to go by but the dependant: its own version where
				# the sources have it (a release's configuration packages
				# are built at its runtime's version), else the candidate.
				if apt-cache madison "$dep" | awk -F'|' -v v="$ver" '{ gsub(/ /, "", $2) } $2 == v { found = 1 } END { exit !found }'; then
					best=$ver
				else
					best=$(apt-cache policy "$dep" | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }')
				fi
			else
				have=
				for v in $(apt-cache madison "$dep" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }'); do
					have="$have${have:+, }$v"
					dpkg --compare-versions "$v" "$op" "$want" || continue
					if [ "$op" = ">=" ] && [ "$v" != "$want" ] && [ "${v%-*}" != "$want" ]; then
						continue
					fi
					if [ -z "$best" ] || dpkg --compare-versions "$v" lt "$best"; then
						best=$v
					fi
				done
				if [ -z "$best" ] && [ "$op" = ">=" ] && [ -n "$have" ]; then
					die "$dep $want, the build of it that $pkg $ver names, is not in the apt sources, which have $dep at: $have; a later build belongs to another CUDA release, which the pin keeps out"
				fi
			fi
			[ -n "$best" ] || die "$dep${op:+ ($op $want)}, which $pkg $ver depends on, is not in the apt sources at a version it accepts"
			case "$dep $best" in
			*[!A-Za-z0-9.+~:\ -]*) die "the apt sources name a package or version this plan will not write: $dep $best" ;;
			esac
			echo "$dep $best" >>"$set_file"
		done <"$GPUHOST_WORK/cuda-deps"
	done
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

step "apt update"
apt-get update
apt_install ca-certificates curl gpg

step "cuda repository"
case "$(dpkg --print-architecture)" in
amd64) cuda_arch=x86_64 ;;
arm64) cuda_arch=sbsa ;;
*) die "no CUDA repository for architecture $(dpkg --print-architecture)" ;;
esac
fetch "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/$cuda_arch/cuda-keyring_1.1-1_all.deb" "$GPUHOST_WORK/cuda-keyring_1.1-1_all.deb" '0000000000000000000000000000000000000000000000000000000000000000'
dpkg -i "$GPUHOST_WORK/cuda-keyring_1.1-1_all.deb"
[ -s '/usr/share/keyrings/cuda-archive-keyring.gpg' ] || die "cuda-keyring_1.1-1_all.deb installed no /usr/share/keyrings/cuda-archive-keyring.gpg"
# The source the image keeps, in the file cuda-keyring itself writes (so
# there is one): the configured repository, trusted through that key alone.
echo "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/$cuda_arch/ /" >"/etc/apt/sources.list.d/cuda-ubuntu2404-$cuda_arch.list"

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
available 'cuda-drivers-550' '550.163.01-0ubuntu1' || missing=1
available 'nvidia-container-toolkit' '1.17.8-1' || missing=1
available 'nvidia-container-toolkit-base' '1.17.8-1' || missing=1
available 'libnvidia-container-tools' '1.17.8-1' || missing=1
available 'libnvidia-container1' '1.17.8-1' || missing=1
available 'linux-headers-6.8.0-45-generic' '' || missing=1
available 'nvidia-driver-pinning-550.163.01' '' || missing=1
available 'cuda-toolkit-12-4' '' || missing=1
available 'containerd' '' || missing=1
[ -z "$missing" ] || die "pinned packages are missing from the apt sources (above)"

step "cuda set"
# The whole CUDA release at the pin, before anything is installed: each
# package installed at its version, pinned here so that no apt-get upgrade
# moves it to a later update, held and checked after install.
cuda_set 'cuda-toolkit-12-4' '' '12-4' '12'
while read -r name version; do
	printf 'Package: %s\nPin: version %s\nPin-Priority: 1001\n\n' "$name" "$version"
done <"$GPUHOST_WORK/cuda-set" >'/etc/apt/preferences.d/gpuhost-cuda.pref'
chmod 0644 '/etc/apt/preferences.d/gpuhost-cuda.pref'
sed 's/^/gpuhost-gpu: cuda set: /' "$GPUHOST_WORK/cuda-set"

step "install kernel headers"
apt_install 'linux-headers-6.8.0-45-generic'

step "install driver pinning"
apt_install 'nvidia-driver-pinning-550.163.01'

step "install driver"
apt_install 'cuda-drivers-550=550.163.01-0ubuntu1'

step "install cuda toolkit"
# shellcheck disable=SC2046 # one word per package=version
apt_install $(awk '{ print $1 "=" $2 }' "$GPUHOST_WORK/cuda-set")

step "install container toolkit"
apt_install 'nvidia-container-toolkit=1.17.8-1' 'nvidia-container-toolkit-base=1.17.8-1' 'libnvidia-container-tools=1.17.8-1' 'libnvidia-container1=1.17.8-1'

step "install containerd"
apt_install 'containerd'

step "dkms"
# Build for the image's kernel: in a chroot, uname -r is the build host's.
dkms autoinstall -k '6.8.0-45-generic'
dkms status -k '6.8.0-45-generic' | grep -q 'installed' || die "dkms built no module for 6.8.0-45-generic"
# No image carries a module signing key: whoever held it could sign modules
# that every host booted from the image trusts. The certificate stays.
rm -f /var/lib/dkms/mok.key

step "hold"
apt-mark hold 'nvidia-driver-pinning-550.163.01' 'cuda-drivers-550' 'cuda-toolkit-12-4' 'nvidia-container-toolkit' 'nvidia-container-toolkit-base' 'libnvidia-container-tools' 'libnvidia-container1'
# shellcheck disable=SC2046 # one word per package
apt-mark hold $(cut -d' ' -f1 "$GPUHOST_WORK/cuda-set")

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
nvidia-ctk runtime configure --runtime=containerd
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

step "services"
enable_unit 'nvidia-persistenced.service'

step "unattended upgrades"
mask_unit unattended-upgrades.service apt-daily.timer apt-daily-upgrade.timer

step "hardening: packages"
# What the hardening configures; apt-get leaves what is installed as it is.
apt_install 'passwd' 'openssl' 'openssh-server' 'nftables' 'auditd' 'sudo'

step "hardening: hostname"
# mmdebstrap copies the build machine's /etc/hostname, which would name
# every host booted from the image.
echo 'ubuntu-2404-gpu' >/etc/hostname

step "hardening: role groups"
# The groups the access checks judge by (params.roles); members are added
# where the hosts are deployed.
for g in 'ops' 'ml'; do
	getent group "$g" >/dev/null 2>&1 || groupadd --system "$g"
done

step "hardening: openssl"
cnf=/etc/ssl/openssl.cnf
[ -f "$cnf" ] || die "$cnf is missing (the openssl package's configuration)"
# libssl starts from the section openssl_conf names in the file's default
# section, before the first [section]; without one, this plan adds it.
ssl_init=$(awk '/^[[:space:]]*\[/ { exit } /^[[:space:]]*openssl_conf[[:space:]]*=/ { v = $0; sub(/^[^=]*=[[:space:]]*/, "", v); sub(/[[:space:]]*(#.*)?$/, "", v) } END { print v }' "$cnf")
if [ -z "$ssl_init" ]; then
	ssl_init=gpuhost_openssl_init
	{
		echo "openssl_conf = $ssl_init"
		cat "$cnf"
	} >"$cnf.gpuhost"
	cat "$cnf.gpuhost" >"$cnf"
	rm -f "$cnf.gpuhost"
fi
case "$ssl_init" in
*[!A-Za-z0-9_.]*) die "$cnf names the openssl_conf section '$ssl_init', which this plan does not edit" ;;
esac
mkdir -p "$(dirname '/etc/ssl/openssl.cnf.d/50-gpuhost.cnf')"
# The file reopens that section: OpenSSL keeps the last value of a name,
# so its ssl_conf wins over one the distribution set (Ubuntu does).
{
	echo '# Written by the gpuhost-gpu provisioner (hardening.tls), included at the'
	echo '# end of /etc/ssl/openssl.cnf: programs that link libssl refuse protocols'
	echo '# below TLSv1.2 unless they set their own floor.'
	echo "[$ssl_init]"
	cat <<'GPUHOST_EOF'
ssl_conf = gpuhost_ssl_sect

[gpuhost_ssl_sect]
system_default = gpuhost_system_default_sect

[gpuhost_system_default_sect]
MinProtocol = TLSv1.2
CipherString = ECDHE+AESGCM:@SECLEVEL=3
GPUHOST_EOF
} >'/etc/ssl/openssl.cnf.d/50-gpuhost.cnf'
chmod 0644 '/etc/ssl/openssl.cnf.d/50-gpuhost.cnf'
# Included last, so that nothing after it sets those names again.
if [ "$(grep -Ev '^[[:space:]]*(#|$)' "$cnf" | tail -n 1)" != '.include /etc/ssl/openssl.cnf.d/50-gpuhost.cnf' ]; then
	grep -Fvx '.include /etc/ssl/openssl.cnf.d/50-gpuhost.cnf' "$cnf" >"$cnf.gpuhost" || true
	printf '\n# The gpuhost-gpu provisioner (hardening.tls): the system default protocols.\n.include %s\n' '/etc/ssl/openssl.cnf.d/50-gpuhost.cnf' >>"$cnf.gpuhost"
	cat "$cnf.gpuhost" >"$cnf"
	rm -f "$cnf.gpuhost"
fi

step "hardening: sshd"
[ -f /etc/ssh/sshd_config ] || die "/etc/ssh/sshd_config is missing (openssh-server)"
grep -Eq '^[[:space:]]*Include[[:space:]]+/etc/ssh/sshd_config\.d/\*\.conf' /etc/ssh/sshd_config || die "/etc/ssh/sshd_config does not include /etc/ssh/sshd_config.d/*.conf, where the hardening writes"
mkdir -p /etc/ssh/sshd_config.d
cat >'/etc/ssh/sshd_config.d/00-gpuhost.conf' <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.ssh). sshd takes the
# first value of each keyword and reads sshd_config.d before the rest of
# sshd_config, so these win; this name sorts before other drop-ins.
# Keys only: no password is ever accepted.
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitEmptyPasswords no
Ciphers aes256-gcm@openssh.com
KexAlgorithms sntrup761x25519-sha512@openssh.com,curve25519-sha256
MACs hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com
HostKeyAlgorithms ssh-ed25519,rsa-sha2-512,rsa-sha2-256
MaxAuthTries 3
LoginGraceTime 60
ClientAliveInterval 300
ClientAliveCountMax 3
LogLevel INFO
X11Forwarding no
AllowGroups ops ml
GPUHOST_EOF
chmod 0644 '/etc/ssh/sshd_config.d/00-gpuhost.conf'
# sshd's effective configuration must be what the drop-in says: a file
# read before it would win. sshd -T needs a host key and its runtime
# directory, which an image has not.
ssh-keygen -q -t ed25519 -N '' -f "$GPUHOST_WORK/ssh_host_key"
if [ ! -d /run/sshd ]; then
	mkdir -p /run/sshd
	GPUHOST_RUN_SSHD=1
fi
sshd_t=$(/usr/sbin/sshd -T -f /etc/ssh/sshd_config -h "$GPUHOST_WORK/ssh_host_key" 2>&1) || die "sshd -T refuses the configuration: $sshd_t"
for want in \
	'permitrootlogin no' \
	'passwordauthentication no' \
	'kbdinteractiveauthentication no' \
	'permitemptypasswords no' \
	'ciphers aes256-gcm@openssh.com' \
	'kexalgorithms sntrup761x25519-sha512@openssh.com,curve25519-sha256' \
	'macs hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com' \
	'hostkeyalgorithms ssh-ed25519,rsa-sha2-512,rsa-sha2-256' \
	'maxauthtries 3' \
	'logingracetime 60' \
	'clientaliveinterval 300' \
	'clientalivecountmax 3' \
	'loglevel INFO' \
	'x11forwarding no' \
	'allowgroups ops' \
	'allowgroups ml' \
	; do
	printf '%s\n' "$sshd_t" | grep -Fxq "$want" || die "sshd's effective configuration lacks '$want'; it has: $(printf '%s\n' "$sshd_t" | grep "^${want%% *} " | tr '\n' ' ')"
done

step "hardening: firewall"
command -v nft >/dev/null 2>&1 || die "nft is not installed (nftables)"
cat >"$GPUHOST_WORK/nftables.conf" <<'GPUHOST_EOF'
#!/usr/sbin/nft -f
# Written by the gpuhost-gpu provisioner (hardening.firewall).
#
# Inbound traffic is dropped unless it comes from loopback, answers the
# host's own connections, or goes to a port listed below. Forwarding is left
# alone: the container network plugin installs its own table for pod
# traffic, and a drop here would cut every pod off.

flush ruleset

table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;

		iif "lo" accept
		ct state established,related accept
		ct state invalid drop

		tcp dport { 22, 443 } accept
		udp dport { 4789 } accept
	}

	chain output {
		type filter hook output priority filter; policy accept;
	}
}
GPUHOST_EOF
# Checked as nftables.service loads it at boot, against the image's own
# /etc/protocols and /etc/services, without changing any ruleset.
nft -c -f "$GPUHOST_WORK/nftables.conf" || die "nft refuses the ruleset"
install -m 0755 -o root -g root "$GPUHOST_WORK/nftables.conf" '/etc/nftables.conf'
enable_unit nftables.service

step "hardening: auditd"
[ -x /sbin/auditd ] || [ -x /usr/sbin/auditd ] || die "auditd is not installed"
mkdir -p /etc/audit/rules.d
cat >'/etc/audit/rules.d/50-gpuhost.rules' <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.audit) as
# /etc/audit/rules.d/50-gpuhost.rules; augenrules joins rules.d when auditd starts.

# Who may do what, and how the GPUs reach containers.
-w /etc/sudoers -p wa -k gpuhost-config
-w /etc/sudoers.d -p wa -k gpuhost-config
-w /etc/ssh -p wa -k gpuhost-config
-w /etc/gpuhost -p wa -k gpuhost-config
-w /etc/containerd -p wa -k gpuhost-config
-w /etc/nvidia-container-runtime -p wa -k gpuhost-config

# GPU mode changes: MIG, ECC, clocks and power limits (nvidia-smi), the
# runtime's GPU configuration (nvidia-ctk).
-w /usr/bin/nvidia-smi -p x -k gpuhost-gpu-mode
GPUHOST_EOF
chmod 0640 '/etc/audit/rules.d/50-gpuhost.rules'
conf=/etc/audit/auditd.conf
[ -f "$conf" ] || die "$conf is missing (auditd)"
# audit_set KEY VALUE: replace the setting where auditd.conf has it, else
# add it.
audit_set() {
	if grep -Eq "^[[:space:]]*$1[[:space:]]*=" "$conf"; then
		sed -E "s/^[[:space:]]*$1[[:space:]]*=.*/$1 = $2/" "$conf" >"$conf.gpuhost"
	else
		{
			cat "$conf"
			echo "$1 = $2"
		} >"$conf.gpuhost"
	fi
	cat "$conf.gpuhost" >"$conf"
	rm -f "$conf.gpuhost"
}
audit_set max_log_file_action keep_logs
audit_set space_left_action syslog
audit_set admin_space_left_action single
audit_set disk_full_action halt
audit_set disk_error_action halt
enable_unit auditd.service

step "hardening: sudo"
command -v visudo >/dev/null 2>&1 || die "sudo is not installed"
grep -Eq '^[@#]includedir[[:space:]]+/etc/sudoers\.d[[:space:]]*$' /etc/sudoers || die "/etc/sudoers does not include /etc/sudoers.d"
cat >"$GPUHOST_WORK/sudoers" <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.sudo) as /etc/sudoers.d/50-gpuhost.
# Only the admin role runs anything as root, with its own password.
Defaults use_pty
Defaults logfile="/var/log/sudo/sudo.log"
%ops ALL=(ALL:ALL) ALL
GPUHOST_EOF
visudo -cqf "$GPUHOST_WORK/sudoers" || die "the sudoers drop-in does not parse"
install -m 0440 -o root -g root "$GPUHOST_WORK/sudoers" '/etc/sudoers.d/50-gpuhost'
# sudo makes its log, but not the directory it goes in.
mkdir -p '/var/log/sudo'
# The distributions give these groups everything; that is the admin role's
# here.
sed -E 's/^(%(sudo)[[:space:]].*)$/# gpuhost-gpu (hardening.sudo), the admin role'"'"'s alone: \1/' /etc/sudoers >"$GPUHOST_WORK/sudoers.main"
visudo -cqf "$GPUHOST_WORK/sudoers.main" || die "the edited /etc/sudoers does not parse"
cat "$GPUHOST_WORK/sudoers.main" >/etc/sudoers
! grep -Eq '^%(sudo)[[:space:]]' /etc/sudoers || die "/etc/sudoers still grants a revoked group"
visudo -cq || die "sudoers does not parse"

step "hardening: journald"
mkdir -p /etc/systemd/journald.conf.d
cat >'/etc/systemd/journald.conf.d/50-gpuhost.conf' <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.journald).
[Journal]
Storage=persistent
SystemMaxUse=8G
GPUHOST_EOF
chmod 0644 '/etc/systemd/journald.conf.d/50-gpuhost.conf'

step "hardening: baseline"
defs=/etc/login.defs
[ -f "$defs" ] || die "$defs is missing (login, or passwd)"
# defs_set KEY VALUE: the shadow suite takes a keyword's last line, so
# every line of it gets the value; a keyword the file lacks is added.
defs_set() {
	if grep -Eq "^[[:space:]]*$1([[:space:]]|\$)" "$defs"; then
		sed -E "s|^[[:space:]]*$1([[:space:]].*)?\$|$1\t$2|" "$defs" >"$defs.gpuhost"
	else
		{
			cat "$defs"
			printf '%s\t%s\n' "$1" "$2"
		} >"$defs.gpuhost"
	fi
	cat "$defs.gpuhost" >"$defs"
	rm -f "$defs.gpuhost"
	[ "$(awk -v k="$1" '$1 == k { v = $2 } END { print v }' "$defs")" = "$2" ] || die "$defs does not set $1 to $2 after the edit"
}
defs_set PASS_MAX_DAYS '365'
defs_set PASS_MIN_DAYS '1'
defs_set PASS_WARN_AGE '7'
defs_set UMASK '027'
# Read by systemd-sysctl at boot.
mkdir -p /etc/sysctl.d
cat >'/etc/sysctl.d/60-gpuhost.conf' <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.baseline): the kernel
# parameters the policy pack's params ask for (GH-KRN-002).
fs.suid_dumpable = 0
kernel.randomize_va_space = 2
net.ipv4.conf.all.accept_redirects = 0
net.ipv4.conf.all.accept_source_route = 0
net.ipv4.conf.all.log_martians = 1
net.ipv4.conf.all.rp_filter = 1
net.ipv4.conf.all.secure_redirects = 0
net.ipv4.conf.all.send_redirects = 0
net.ipv4.conf.default.accept_redirects = 0
net.ipv4.conf.default.accept_source_route = 0
net.ipv4.conf.default.log_martians = 1
net.ipv4.conf.default.rp_filter = 1
net.ipv4.conf.default.secure_redirects = 0
net.ipv4.conf.default.send_redirects = 0
net.ipv4.icmp_echo_ignore_broadcasts = 1
net.ipv4.icmp_ignore_bogus_error_responses = 1
net.ipv4.ip_forward = 0
net.ipv4.tcp_syncookies = 1
net.ipv6.conf.all.accept_ra = 0
net.ipv6.conf.all.accept_redirects = 0
net.ipv6.conf.all.accept_source_route = 0
net.ipv6.conf.all.forwarding = 0
net.ipv6.conf.default.accept_ra = 0
net.ipv6.conf.default.accept_redirects = 0
net.ipv6.conf.default.accept_source_route = 0
GPUHOST_EOF
chmod 0644 '/etc/sysctl.d/60-gpuhost.conf'
mkdir -p /etc/modprobe.d
cat >'/etc/modprobe.d/60-gpuhost.conf' <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.baseline): modules a
# GPU server has no use for, kept from loading (GH-KRN-001).
install cramfs /bin/false
blacklist cramfs
install freevxfs /bin/false
blacklist freevxfs
install hfs /bin/false
blacklist hfs
install hfsplus /bin/false
blacklist hfsplus
install jffs2 /bin/false
blacklist jffs2
install udf /bin/false
blacklist udf
install usb-storage /bin/false
blacklist usb-storage
install dccp /bin/false
blacklist dccp
install rds /bin/false
blacklist rds
install sctp /bin/false
blacklist sctp
install tipc /bin/false
blacklist tipc
GPUHOST_EOF
chmod 0644 '/etc/modprobe.d/60-gpuhost.conf'
mkdir -p /etc/security/limits.d
cat >'/etc/security/limits.d/60-gpuhost.conf' <<'GPUHOST_EOF'
# Written by the gpuhost-gpu provisioner (hardening.baseline): no login
# may dump core, which can hold a process's secrets (CIS 1.6.4).
* hard core 0
GPUHOST_EOF
chmod 0644 '/etc/security/limits.d/60-gpuhost.conf'
# baseline_file PATH OWNER GROUP MODE: the owner and group ("-" leaves one
# alone), and the mode less every bit MODE leaves clear; a path the image
# lacks is not made, and a link is left alone, since chown and chmod would
# change the file it points to.
baseline_file() {
	if [ -L "$1" ] || [ ! -e "$1" ]; then
		return 0
	fi
	[ "$2" = - ] || chown "$2" "$1" || die "chown $2 $1 failed"
	[ "$3" = - ] || chgrp "$3" "$1" || die "chgrp $3 $1 failed"
	if [ "$4" != - ]; then
		cur=$(stat -c %a "$1") || die "cannot stat $1"
		chmod "$(printf '%04o' $((0$cur & 0$4)))" "$1" || die "chmod $1 failed"
		cur=$(stat -c %a "$1")
		[ $((0$cur & ~0$4)) -eq 0 ] || die "$1 has mode $cur after chmod; want no bit outside $4"
	fi
}
baseline_file '/boot/grub/grub.cfg' 0 - 0600
baseline_file '/etc/at.allow' 0 0 0640
baseline_file '/etc/cron.allow' 0 0 0640
baseline_file '/etc/cron.d' 0 0 0700
baseline_file '/etc/cron.daily' 0 0 0700
baseline_file '/etc/cron.hourly' 0 0 0700
baseline_file '/etc/cron.monthly' 0 0 0700
baseline_file '/etc/cron.weekly' 0 0 0700
baseline_file '/etc/crontab' 0 0 0600
baseline_file '/etc/group' 0 0 0644
baseline_file '/etc/group-' 0 0 0644
baseline_file '/etc/gshadow' 0 0 0000
baseline_file '/etc/gshadow-' 0 0 0000
baseline_file '/etc/issue' 0 0 0644
baseline_file '/etc/motd' 0 0 0644
baseline_file '/etc/passwd' 0 0 0644
baseline_file '/etc/passwd-' 0 0 0644
baseline_file '/etc/shadow' 0 42 0000
baseline_file '/etc/shadow-' 0 42 0000
baseline_file '/etc/ssh/sshd_config' 0 0 0600

step "verify pins"
pin_check 'nvidia-driver-pinning-550.163.01' ''
pin_check 'cuda-drivers-550' '550.163.01-0ubuntu1'
pin_check 'cuda-toolkit-12-4' ''
pin_check 'nvidia-container-toolkit' '1.17.8-1'
pin_check 'nvidia-container-toolkit-base' '1.17.8-1'
pin_check 'libnvidia-container-tools' '1.17.8-1'
pin_check 'libnvidia-container1' '1.17.8-1'
# The CUDA release: every package at the version the set resolved, held.
while read -r name version; do
	pin_check "$name" "$version"
done <"$GPUHOST_WORK/cuda-set"

step "verify payload"
# What the packages put on disk, at the pinned versions. The loader's
# libnvidia-ml.so.1 (what NVML users open) must be the driver's build.
nvml=$(ldconfig -p | awk '$1 == "libnvidia-ml.so.1" { print $NF }')
[ -n "$nvml" ] || die "libnvidia-ml.so.1 is not in the dynamic loader's cache (ldconfig -p)"
for lib in $nvml; do
	real=$(readlink -f "$lib")
	[ "${real##*/}" = 'libnvidia-ml.so.550.163.01' ] || die "$lib is ${real##*/}, want libnvidia-ml.so.550.163.01"
done
# The module for the image's kernel, read from its file: a chroot runs the
# build host's kernel, so neither modprobe nor /proc/driver/nvidia/version
# (which the booted host's NVML facts report) can say anything here.
mods=$(find '/lib/modules/6.8.0-45-generic' -type f \( -name 'nvidia.ko' -o -name 'nvidia.ko.*' \))
[ -n "$mods" ] || die "no nvidia kernel module under /lib/modules/6.8.0-45-generic"
for mod in $mods; do
	got=$(modinfo -F version "$mod") || die "modinfo cannot read $mod"
	[ "$got" = '550.163.01' ] || die "$mod is version ${got:-unknown}, want 550.163.01"
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
got=$('/usr/local/cuda-12.4/bin/nvcc' --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
[ "$got" = '12.4' ] || die "/usr/local/cuda-12.4/bin/nvcc reports release ${got:-none}, want 12.4"
# And the release's own build of the compiler, the one the CUDA set pinned.
want=$(awk '$1 == "cuda-nvcc-12-4" { v = $2; sub(/-[^-]*$/, "", v); print v }' "$GPUHOST_WORK/cuda-set")
if [ -n "$want" ]; then
	got=$('/usr/local/cuda-12.4/bin/nvcc' --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\)$/\1/p')
	[ "$got" = "$want" ] || die "/usr/local/cuda-12.4/bin/nvcc reports V${got:-none}, want V$want (cuda-nvcc-12-4 as the CUDA set pinned it)"
fi

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
