#!/bin/sh
# What makes images/debian-12-gpu.pkr.hcl a host once booted, run in the
# rootfs by the shell provisioner before gpuhost-gpu (whose manifest then
# records it): DHCP networking, and the gpuhost agent with its units, the
# selftest a boot test asks for, and the params and waivers it judges the
# host with.
#
# The file provisioner has put the files under /tmp/gpuhost-host.
set -eu
export LC_ALL=C
src=/tmp/gpuhost-host

die() {
	echo "host-debian-12: $*" >&2
	exit 1
}

echo "==> network: systemd-networkd, DHCP on every wired interface"
install -d -m 0755 /etc/systemd/network
install -m 0644 "$src/80-gpuhost-dhcp.network" /etc/systemd/network/80-gpuhost-dhcp.network
systemctl enable systemd-networkd.service

echo "==> gpuhost agent: /usr/local/bin/gpuhost-agent and its units"
[ -x "$src/gpuhost-agent" ] || die "$src/gpuhost-agent is missing (make build writes bin/gpuhost-agent)"
install -m 0755 "$src/gpuhost-agent" /usr/local/bin/gpuhost-agent
# The lean build has every command a host needs: `gpuhost drift` works
# there as documented.
ln -sfn gpuhost-agent /usr/local/bin/gpuhost
install -d -m 0755 /usr/local/lib/gpuhost
install -m 0755 "$src/gpuhost-selftest" "$src/gpuhost-selftest-modules" "$src/gpuhost-agent-credentials" /usr/local/lib/gpuhost/
for u in gpuhost-agent.service gpuhost-agent.timer gpuhost-agentd.service gpuhost-agent-credentials.service gpuhost-selftest.service gpuhost-selftest-modules.service; do
	install -m 0644 "$src/$u" "/etc/systemd/system/$u"
done
install -d -m 0755 /etc/systemd/system/gpuhost-agentd.service.d
install -m 0644 "$src/gpuhost-agentd-debian-12.conf" /etc/systemd/system/gpuhost-agentd.service.d/50-debian-12-gpu.conf
install -d -m 0755 /etc/udev/rules.d
install -m 0644 "$src/90-gpuhost-selftest.rules" /etc/udev/rules.d/90-gpuhost-selftest.rules
install -d -m 0755 /etc/gpuhost
install -m 0644 "$src/params.yaml" /etc/gpuhost/params.yaml
install -m 0644 "$src/waivers-debian-12.yaml" /etc/gpuhost/waivers.yaml
systemctl enable gpuhost-agentd.service gpuhost-agent-credentials.service
"$src/gpuhost-agent" --version

rm -rf "$src"
echo "host-debian-12: done"
