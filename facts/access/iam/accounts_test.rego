package gpuhost.iam.accounts_test

import data.gpuhost.iam.accounts
import data.gpuhost.iam.fixtures_test as fx

test_good_passes if {
	accounts.deny == set() with input as {"access": fx.good}
}

test_second_root_and_empty_password if {
	u := array.concat(fx.users, [
		{"name": "toor", "uid": 0, "gid": 0, "shell": "/bin/sh", "password": "hash"},
		{"name": "guest", "uid": 1003, "gid": 1003, "shell": "/bin/sh", "password": "empty"},
	])
	accounts.deny == {
		{"msg": "account toor has uid 0: it is root under another name", "subject": "toor"},
		{"msg": "account guest has an empty password: anyone may log in as it where passwords are accepted", "subject": "guest"},
	} with input as {"access": object.union(fx.good, {"users": u})}
}
