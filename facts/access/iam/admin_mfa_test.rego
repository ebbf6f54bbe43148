package gpuhost.iam.admin_mfa_test

import data.gpuhost.iam.admin_mfa
import data.gpuhost.iam.ssh_fixtures_test as fx

test_hardened_passes if {
	admin_mfa.deny == set() with input as {"ssh": fx.ssh, "access": {"pam_sshd": fx.pam}} with data.gpuhost.params as fx.params
}

test_key_only_admins_fail if {
	s := object.union(fx.ssh, {"match": []})
	admin_mfa.deny == {
		"/etc/ssh/sshd_config does not require publickey,keyboard-interactive for the admin groups (gpuhost-admin)",
		"/etc/ssh/sshd_config: KbdInteractiveAuthentication is no, so the one-time code cannot be asked",
	} with input as {"ssh": s, "access": {"pam_sshd": fx.pam}} with data.gpuhost.params as fx.params
}

test_global_two_factor_passes if {
	s := object.union(fx.ssh, {"match": [], "kbd_interactive_authentication": "yes", "authentication_methods": ["publickey,keyboard-interactive:pam"]})
	admin_mfa.deny == set() with input as {"ssh": s, "access": {"pam_sshd": fx.pam}} with data.gpuhost.params as fx.params
}

test_either_method_is_not_two_factors if {
	s := object.union(fx.ssh, {"match": [], "kbd_interactive_authentication": "yes", "authentication_methods": ["publickey,keyboard-interactive", "publickey"]})
	count(admin_mfa.deny) == 1 with input as {"ssh": s, "access": {"pam_sshd": fx.pam}} with data.gpuhost.params as fx.params
}

test_optional_pam_module_and_no_pam_fail if {
	p := [object.union(fx.pam[1], {"control": "optional"})]
	admin_mfa.deny == {
		"/etc/ssh/sshd_config: UsePAM is no, so no PAM module can ask a second factor",
		"/etc/pam.d/sshd asks no second factor in its auth phase (pam_google_authenticator, pam_u2f or pam_oath, required)",
	} with input as {"ssh": object.union(fx.ssh, {"use_pam": "no"}), "access": {"pam_sshd": p}} with data.gpuhost.params as fx.params
}

test_no_roles_skip if {
	admin_mfa.skip == {"params.roles define no admin group"} with data.gpuhost.params as {}
	admin_mfa.deny == set() with input as {"ssh": fx.ssh, "access": {"pam_sshd": []}} with data.gpuhost.params as {}
}
