package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// kfield is one field of a rule as auditctl sends it.
type kfield struct {
	id, op, value uint32
	str           string
}

// encodeRule lays out struct audit_rule_data as auditctl fills it, so the
// decoder is tested against the kernel's layout rather than its own.
func encodeRule(list, action uint32, syscalls []int, all bool, fields []kfield) []byte {
	b := make([]byte, ruleHeader)
	put := func(i int, v uint32) { binary.NativeEndian.PutUint32(b[4*i:], v) }
	put(0, list)
	put(1, action)
	put(2, uint32(len(fields)))
	for w := 0; w < bitmaskWords; w++ {
		if all {
			put(3+w, 0xffffffff)
		}
	}
	if all {
		// As the kernel sends "-S all" back: its syscall class bits, the
		// top 16, cleared.
		put(3+bitmaskWords-1, 0x0000ffff)
	}
	for _, n := range syscalls {
		i := 3 + n/32
		put(i, binary.NativeEndian.Uint32(b[4*i:])|1<<(n%32))
	}
	var buf []byte
	for i, f := range fields {
		put(3+bitmaskWords+i, f.id)
		v := f.value
		if f.str != "" {
			v = uint32(len(f.str))
			buf = append(buf, f.str...)
		}
		put(3+bitmaskWords+maxFields+i, v)
		put(3+bitmaskWords+2*maxFields+i, f.op)
	}
	put(3+bitmaskWords+3*maxFields, uint32(len(buf)))
	return append(b, buf...)
}

const (
	opEq, opGE, opNE = 0x40000000, 0x60000000, 0x30000000
	archB64, archB32 = 0xc000003e, 0x40000003
)

func TestSyscallNumbersAreTheKernels(t *testing.T) {
	for name, want := range map[string]int{"execve": unix.SYS_EXECVE, "execveat": unix.SYS_EXECVEAT, "openat": unix.SYS_OPENAT,
		"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
		"chmod": unix.SYS_CHMOD, "fchownat": unix.SYS_FCHOWNAT, "renameat2": unix.SYS_RENAMEAT2, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"settimeofday": unix.SYS_SETTIMEOFDAY, "kexec_load": unix.SYS_KEXEC_LOAD, "ptrace": unix.SYS_PTRACE} {
		if got := syscallNumbers[name][0]; got != want {
			t.Errorf("%s is %d on x86-64, the table says %d", name, want, got)
		}
	}
}

func TestDecodeKernelRules(t *testing.T) {
	rootExec := encodeRule(4, 2, []int{59, 322}, false, []kfield{
		{id: 11, op: opEq, value: archB64}, {id: 2, op: opEq, value: 0}, {id: 210, op: opEq, str: "gpuhost-root-exec"}})
	userExec32 := encodeRule(4, 2, []int{11, 358}, false, []kfield{
		{id: 11, op: opEq, value: archB32}, {id: 9, op: opGE, value: 1000}, {id: 9, op: opNE, value: 0xffffffff}, {id: 210, op: opEq, str: "u"}})
	watch := encodeRule(4, 2, nil, true, []kfield{{id: 107, op: opEq, str: "/etc/ssh"}, {id: 106, op: opEq, value: 2 | 8}, {id: 210, op: opEq, str: "cfg"}})
	for _, c := range []struct {
		data []byte
		want string
	}{
		{rootExec, "-a always,exit -F arch=b64 -S execve,execveat -F euid=0 -k gpuhost-root-exec"},
		{userExec32, "-a always,exit -F arch=b32 -S execve,execveat -F auid>=1000 -F auid!=unset -k u"},
		{watch, "-w /etc/ssh -p aw -k cfg"},
	} {
		r, err := DecodeKernelRule(c.data)
		if err != nil {
			t.Fatal(err)
		}
		if r.Text != c.want {
			t.Errorf("decoded %q, want %q", r.Text, c.want)
		}
	}
}

// The hardened tree's rules, as the kernel would hold them once loaded,
// compare equal to the files; a rule the kernel lost and one it gained are
// named.
func TestCompareKernelWithFiles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "hardened", "etc", "audit", "rules.d", "50-gpuhost.rules"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := ParseRules("50-gpuhost.rules", data)
	if err != nil {
		t.Fatal(err)
	}
	var kernel []facts.AuditRule
	for _, r := range files {
		// What auditctl sends for each file rule, by way of its text:
		// the kernel keeps the same fields.
		kernel = append(kernel, loadedAs(t, r))
	}
	unloaded, unexpected, notCompared := CompareKernel(files, kernel)
	if len(unloaded) != 0 || len(unexpected) != 0 || notCompared != 0 {
		t.Fatalf("unloaded %v, unexpected %v, not compared %d", texts(unloaded), texts(unexpected), notCompared)
	}
	gained := encodeRule(4, 2, []int{101}, false, []kfield{{id: 11, op: opEq, value: archB64}})
	extra, err := DecodeKernelRule(gained)
	if err != nil {
		t.Fatal(err)
	}
	unloaded, unexpected, _ = CompareKernel(files, append(kernel[1:], extra))
	if len(unloaded) != 1 || unloaded[0].Line != files[0].Line || len(unexpected) != 1 || unexpected[0].Text != "-a always,exit -F arch=b64 -S ptrace" {
		t.Errorf("unloaded %v, unexpected %v", texts(unloaded), texts(unexpected))
	}
}

// loadedAs encodes a parsed file rule as auditctl would send it and decodes
// it back, as KernelRules would read it.
func loadedAs(t *testing.T, r facts.AuditRule) facts.AuditRule {
	t.Helper()
	ids := map[string]uint32{}
	for id, name := range auditFields {
		ids[name] = id
	}
	ops := map[string]uint32{}
	for flag, op := range auditOpFlags {
		ops[op] = flag
	}
	var fields []kfield
	arch := "b64"
	all := false
	var nums []int
	if r.Kind == "watch" {
		all = true
		fields = append(fields, kfield{id: 107, op: opEq, str: strings.TrimSuffix(r.Path, "/")})
		var perm uint32
		for _, c := range r.Perms {
			perm |= map[rune]uint32{'x': 1, 'w': 2, 'r': 4, 'a': 8}[c]
		}
		fields = append(fields, kfield{id: 106, op: opEq, value: perm})
	} else {
		for _, f := range r.Fields {
			k := kfield{id: ids[f.Name], op: ops[f.Op]}
			switch {
			case f.Name == "arch":
				arch = f.Value
				k.value = map[string]uint32{"b64": archB64, "b32": archB32}[f.Value]
			case f.Name == "perm":
				for _, c := range f.Value {
					k.value |= map[rune]uint32{'x': 1, 'w': 2, 'r': 4, 'a': 8}[c]
				}
			case stringFields[k.id]:
				k.str = f.Value
			case f.Value == "unset":
				k.value = 0xffffffff
			default:
				var v uint32
				for _, c := range f.Value {
					v = v*10 + uint32(c-'0')
				}
				k.value = v
			}
			fields = append(fields, k)
		}
		col := map[string]int{"b64": 0, "b32": 1}[arch]
		for _, s := range r.Syscalls {
			nums = append(nums, syscallNumbers[s][col])
		}
		all = len(nums) == 0
	}
	if r.Key != "" {
		fields = append(fields, kfield{id: 210, op: opEq, str: r.Key})
	}
	got, err := DecodeKernelRule(encodeRule(4, 2, nums, all, fields))
	if err != nil {
		t.Fatalf("%s: %v", r.Text, err)
	}
	return got
}

func texts(rules []facts.AuditRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Text)
	}
	return out
}

func TestDecodeRejectsShortAndLyingRules(t *testing.T) {
	good := encodeRule(4, 2, []int{59}, false, []kfield{{id: 210, op: opEq, str: "k"}})
	lying := slices.Clone(good)
	binary.NativeEndian.PutUint32(lying[4*(3+bitmaskWords+3*maxFields):], 1<<30)
	tooMany := slices.Clone(good)
	binary.NativeEndian.PutUint32(tooMany[8:], maxFields+1)
	for name, b := range map[string][]byte{"short": good[:100], "buflen past the end": lying, "too many fields": tooMany} {
		if _, err := DecodeKernelRule(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// The kernel's own rules, read as a scan of this host would: the machine
// is only read. Without CAP_AUDIT_CONTROL or outside the initial network
// namespace, the error is what a scan records.
func TestKernelRulesReadsThisHost(t *testing.T) {
	rules, err := KernelRules(context.Background())
	if err != nil {
		if os.Geteuid() == 0 && os.Getenv("CI") != "" {
			t.Fatalf("as root under CI: %v", err)
		}
		t.Skipf("the kernel's audit rules cannot be read here: %v", err)
	}
	for _, r := range rules {
		if r.Text == "" || r.Kind == "" {
			t.Errorf("rule %+v", r)
		}
	}
	t.Logf("%d rules in the kernel", len(rules))
}

func FuzzDecodeKernelRule(f *testing.F) {
	f.Add(encodeRule(4, 2, []int{59}, false, []kfield{{id: 11, op: opEq, value: archB64}, {id: 210, op: opEq, str: "k"}}))
	f.Add(encodeRule(4, 2, nil, true, []kfield{{id: 107, op: opEq, str: "/etc"}, {id: 106, op: opEq, value: 10}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeKernelRule(b)
		if err != nil {
			return
		}
		if r.Text == "" || r.Syscalls == nil || r.Fields == nil {
			t.Fatalf("rule %+v", r)
		}
	})
}

// On a live host the collector matches the files with the kernel's rules,
// and keeps the reason when the kernel cannot be asked.
func TestLiveCollectorComparesTheKernel(t *testing.T) {
	root := filepath.Join("testdata", "hardened")
	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	for _, c := range []struct {
		kernel   func(context.Context) ([]facts.AuditRule, error)
		unloaded int
		errText  string
	}{
		{func(context.Context) ([]facts.AuditRule, error) { return []facts.AuditRule{}, nil }, 12, ""},
		{func(context.Context) ([]facts.AuditRule, error) { return nil, errors.New("permission denied") }, 0, "permission denied"},
	} {
		a, err := (Collector{Kernel: c.kernel}).Collect(context.Background(), &collect.Env{FS: fsys, Live: true})
		if err != nil {
			t.Fatal(err)
		}
		k := a.Kernel
		if k == nil || len(k.Unloaded) != c.unloaded || k.Error != c.errText {
			t.Errorf("kernel: %d unloaded, error %q; want %d and %q", len(k.Unloaded), k.Error, c.unloaded, c.errText)
		}
	}
}
