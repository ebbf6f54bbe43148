package gpuhost.audit.forwarded_test

import data.gpuhost.audit.forwarded
import data.gpuhost.audit.log_fixtures_test as fx

test_forwarded_to_the_remote if {
	forwarded.deny == set() with input as {"audit": {"remote": {"audisp_remote_active": true, "audisp_remote_server": "logs.example", "journal_upload": false}}}
		with data.gpuhost.params as {"audit_remote": "logs.example"}
	forwarded.deny == set() with input as {"audit": {"remote": {"audisp_remote_active": false, "journal_upload": true, "journal_upload_url": "https://logs.example:19532"}}}
		with data.gpuhost.params as {"audit_remote": "logs.example"}
}

test_forwarded_elsewhere_fails if {
	forwarded.deny == {`audit records are not forwarded to logs.example (audisp-remote active, to "other.example", journal upload inactive)`} with input as {"audit": {"remote": {"audisp_remote_active": true, "audisp_remote_server": "other.example", "journal_upload": false}}}
		with data.gpuhost.params as {"audit_remote": "logs.example"}
}

test_no_remote_skips if {
	forwarded.skip == {"params.audit_remote names no log host"} with data.gpuhost.params as {}
	forwarded.deny == set() with input as {"audit": {"remote": fx.local}} with data.gpuhost.params as {}
}
