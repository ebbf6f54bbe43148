package audit

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/mdlayher/netlink"
)

// The audit netlink protocol, from linux/audit.h.
const (
	netlinkAudit   = 9    // NETLINK_AUDIT
	auditListRules = 1013 // AUDIT_LIST_RULES
	// maxFields is AUDIT_MAX_FIELDS, bitmaskWords AUDIT_BITMASK_SIZE.
	maxFields    = 64
	bitmaskWords = 64
	// ruleHeader is struct audit_rule_data up to its string buffer.
	ruleHeader = 4*3 + 4*bitmaskWords + 3*4*maxFields + 4
	// kernelTimeout bounds the wait for the kernel's answer.
	kernelTimeout = 5 * time.Second
)

// Filter lists, actions and field ids of struct audit_rule_data.
var (
	auditLists   = map[uint32]string{0: "user", 1: "task", 2: "entry", 4: "exit", 5: "exclude", 6: "filesystem", 7: "io_uring"}
	auditActions = map[uint32]string{0: "never", 1: "possible", 2: "always"}
	auditFields  = map[uint32]string{
		0: "pid", 1: "uid", 2: "euid", 3: "suid", 4: "fsuid", 5: "gid", 6: "egid", 7: "sgid", 8: "fsgid",
		9: "auid", 10: "pers", 11: "arch", 12: "msgtype", 13: "subj_user", 14: "subj_role", 15: "subj_type",
		16: "subj_sen", 17: "subj_clr", 18: "ppid", 19: "obj_user", 20: "obj_role", 21: "obj_type",
		22: "obj_lev_low", 23: "obj_lev_high", 24: "loginuid_set", 25: "sessionid", 26: "fstype",
		100: "devmajor", 101: "devminor", 102: "inode", 103: "exit", 104: "success", 105: "path",
		106: "perm", 107: "dir", 108: "filetype", 109: "obj_uid", 110: "obj_gid", 111: "field_compare",
		112: "exe", 113: "saddr_fam", 200: "a0", 201: "a1", 202: "a2", 203: "a3", 210: "key",
	}
	// stringFields carry their value in the rule's buffer, values[i]
	// being its length.
	stringFields = map[uint32]bool{13: true, 14: true, 15: true, 16: true, 17: true, 19: true, 20: true,
		21: true, 22: true, 23: true, 105: true, 107: true, 112: true, 210: true}
	auditOpFlags = map[uint32]string{
		0x08000000: "&", 0x10000000: "<", 0x20000000: ">", 0x30000000: "!=",
		0x40000000: "=", 0x48000000: "&=", 0x50000000: "<=", 0x60000000: ">=",
	}
	auditArches = map[uint32]string{0xc000003e: "b64", 0x40000003: "b32"}
)

// uidFields hold a uid or gid, whose -1 auditctl writes as "unset".
var uidFields = map[string]bool{"uid": true, "euid": true, "suid": true, "fsuid": true, "auid": true, "loginuid": true,
	"gid": true, "egid": true, "sgid": true, "fsgid": true, "obj_uid": true, "obj_gid": true}

// syscallNumbers are the system calls audit rule sets name, with their
// numbers in the x86-64 and i386 tables; a number outside them is shown
// as "#N", and a rule naming one is not compared with the files.
var syscallNumbers = map[string][2]int{
	"execve": {59, 11}, "execveat": {322, 358},
	"adjtimex": {159, 124}, "settimeofday": {164, 79}, "clock_settime": {227, 264},
	"sethostname": {170, 74}, "setdomainname": {171, 121},
	"mount": {165, 21}, "umount2": {166, 52},
	"init_module": {175, 128}, "finit_module": {313, 350}, "delete_module": {176, 129},
	"chmod": {90, 15}, "fchmod": {91, 94}, "fchmodat": {268, 306},
	"chown": {92, 182}, "fchown": {93, 95}, "fchownat": {260, 298}, "lchown": {94, 16},
	"setxattr": {188, 226}, "lsetxattr": {189, 227}, "fsetxattr": {190, 228},
	"removexattr": {197, 235}, "lremovexattr": {198, 236}, "fremovexattr": {199, 237},
	"unlink": {87, 10}, "unlinkat": {263, 301}, "rename": {82, 38}, "renameat": {264, 302}, "renameat2": {316, 353},
	"open": {2, 5}, "openat": {257, 295}, "creat": {85, 8}, "truncate": {76, 92}, "ftruncate": {77, 93},
	"open_by_handle_at": {304, 342}, "kexec_load": {246, 283}, "personality": {135, 136}, "ptrace": {101, 26},
}

// syscallName names number n of the table for arch ("b64" or "b32").
func syscallName(arch string, n int) string {
	col := 0
	if arch == "b32" {
		col = 1
	}
	for name, nums := range syscallNumbers {
		if nums[col] == n {
			return name
		}
	}
	return "#" + strconv.Itoa(n)
}

// KernelRules asks the kernel for the audit rules it holds
// (AUDIT_LIST_RULES over the audit netlink socket), read-only. It needs
// CAP_AUDIT_CONTROL in the initial user and network namespaces.
func KernelRules(ctx context.Context) ([]facts.AuditRule, error) {
	c, err := netlink.Dial(netlinkAudit, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the audit netlink socket: %w", err)
	}
	defer c.Close()
	deadline := time.Now().Add(kernelTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("audit netlink socket: %w", err)
	}
	if _, err := c.Send(netlink.Message{Header: netlink.Header{Type: auditListRules, Flags: netlink.Request}}); err != nil {
		return nil, fmt.Errorf("asking the kernel for its audit rules: %w", err)
	}
	msgs, err := c.Receive()
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's audit rules: %w", err)
	}
	rules := []facts.AuditRule{}
	for _, m := range msgs {
		if m.Header.Type != auditListRules {
			continue
		}
		r, err := DecodeKernelRule(m.Data)
		if err != nil {
			return nil, err
		}
		if len(rules) >= maxRules {
			return nil, fmt.Errorf("the kernel holds more than %d audit rules", maxRules)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// DecodeKernelRule reads one struct audit_rule_data as the kernel sends it,
// into the form ParseRules gives the same rule written in a file. Every
// count and length is checked against the message before it is used.
func DecodeKernelRule(b []byte) (facts.AuditRule, error) {
	r := facts.AuditRule{Kind: "syscall", Syscalls: []string{}, Fields: []facts.AuditField{}}
	if len(b) < ruleHeader {
		return r, fmt.Errorf("audit rule from the kernel: %d bytes, want at least %d", len(b), ruleHeader)
	}
	le := binary.NativeEndian
	word := func(i int) uint32 { return le.Uint32(b[4*i:]) }
	flags, action, count := word(0), word(1), word(2)
	list, ok := auditLists[flags&^0x10] // AUDIT_FILTER_PREPEND
	if !ok {
		return r, fmt.Errorf("audit rule from the kernel: unknown filter list %d", flags)
	}
	if r.Action, ok = auditActions[action]; !ok {
		return r, fmt.Errorf("audit rule from the kernel: unknown action %d", action)
	}
	r.List = list
	if count > maxFields {
		return r, fmt.Errorf("audit rule from the kernel: %d fields, at most %d", count, maxFields)
	}
	const maskAt, fieldsAt = 3, 3 + bitmaskWords
	valuesAt, flagsAt := fieldsAt+maxFields, fieldsAt+2*maxFields
	buflen := int(word(flagsAt + maxFields))
	buf := b[ruleHeader:]
	if buflen > len(buf) {
		return r, fmt.Errorf("audit rule from the kernel: %d bytes of strings, %d in the message", buflen, len(buf))
	}
	buf = buf[:buflen]
	mask, all := syscallMask(word, maskAt)
	for i := 0; i < int(count); i++ {
		id, value, opFlags := word(fieldsAt+i), word(valuesAt+i), word(flagsAt+i)
		name, ok := auditFields[id]
		if !ok {
			name = "field" + strconv.Itoa(int(id))
		}
		op, ok := auditOpFlags[opFlags]
		if !ok {
			return r, fmt.Errorf("audit rule from the kernel: field %s has unknown operator %#x", name, opFlags)
		}
		v, rest, err := fieldValue(id, name, value, buf)
		if err != nil {
			return r, err
		}
		buf = rest
		switch name {
		case "key":
			// Several -k on one rule reach the kernel joined by \x01.
			r.Key = strings.ReplaceAll(v, "\x01", ",")
			continue
		case "path", "dir":
			r.Path = v
		case "perm":
			r.Perms = v
		case "arch":
			r.Arch = v
		}
		r.Fields = append(r.Fields, facts.AuditField{Name: name, Op: op, Value: v})
	}
	if all {
		r.Syscalls = []string{"all"}
	} else {
		for _, n := range mask {
			r.Syscalls = append(r.Syscalls, syscallName(r.Arch, n))
		}
		slices.Sort(r.Syscalls)
	}
	if isWatch(r, all) {
		r.Kind, r.Syscalls, r.Fields = "watch", []string{}, []facts.AuditField{}
	}
	r.Text = ruleText(r)
	return r, nil
}

// syscallMask reads the rule's system call bitmask as system call numbers.
// A mask with every bit the rule can set means "-S all", which is reported
// as such rather than as every number: all is true and the numbers are nil.
func syscallMask(word func(int) uint32, maskAt int) (mask []int, all bool) {
	all = true
	for w := 0; w < bitmaskWords; w++ {
		m := word(maskAt + w)
		// The kernel clears the top AUDIT_SYSCALL_CLASSES bits of a
		// mask ("-S all" sets them) and ORs in the classes' system
		// calls: those bits say nothing of the rule.
		full := uint32(0xffffffff)
		if w == bitmaskWords-1 {
			full = 0x0000ffff
		}
		if m&full != full {
			all = false
		}
		for bit := 0; bit < 32; bit++ {
			if m&(1<<bit) != 0 {
				mask = append(mask, w*32+bit)
			}
		}
	}
	if all {
		mask = nil
	}
	return mask, all
}

// fieldValue spells a field's value as auditctl -l would, so a rule read
// from the kernel compares equal to the same rule read from a file. A
// string field takes its bytes from the front of buf, which holds the
// rule's strings one after another; the rest of buf is returned.
func fieldValue(id uint32, name string, value uint32, buf []byte) (string, []byte, error) {
	switch {
	case stringFields[id]:
		if int(value) > len(buf) {
			return "", buf, fmt.Errorf("audit rule from the kernel: field %s wants %d bytes, %d left", name, value, len(buf))
		}
		return string(buf[:value]), buf[value:], nil
	case name == "arch":
		if v, ok := auditArches[value]; ok {
			return v, buf, nil
		}
		return fmt.Sprintf("%#x", value), buf, nil
	case name == "perm":
		return permLetters(value), buf, nil
	case uidFields[name] && value == 0xffffffff:
		return "unset", buf, nil
	default:
		return strconv.FormatUint(uint64(value), 10), buf, nil
	}
}

// isWatch tells a -w watch from an exit rule that says the same: auditctl
// turns "-w PATH -p PERMS" into an exit rule on every system call with only
// a path (or dir) and a perm field.
func isWatch(r facts.AuditRule, allSyscalls bool) bool {
	if r.List != "exit" || r.Action != "always" || !allSyscalls || r.Path == "" {
		return false
	}
	for _, f := range r.Fields {
		if f.Name != "path" && f.Name != "dir" && f.Name != "perm" {
			return false
		}
	}
	return true
}

// permLetters writes AUDIT_PERM_EXEC, _WRITE, _READ and _ATTR as -p does.
func permLetters(v uint32) string {
	var b []byte
	for _, p := range []struct {
		bit    uint32
		letter byte
	}{{8, 'a'}, {4, 'r'}, {2, 'w'}, {1, 'x'}} {
		if v&p.bit != 0 {
			b = append(b, p.letter)
		}
	}
	return string(b)
}

// ruleText writes a decoded rule as auditctl -l would.
func ruleText(r facts.AuditRule) string {
	var b strings.Builder
	if r.Kind == "watch" {
		fmt.Fprintf(&b, "-w %s -p %s", r.Path, r.Perms)
	} else {
		fmt.Fprintf(&b, "-a %s,%s", r.Action, r.List)
		if r.Arch != "" {
			fmt.Fprintf(&b, " -F arch=%s", r.Arch)
		}
		if len(r.Syscalls) > 0 {
			fmt.Fprintf(&b, " -S %s", strings.Join(r.Syscalls, ","))
		}
		for _, f := range r.Fields {
			if f.Name != "arch" {
				fmt.Fprintf(&b, " -F %s%s%s", f.Name, f.Op, f.Value)
			}
		}
	}
	if r.Key != "" {
		fmt.Fprintf(&b, " -k %s", r.Key)
	}
	return b.String()
}

// Comparable is a rule's identity for matching the files with the kernel:
// kind, list, action, arch, system calls, path, permissions, the other
// fields in order of name and the key. ok is false when a system call is
// only a number here, or a field is one this package does not know, so
// the two sides cannot be matched honestly.
func Comparable(r facts.AuditRule) (id string, ok bool) {
	ok = true
	if r.Kind == "syscall" && len(r.Syscalls) == 0 {
		// auditctl puts every system call on a rule that names none.
		r.Syscalls = []string{"all"}
	}
	if r.Kind == "syscall" && isWatch(r, slices.Equal(r.Syscalls, []string{"all"})) {
		r.Kind, r.Fields = "watch", nil
	}
	if r.Kind == "watch" {
		r.List, r.Action, r.Syscalls = "", "", nil
	}
	syscalls := slices.Clone(r.Syscalls)
	for i, s := range syscalls {
		if strings.HasPrefix(s, "#") {
			ok = false
		} else if _, known := syscallNumbers[s]; !known && s != "all" {
			ok = false
		}
		syscalls[i] = s
	}
	slices.Sort(syscalls)
	var fields []string
	for _, f := range r.Fields {
		switch f.Name {
		case "arch", "path", "dir", "perm":
			continue
		}
		if strings.HasPrefix(f.Name, "field") {
			ok = false
		}
		v := f.Value
		if uidFields[f.Name] && (v == "-1" || v == "4294967295") {
			v = "unset"
		}
		fields = append(fields, f.Name+f.Op+v)
	}
	slices.Sort(fields)
	return strings.Join([]string{r.Kind, r.List, r.Action, r.Arch, strings.Join(syscalls, ","),
		strings.TrimSuffix(r.Path, "/"), r.Perms, strings.Join(fields, " "), r.Key}, "|"), ok
}

// CompareKernel matches the rules the files load with those the kernel
// holds. It returns the file rules the kernel lacks, the kernel rules no
// file has, and how many rules could not be compared at all.
func CompareKernel(files, kernel []facts.AuditRule) (unloaded, unexpected []facts.AuditRule, notCompared int) {
	count := func(rules []facts.AuditRule) map[string]int {
		m := map[string]int{}
		for _, r := range rules {
			if id, ok := Comparable(r); ok && r.Kind != "control" && r.Kind != "delete" && r.Kind != "delete_watch" {
				m[id]++
			}
		}
		return m
	}
	inKernel, inFiles := count(kernel), count(files)
	unloaded, unexpected = []facts.AuditRule{}, []facts.AuditRule{}
	for _, r := range files {
		if r.Kind == "control" || r.Kind == "delete" || r.Kind == "delete_watch" {
			continue
		}
		id, ok := Comparable(r)
		if !ok {
			notCompared++
			continue
		}
		if inKernel[id] == 0 {
			unloaded = append(unloaded, r)
		}
	}
	for _, r := range kernel {
		id, ok := Comparable(r)
		if !ok {
			notCompared++
			continue
		}
		if inFiles[id] == 0 {
			unexpected = append(unexpected, r)
		}
	}
	return unloaded, unexpected, notCompared
}
