#!/bin/sh
# Hardening for images/debian-12-gpu.pkr.hcl, run in the rootfs by the shell
# provisioner before gpuhost-gpu, so that the manifest that provisioner
# writes records the hardened configuration files and packages.
#
# The file provisioner has put images/files/* under /tmp/gpuhost-harden.
set -eu
export LC_ALL=C
src=/tmp/gpuhost-harden

die() {
	echo "harden-debian-12: $*" >&2
	exit 1
}

echo "==> firewall: nftables, inbound default drop, ssh allowed"
command -v nft >/dev/null 2>&1 || die "nftables is not installed (the template's extra_packages installs it)"
install -m 0755 -o root -g root "$src/nftables.conf" /etc/nftables.conf
# Offline enable: systemctl only writes the wants link, nothing starts.
systemctl enable nftables.service
ls /etc/systemd/system/*.wants/nftables.service >/dev/null 2>&1 || die "nftables.service did not get enabled"

echo "==> OpenSSL: system default MinProtocol TLSv1.3"
cnf=/etc/ssl/openssl.cnf
[ -f "$cnf" ] || die "$cnf is missing"
# Debian's openssl.cnf names openssl_init but gives it no ssl_conf; one
# already there means someone configured TLS another way, so do not guess.
if grep -Eq '^[[:space:]]*ssl_conf[[:space:]]*=' "$cnf" || grep -Eq '^[[:space:]]*\[[[:space:]]*(ssl_sect|system_default_sect)[[:space:]]*\]' "$cnf"; then
	die "$cnf already has an ssl_conf or system_default section; refusing to edit it"
fi
grep -Eq '^[[:space:]]*openssl_conf[[:space:]]*=[[:space:]]*openssl_init[[:space:]]*$' "$cnf" || die "$cnf does not set openssl_conf = openssl_init"
grep -Eq '^[[:space:]]*\[[[:space:]]*openssl_init[[:space:]]*\]' "$cnf" || die "$cnf has no [openssl_init] section"
sed -E '/^[[:space:]]*\[[[:space:]]*openssl_init[[:space:]]*\]/a ssl_conf = ssl_sect' "$cnf" >"$cnf.gpuhost"
cat "$src/openssl-system-default.cnf" >>"$cnf.gpuhost"
# Write through the existing file, keeping its owner and mode.
cat "$cnf.gpuhost" >"$cnf"
rm -f "$cnf.gpuhost"
grep -Eq '^ssl_conf = ssl_sect$' "$cnf" || die "could not add ssl_conf to [openssl_init] in $cnf"

echo "==> sshd: keys only, no root, strong algorithms"
[ -f /etc/ssh/sshd_config ] || die "openssh-server is not installed (the template's extra_packages installs it)"
grep -Eq '^[[:space:]]*Include[[:space:]]+/etc/ssh/sshd_config.d/\*\.conf' /etc/ssh/sshd_config || die "/etc/ssh/sshd_config does not include sshd_config.d/*.conf"
install -m 0644 -o root -g root "$src/sshd-gpuhost.conf" /etc/ssh/sshd_config.d/50-gpuhost.conf

echo "==> roles: the admin, developer and auditor groups params-debian-12.yaml names"
for g in gpuhost-admin gpuhost-dev gpuhost-audit; do
	getent group "$g" >/dev/null || groupadd --system "$g"
done

echo "==> sudo: only gpuhost-admin runs anything as root, on a pty, logged"
command -v visudo >/dev/null 2>&1 || die "sudo is not installed (the template's extra_packages installs it)"
install -m 0440 -o root -g root "$src/sudoers-gpuhost" /etc/sudoers.d/50-gpuhost
# Debian's sudoers gives the sudo group everything; that role is
# gpuhost-admin's here.
sed -E 's/^(%sudo[[:space:]]+ALL=)/# gpuhost: the admin role is %gpuhost-admin (sudoers.d\/50-gpuhost)\n# \1/' /etc/sudoers >/etc/sudoers.gpuhost
visudo -cq -f /etc/sudoers.gpuhost || die "the edited /etc/sudoers does not parse"
cat /etc/sudoers.gpuhost >/etc/sudoers
rm -f /etc/sudoers.gpuhost
visudo -cq || die "sudoers does not parse"
! grep -Eq '^%sudo[[:space:]]' /etc/sudoers || die "/etc/sudoers still gives %sudo ALL"

echo "==> sshd PAM: a one-time code, asked only of admins (keyboard-interactive after their key)"
[ -f /lib/x86_64-linux-gnu/security/pam_google_authenticator.so ] || die "libpam-google-authenticator is not installed (the template's extra_packages installs it)"
# keyboard-interactive is the second factor alone: the password stack
# (common-auth) would ask for passwords the accounts do not have.
grep -Eq '^@include common-auth$' /etc/pam.d/sshd || die "/etc/pam.d/sshd does not include common-auth where Debian puts it"
sed -E 's/^@include common-auth$/auth required pam_google_authenticator.so/' /etc/pam.d/sshd >/etc/pam.d/sshd.gpuhost
cat /etc/pam.d/sshd.gpuhost >/etc/pam.d/sshd
rm -f /etc/pam.d/sshd.gpuhost

echo "==> auditd: root's and users' commands, config writes, GPU mode changes; the log kept"
[ -x /sbin/auditd ] || die "auditd is not installed (the template's extra_packages installs it)"
install -m 0640 -o root -g root "$src/audit-gpuhost.rules" /etc/audit/rules.d/50-gpuhost.rules
conf=/etc/audit/auditd.conf
for kv in max_log_file_action=keep_logs space_left_action=email admin_space_left_action=single \
	disk_full_action=halt disk_error_action=halt; do
	k=${kv%%=*} v=${kv#*=}
	grep -Eq "^$k[[:space:]]*=" "$conf" || die "$conf does not set $k"
	sed -E "s/^($k[[:space:]]*=[[:space:]]*).*/\1$v/" "$conf" >"$conf.gpuhost"
	cat "$conf.gpuhost" >"$conf"
done
rm -f "$conf.gpuhost"
systemctl enable auditd.service
ls /etc/systemd/system/*.wants/auditd.service >/dev/null 2>&1 || die "auditd.service did not get enabled"

echo "==> hostname: a neutral one instead of the build machine's"
# mmdebstrap copies the build machine's /etc/hostname; deployment sets the
# host's real name.
echo debian-12-gpu >/etc/hostname

rm -rf "$src"
echo "harden-debian-12: done"
