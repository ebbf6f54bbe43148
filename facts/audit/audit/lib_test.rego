package gpuhost.audit.lib_test

import data.gpuhost.audit.lib

test_directory_watch_covers_what_is_under_it if {
	lib.watches({"kind": "watch", "path": "/etc/ssh/", "perms": "aw"}, "/etc/ssh/sshd_config.d", "w")
	lib.watches({"kind": "syscall", "list": "exit", "action": "always", "path": "/etc/ssh", "perms": "aw"}, "/etc/ssh", "a")
}

test_no_cover_for_other_paths_or_perms if {
	not lib.watches({"kind": "watch", "path": "/etc/ss", "perms": "aw"}, "/etc/ssh", "w")
	not lib.watches({"kind": "watch", "path": "/etc/ssh", "perms": "r"}, "/etc/ssh", "w")
	not lib.watches({"kind": "syscall", "list": "exit", "action": "never", "path": "/etc/ssh", "perms": "aw"}, "/etc/ssh", "w")
	not lib.watches({"kind": "watch", "path": "", "perms": "aw"}, "/etc/ssh", "w")
}

test_filters_uid if {
	lib.filters_uid({"fields": [{"name": "auid", "op": ">=", "value": "1000"}]})
	not lib.filters_uid({"fields": [{"name": "arch", "op": "=", "value": "b64"}]})
}
