# What the files checks share: OpenSCAP's idea of a mode "or stricter", of
# which benchmark files a rule collects, of an interactive user, and what
# an incomplete read means. No METADATA and no deny: a library.
package gpuhost.fs.lib

# octal(s) is the number a mode written in octal digits ("0644") stands for.
octal(s) := n if {
	digits := split(s, "")
	n := sum([v | some i, d in digits; v := to_number(d) * bits.lsh(1, 3 * ((count(digits) - 1) - i))])
}

# within(mode, limit) holds when mode sets no bit that limit leaves clear, the
# setuid, setgid and sticky bits included: OVAL's "or stricter" states
# test each bit on its own.
within(mode, limit) if bits.and(octal(mode), octal(limit)) == octal(mode)

# is_within(mode, limit) is within's answer as a value.
is_within(mode, limit) if within(mode, limit)

else := false

# judged_types maps a benchmark entry's directory flag to the types its
# rule collects an item for: never a symlink (OVAL filters them out) nor a
# missing file, and where the rule names a directory, only a directory.
judged_types := {false: {"regular", "directory", "other"}, true: {"directory"}}

# min_id is where ComplianceAsCode's interactive users begin: uid (or gid)
# 1000 and up, nobody aside.
min_id := 1000

# named(name) is " (name)", or nothing when the id has no name.
named(name) := sprintf(" (%s)", [name]) if name != ""

else := ""

files := object.get(input, "files", {})

patterns := {p | some p in object.get(files, "patterns", [])}

# unknown_params(key, given) are the messages for the paths that given,
# the params key's map, names and the collector does not read: such a path
# would never be judged. The map comes from the check, so that this library
# reads no params of its own.
unknown_params(key, given) := {msg |
	some p, _ in given
	not p in patterns
	msg := sprintf("params %s names %s, which the files collector does not read, so it was not judged", [key, p])
}

tree_walk := object.get(files, "walk", {})

walk_gaps contains sprintf("%s, in %s", [tree_walk.stopped, where]) if {
	object.get(tree_walk, "stopped", "") != ""
	where := object.get(tree_walk, "stopped_at", "")
	where != ""
}

walk_gaps contains tree_walk.stopped if {
	object.get(tree_walk, "stopped", "") != ""
	object.get(tree_walk, "stopped_at", "") == ""
}

walk_gaps contains sprintf("could not read %s", [concat("; ", tree_walk.unread)]) if count(object.get(tree_walk, "unread", [])) > 0

# walk_errors says the walk missed part of the tree: a check over it
# cannot pass on what it did not see.
walk_errors contains msg if {
	tree_walk.complete == false
	msg := sprintf("the walk of the tree is incomplete (%d entries seen), so it cannot pass: %s", [tree_walk.entries, concat("; ", walk_gaps)])
}

# homes_errors says the same of the home directories and trust files.
homes_errors contains msg if {
	object.get(files, "homes_incomplete", "") != ""
	msg := sprintf("the home directories were not read whole, so they cannot pass: %s", [files.homes_incomplete])
}
