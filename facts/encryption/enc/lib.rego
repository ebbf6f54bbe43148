# Helpers the LUKS checks share. No METADATA and no deny: a library, not a check.
package gpuhost.enc.lib

enc := object.get(input, "encryption", {})

live if input.target.kind == "host"

# Every LUKS mapping met under / and under each swap area.
luks_hops contains h if {
	some h in object.get(object.get(enc, "root", {}), "hops", [])
	luks(h)
}

luks_hops contains h if {
	some s in object.get(enc, "swap", [])
	some h in object.get(s, "hops", [])
	luks(h)
}

luks(h) if {
	h.kind == "crypt"
	startswith(object.get(object.get(h, "crypt", {}), "type", ""), "luks")
}

crypt(h) := object.get(h, "crypt", {})

# The mapping as messages name it: its device, and its name where it has one.
name(h) := sprintf("%s (%s)", [h.device, h.name]) if object.get(h, "name", "") != ""

name(h) := h.device if object.get(h, "name", "") == ""
