package gpuhost.pkg.lib_test

import data.gpuhost.pkg.lib

test_matching_globs if {
	lib.matching("xserver-xorg*") == {"xserver-xorg-core"} with input as {"packages": [{"name": "xserver-xorg-core"}, {"name": "xorg-docs"}]}
}

test_matching_nothing if {
	lib.matching("telnet") == set() with input as {"packages": [{"name": "telnetd"}]}
}

test_paragraph_without_line if {
	lib.paragraph("sudo") == {} with input as {"packages": [{"name": "sudo"}]}
}

test_enabled_names if {
	lib.enabled == {"cron", "chrony"} with input as {"systemd": {"enabled": ["cron.service", "chrony"]}}
}
