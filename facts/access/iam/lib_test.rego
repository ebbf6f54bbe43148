package gpuhost.iam.lib_test

import data.gpuhost.iam.fixtures_test as fx
import data.gpuhost.iam.lib

test_members_by_list_and_by_primary_group if {
	lib.in_role("alice", "admin") with input as {"access": fx.good} with data.gpuhost.params as fx.params
	lib.in_role("dev", "developer") with input as {"access": fx.good} with data.gpuhost.params as fx.params
	lib.in_role("%gpuhost-audit", "auditor") with input as {"access": fx.good} with data.gpuhost.params as fx.params
}

test_non_members if {
	not lib.in_role("eve", "admin") with input as {"access": fx.good} with data.gpuhost.params as fx.params
	not lib.in_role("%sudo", "admin") with input as {"access": fx.good} with data.gpuhost.params as fx.params
	not lib.in_role("alice", "admin") with input as {"access": fx.good} with data.gpuhost.params as {}
}
