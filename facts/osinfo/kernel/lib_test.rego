package gpuhost.kernel.lib_test

import data.gpuhost.kernel.lib

sysctl(configured, globs, excluded) := {"sysctl": {"files": [], "configured": configured, "globs": globs, "excluded": excluded}}

glob_at(pattern, value, line) := {"pattern": pattern, "value": value, "file": "/usr/lib/sysctl.d/50-default.conf", "line": line}

test_same if {
	lib.same("1", "1")
	lib.same(" 01", "1")
	lib.same("-1", "-01")
	lib.same("4\t4  1 7", "4 4 1 7")
	not lib.same("1", "0")
	not lib.same("1 # note", "1")
	not lib.same("", "0")
}

test_setting_prefers_the_key_over_globs if {
	doc := sysctl({"a.b.c": {"value": "1", "file": "/etc/sysctl.conf", "line": 1}}, [glob_at("a.*.c", "2", 3)], {})
	lib.setting("a.b.c").value == "1" with input as doc
	lib.setting("a.x.c").value == "2" with input as doc
	not lib.setting("a.x.y") with input as doc
}

test_setting_takes_the_last_glob_unless_excluded if {
	doc := sysctl({}, [glob_at("a.*.c", "2", 3), glob_at("a.?.c", "3", 4)], {"a.y.c": {"file": "/usr/lib/sysctl.d/50-default.conf", "line": 5}})
	lib.setting("a.x.c") == glob_at("a.?.c", "3", 4) with input as doc
	lib.setting("a.xy.c").value == "2" with input as doc
	not lib.setting("a.y.c") with input as doc
	not lib.setting("a.b.d.c") with input as doc
}

test_problem_offline if {
	doc := sysctl({"a.b": {"value": "1", "file": "/etc/sysctl.conf", "line": 7}}, [], {})
	not lib.problem("a.b", "1") with input as doc
	lib.problem("a.b", "0") == "a.b is configured 1 at /etc/sysctl.conf:7; want 0" with input as doc
	lib.place("a.b") == {"file": "/etc/sysctl.conf", "line": 7} with input as doc
	lib.place("c.d") == {} with input as doc
}

test_problem_live if {
	doc := json.patch(sysctl({"a.b": {"value": "1", "file": "/etc/sysctl.conf", "line": 7}}, [], {}), [{"op": "add", "path": "/sysctl/running", "value": {"a.b": "1"}}])
	not lib.problem("a.b", "1") with input as doc
	lib.problem("a.b", "0") == "a.b differs in its configuration and in the running kernel: it is configured 1 at /etc/sysctl.conf:7 and runs as 1; want 0" with input as doc
}
