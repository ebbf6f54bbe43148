package gpuhost.fs.lib_test

import data.gpuhost.fs.lib

test_octal if {
	lib.octal("0644") == 420
	lib.octal("4755") == 2541
	lib.octal("0000") == 0
}

test_within if {
	lib.within("0640", "0644")
	lib.within("0000", "0000")
	lib.within("0600", "0600")
	not lib.within("0664", "0644")
	not lib.within("4644", "0644")
	not lib.within("0755", "0644")
	not lib.within("0640", "0000")
}

test_named if {
	lib.named("root") == " (root)"
	lib.named("") == ""
}

test_unknown_params if {
	lib.unknown_params("files_owner", {"/etc/passwd": 0, "/etc/nope": 0}) == {"params files_owner names /etc/nope, which the files collector does not read, so it was not judged"} with input as {"files": {"patterns": ["/etc/passwd"]}}
}

test_walk_errors if {
	lib.walk_errors == {"the walk of the tree is incomplete (7 entries seen), so it cannot pass: could not read /root: permission denied; stopped at its limit of 7 entries"} with input as {"files": {"walk": {
		"complete": false, "entries": 7, "stopped": "stopped at its limit of 7 entries", "unread": ["/root: permission denied"],
	}}}
	lib.walk_errors == set() with input as {"files": {"walk": {"complete": true, "entries": 7, "unread": []}}}
}

test_homes_errors if {
	lib.homes_errors == {"the home directories were not read whole, so they cannot pass: listing /home/a: permission denied"} with input as {"files": {"homes_incomplete": "listing /home/a: permission denied"}}
	lib.homes_errors == set() with input as {"files": {}}
}

test_walk_errors_say_where if {
	lib.walk_errors == {"the walk of the tree is incomplete (9 entries seen), so it cannot pass: stopped after 9 entries: context deadline exceeded, in /var/lib"} with input as {"files": {"walk": {
		"complete": false, "entries": 9, "stopped": "stopped after 9 entries: context deadline exceeded", "stopped_at": "/var/lib", "unread": [],
	}}}
}
