# What the access checks share: the role groups params define, and who is
# a member of which, by secondary membership or primary group.
package gpuhost.iam.lib

roles := object.get(data.gpuhost.params, "roles", {})

role_groups(role) := {g | some g in object.get(roles, role, [])}

all_role_groups := (role_groups("admin") | role_groups("developer")) | role_groups("auditor")

acc := input.access

gid_of(name) := g.gid if {
	some g in acc.groups
	g.name == name
}

# member(user, groups) holds when user belongs to one of groups.
member(user, groups) if {
	some g in acc.groups
	g.name in groups
	user in g.members
}

member(user, groups) if {
	some u in acc.users
	u.name == user
	some name in groups
	u.gid == gid_of(name)
}

# in_role(principal, role) holds for a sudoers principal (a user, or
# %group) of that role.
in_role(p, role) if {
	startswith(p, "%")
	substring(p, 1, -1) in role_groups(role)
}

in_role(p, role) if {
	not startswith(p, "%")
	member(p, role_groups(role))
}
