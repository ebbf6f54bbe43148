# What the audit checks share: which rules filter by user, and which rules
# record an access to a path.
package gpuhost.audit.lib

# filters_uid holds for a rule that narrows by any user id field.
filters_uid(r) if {
	some f in r.fields
	f.name in {"uid", "euid", "auid", "loginuid", "suid", "fsuid"}
}

# watches(rule, path, perm) holds when rule records perm on path: a -w
# watch (a directory's covers what is under it) or an exit rule on
# path=/dir=.
watches(r, p, perm) if {
	r.kind == "watch"
	covers(r.path, p)
	contains(r.perms, perm)
}

watches(r, p, perm) if {
	r.kind == "syscall"
	r.list == "exit"
	r.action == "always"
	covers(r.path, p)
	contains(r.perms, perm)
}

covers(watched, p) if {
	watched != ""
	trim_suffix(watched, "/") == trim_suffix(p, "/")
}

covers(watched, p) if {
	watched != ""
	w := trim_suffix(watched, "/")
	startswith(p, concat("", [w, "/"]))
}
