#!/bin/sh
# What makes an image of images/ a host once booted, run in the rootfs by
# the shell provisioner before gpuhost-gpu (whose manifest then records
# it): DHCP networking, and the gpuhost agent with its units, the selftest
# a boot test asks for, and the params and waivers it judges the host
# with. GPUHOST_TEMPLATE names the template (debian-12-gpu,
# ubuntu-22.04-gpu, ubuntu-24.04-gpu), whose waivers file the file
# provisioner copied.
#
# The file provisioner has put the files under /tmp/gpuhost-host.
set -eu
export LC_ALL=C
src=/tmp/gpuhost-host

die() {
	echo "host: $*" >&2
	exit 1
}

case "${GPUHOST_TEMPLATE:-}" in
debian-12-gpu | ubuntu-22.04-gpu | ubuntu-24.04-gpu) ;;
*) die "GPUHOST_TEMPLATE is ${GPUHOST_TEMPLATE:-unset}; want debian-12-gpu, ubuntu-22.04-gpu or ubuntu-24.04-gpu" ;;
esac
waivers="$src/waivers-${GPUHOST_TEMPLATE%-gpu}.yaml"
[ -f "$waivers" ] || die "$waivers is missing (the template's file provisioner copies it)"

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
install -m 0644 "$src/gpuhost-agentd-image.conf" "/etc/systemd/system/gpuhost-agentd.service.d/50-$GPUHOST_TEMPLATE.conf"
install -d -m 0755 /etc/udev/rules.d
install -m 0644 "$src/90-gpuhost-selftest.rules" /etc/udev/rules.d/90-gpuhost-selftest.rules
install -d -m 0755 /etc/gpuhost
install -m 0644 "$src/params.yaml" /etc/gpuhost/params.yaml
install -m 0644 "$waivers" /etc/gpuhost/waivers.yaml
systemctl enable gpuhost-agentd.service gpuhost-agent-credentials.service
"$src/gpuhost-agent" --version

rm -rf "$src"
echo "host: $GPUHOST_TEMPLATE done"
