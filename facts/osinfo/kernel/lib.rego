# Helpers the kernel checks share. No METADATA and no deny: a library, not a check.
package gpuhost.kernel.lib

import data.gpuhost.lib.locate

# live holds on a live host, whose running kernel parameters were read.
live if input.sysctl.running

# setting(key) is what the sysctl.d files set key to for the next boot: its
# own last assignment, else the last glob that matches it, unless a "-key"
# line keeps the globs off it. The kernel's default is no setting.
setting(key) := input.sysctl.configured[key]

setting(key) := g if {
	not input.sysctl.configured[key]
	not input.sysctl.excluded[key]
	globs := [g | some g in input.sysctl.globs; glob.match(g.pattern, ["."], key)]
	count(globs) > 0
	g := globs[count(globs) - 1]
}

# same(value, want) says whether a value is the one wanted as the kernel
# reads it: the blanks between fields do not matter, nor a number's
# leading zeros.
same(value, want) if fields(value) == fields(want)

same(value, want) if {
	regex.match(`^-?[0-9]+$`, trim_space(value))
	regex.match(`^-?[0-9]+$`, trim_space(want))
	to_number(trim_space(value)) == to_number(trim_space(want))
}

fields(s) := regex.replace(trim_space(s), `\s+`, " ")

configured_ok(key, want) if same(setting(key).value, want)

running_ok(key, want) if same(input.sysctl.running[key], want)

# configured(key) says how key is configured, and where.
configured(key) := sprintf("is configured %s by %s at %s:%d", [s.value, s.pattern, s.file, s.line]) if {
	s := setting(key)
	s.pattern
} else := sprintf("is configured %s at %s:%d", [s.value, s.file, s.line]) if {
	s := setting(key)
} else := "is not set in any sysctl.d file or /etc/sysctl.conf"

# running(key) says what the running kernel holds.
running(key) := sprintf("runs as %s", [input.sysctl.running[key]]) if {
	input.sysctl.running[key]
} else := "is not in the running kernel"

# problem(key, want) says what is wrong with key against want: in an image
# what it is configured to; on a live host that, and what the running
# kernel holds, naming which of the two differs. Undefined when nothing is.
problem(key, want) := sprintf("%s %s; want %s", [key, configured(key), want]) if {
	not live
	not configured_ok(key, want)
}

problem(key, want) := sprintf("%s differs %s: it %s and %s; want %s", [key, differs(key, want), configured(key), running(key), want]) if {
	live
	differs(key, want)
}

differs(key, want) := "in its configuration and in the running kernel" if {
	not configured_ok(key, want)
	not running_ok(key, want)
}

differs(key, want) := "in its configuration" if {
	not configured_ok(key, want)
	running_ok(key, want)
}

differs(key, want) := "in the running kernel" if {
	configured_ok(key, want)
	not running_ok(key, want)
}

# place(key) is where key is set, for a finding about it: the line, or
# nothing where no file sets it.
place(key) := locate.place(s.file, s.line) if {
	s := setting(key)
} else := {}
