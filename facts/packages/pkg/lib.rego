package gpuhost.pkg.lib

# installed are the names of the installed packages.
installed contains p.name if some p in input.packages

# paragraph(name) is where a package's dpkg status paragraph starts, for a
# finding that points at it.
paragraph(name) := {"file": "/var/lib/dpkg/status", "line": p.line} if {
	some p in input.packages
	p.name == name
	p.line > 0
} else := {}

# matching(pattern) are the installed packages a pattern of params names:
# a name, or a glob over names (xserver-xorg*).
matching(pattern) := {n | some n in installed; glob.match(pattern, [], n)}

# enabled are the enabled units' names without ".service".
enabled contains trim_suffix(u, ".service") if some u in input.systemd.enabled

# alternatives(entry) are the names an entry of params gives, "chrony|ntp"
# meaning either.
alternatives(entry) := split(entry, "|")
