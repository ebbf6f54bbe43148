# What the network checks share: which addresses are loopback, how a
# listener's process is named in a message, and the firewall facts with
# "no firewall" told apart from "not collected".
package gpuhost.net.lib

offline_kinds := {"rootfs", "image", "oci"}

loopback(addr) if startswith(addr, "127.")

loopback(addr) if addr in {"::1", "[::1]", "localhost"}

loopback(addr) if startswith(addr, "::ffff:127.")

# The process alone, not the whole listener: a listener's PID differs from
# host to host, and what a check reads decides which hosts share its outcome.
owner(process) := sprintf(" (%s)", [process]) if process != ""

else := ""

found := object.get(object.get(input, "network", {}), "firewall", null)

# The collector reports backend "none" when neither ufw nor nftables is set up.
default firewall := null

firewall := found if {
	found != null
	found.backend != "none"
}
