package gpuhost.pkg.services_test

import data.gpuhost.pkg.services

params := {"required_services": ["cron", "chrony|ntp"], "forbidden_services": ["avahi-daemon"]}

test_pass if {
	f := {"systemd": {"enabled": ["cron.service", "ntp.service"], "masked": []}}
	services.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_missing_and_forbidden if {
	f := {"systemd": {"enabled": ["avahi-daemon.service", "chrony.service"], "masked": []}}
	services.deny == {
		{"msg": "cron is not enabled (params.required_services)", "subject": "cron"},
		{"msg": "avahi-daemon is enabled (params.forbidden_services)", "subject": "avahi-daemon"},
	} with input as f with data.gpuhost.params as params
}

test_skip_without_facts if {
	services.skip == {"no systemd facts were collected"} with input as {} with data.gpuhost.params as params
	services.deny == set() with input as {} with data.gpuhost.params as params
}
