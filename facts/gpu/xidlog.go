package gpu

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// JournalSource is the source recorded for XID events read from the journal.
const JournalSource = "journal"

// Limits on the journal.
const (
	// maxJournalBytes bounds journalctl's output. It writes newest first, so
	// what is cut off is the oldest part of the window.
	maxJournalBytes = 64 << 20
	// journalTimeout bounds one journalctl run.
	journalTimeout = 20 * time.Second
	// maxJournalStderr is how much of journalctl's complaint is kept.
	maxJournalStderr = 4 << 10
)

// JournalReader returns the kernel's journal lines from since on (all of
// them when since is zero), newest first, in journalctl's short-iso format,
// at most limit bytes of them; truncated says that more were there. root is
// the scanned tree's root. It is only called on a live host whose text logs
// are missing.
type JournalReader func(ctx context.Context, root string, since time.Time, limit int64) (data []byte, truncated bool, err error)

// WithJournal replaces journalctl as the reader of the journal; nil turns
// the journal off.
func WithJournal(r JournalReader) Option { return func(c *NVML) { c.journal = r } }

// logFile is one kernel log file and the events read from it.
type logFile struct {
	name   string
	events []facts.XIDEvent
}

// readXIDs fills the XID events from the text logs and their rotations, or,
// when the host keeps none, from the journal; the newest maxXIDEvents are
// kept, oldest first.
func (c *NVML) readXIDs(ctx context.Context, env *collect.Env, g *facts.GPU) {
	now := c.now()
	files, problems := c.readLogFiles(env, now)
	add := xidAdder(g)
	read := addLogEvents(env, files, add)

	if len(files) == 0 {
		if evs, note, err := c.readJournal(ctx, env, now); err != nil {
			problems = append(problems, err.Error())
		} else {
			read = append(read, JournalSource+note)
			for _, ev := range evs {
				add(ev)
			}
		}
	}

	if len(g.XIDEvents) > maxXIDEvents {
		g.XIDEvents = g.XIDEvents[len(g.XIDEvents)-maxXIDEvents:]
	}
	g.XIDSource = strings.Join(read, ", ")
	switch {
	case len(read) == 0:
		g.XIDError = "no kernel log file (" + strings.Join(xidLogs, ", ") + " or their rotations)"
		if len(problems) > 0 {
			g.XIDError += "; " + strings.Join(problems, "; ")
		}
	case len(problems) > 0:
		// What was read stands; the trouble with the rest is worth saying
		// but does not hide it.
		g.XIDSource += " (" + strings.Join(problems, "; ") + ")"
	}
}

// readLogFiles reads the text logs and their rotations within a budget
// shared by all of them, newest first so that the budget goes to the
// newest text. A file that cannot be read, or is left unread for the
// budget, is a problem to report, not a reason to stop.
func (c *NVML) readLogFiles(env *collect.Env, now time.Time) ([]logFile, []string) {
	var files []logFile
	var problems []string
	budget := int64(maxLogTotal)
	for _, base := range xidLogs {
		for _, name := range rotations(env.FS, base) {
			if rotated := name != base; rotated && c.window > 0 && olderThan(env.FS, name, now.Add(-c.window)) {
				// Written to last before the window opened: every line in
				// it is older still.
				continue
			}
			if budget <= 0 {
				problems = append(problems, fmt.Sprintf("%s not read: %d MiB of logs were read already", env.FS.Display(name), maxLogTotal>>20))
				continue
			}
			data, err := readLog(env.FS, name, min(maxLogBytes, budget))
			switch {
			case sysroot.IsNotExist(err):
				continue
			case err != nil:
				problems = append(problems, err.Error())
				continue
			}
			budget -= int64(len(data))
			evs := ParseXIDLog(data, now, c.window)
			for i := range evs {
				evs[i].Source = env.FS.Display(name)
			}
			files = append(files, logFile{name: env.FS.Display(name), events: evs})
		}
	}
	return files, problems
}

// xidAdder appends events to g once each: kern.log and syslog carry the
// same lines, and one XID must not count as two. The first source wins.
func xidAdder(g *facts.GPU) func(facts.XIDEvent) {
	type line struct {
		code               int
		pci, time, message string
	}
	seen := map[line]bool{}
	return func(ev facts.XIDEvent) {
		key := line{ev.Code, ev.PCIBusID, ev.Time, ev.Message}
		if !seen[key] {
			seen[key] = true
			g.XIDEvents = append(g.XIDEvents, ev)
		}
	}
}

// addLogEvents adds the files' events oldest first, each log's oldest
// rotation first and kern.log before syslog, so the events run oldest
// first and keeping the newest is a matter of keeping the tail. It returns the names of
// the files read, for the facts to say where the events came from.
func addLogEvents(env *collect.Env, files []logFile, add func(facts.XIDEvent)) []string {
	var read []string
	for i := range files {
		read = append(read, files[i].name)
	}
	for _, base := range xidLogs {
		display := env.FS.Display(base)
		for i := len(files) - 1; i >= 0; i-- {
			if files[i].name == display || strings.HasPrefix(files[i].name, display+".") {
				for _, ev := range files[i].events {
					add(ev)
				}
			}
		}
	}
	return read
}

// rotations lists base and its rotated files that exist, newest first:
// kern.log, kern.log.1 (or .1.gz), kern.log.2.gz, ... up to maxRotations.
func rotations(fsys sysroot.FS, base string) []string {
	out := []string{base}
	for n := 1; n <= maxRotations; n++ {
		for _, name := range []string{base + "." + strconv.Itoa(n), base + "." + strconv.Itoa(n) + ".gz"} {
			if _, err := fsys.Lstat(name); err == nil {
				out = append(out, name)
			}
		}
	}
	return out
}

// olderThan says whether name was last written before t. A file that cannot
// be looked at is not old: reading it will say what is wrong.
func olderThan(fsys sysroot.FS, name string, t time.Time) bool {
	info, err := fsys.Stat(name)
	return err == nil && info.ModTime().Before(t)
}

// readLog reads a log file, gunzipping a .gz one; neither the file nor its
// decompressed text may exceed limit bytes.
func readLog(fsys sysroot.FS, name string, limit int64) ([]byte, error) {
	data, err := fsys.ReadFileLimit(name, limit)
	if errors.Is(err, sysroot.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d MiB; not read", fsys.Display(name), limit>>20)
	}
	if err != nil || !strings.HasSuffix(name, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(name), err)
	}
	text, err := sysroot.ReadAllLimit(zr, limit, fsys.Display(name))
	if errors.Is(err, sysroot.ErrTooLarge) {
		return nil, fmt.Errorf("%s decompresses to more than %d MiB; not read", fsys.Display(name), limit>>20)
	}
	return text, err
}

// readJournal reads the XID events in the journal, oldest first. note says
// when the output was cut short.
func (c *NVML) readJournal(ctx context.Context, env *collect.Env, now time.Time) ([]facts.XIDEvent, string, error) {
	if c.journal == nil {
		return nil, "", errors.New("the journal is not read")
	}
	since := time.Time{}
	if c.window > 0 {
		since = now.Add(-c.window)
	}
	data, truncated, err := c.journal(ctx, env.FS.Root(), since, maxJournalBytes)
	if err != nil {
		return nil, "", fmt.Errorf("reading the journal: %w", err)
	}
	// journalctl wrote newest first.
	evs := parseXIDLog(data, now, c.window, true)
	slices.Reverse(evs)
	for i := range evs {
		evs[i].Source = JournalSource
	}
	note := ""
	if truncated {
		note = fmt.Sprintf(" (the newest %d MiB of the window)", maxJournalBytes>>20)
	}
	return evs, note, nil
}

// runJournalctl is the JournalReader of a live host.
func runJournalctl(ctx context.Context, root string, since time.Time, limit int64) ([]byte, bool, error) {
	if root != "/" {
		// journalctl reads this machine's journal, which is not the one
		// under another root; and journal files are binary, which this
		// scanner does not parse.
		return nil, false, fmt.Errorf("the journal is read only when scanning / itself, not %s (journal files are binary and not parsed)", root)
	}
	path, err := exec.LookPath("journalctl")
	if err != nil {
		return nil, false, fmt.Errorf("journalctl not found: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, journalTimeout)
	defer cancel()
	// _TRANSPORT=kernel rather than -k: -k means this boot only, and the Xid
	// that matters most is the one before the reboot it caused.
	args := []string{"_TRANSPORT=kernel", "--reverse", "--utc", "-o", "short-iso", "--no-pager", "-q"}
	if !since.IsZero() {
		args = append(args, "--since=@"+strconv.FormatInt(since.Unix(), 10))
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"LC_ALL=C", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}
	// Pipes left open by a child of journalctl must not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	stderr := &cappedBuffer{max: maxJournalStderr}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("running journalctl: %w", err)
	}
	data, readErr := io.ReadAll(io.LimitReader(out, limit+1))
	truncated := int64(len(data)) > limit
	if truncated {
		// Enough: stop journalctl rather than drain it.
		cancel()
		data = data[:limit]
	}
	waitErr := cmd.Wait()
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	switch {
	case truncated:
	case timedOut && len(data) > 0:
		// What came before the deadline is the newest part: keep it.
		truncated = true
	case timedOut:
		return nil, false, fmt.Errorf("journalctl gave nothing within %s", journalTimeout)
	case readErr != nil:
		return nil, false, fmt.Errorf("reading journalctl's output: %w", readErr)
	case waitErr != nil:
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return nil, false, fmt.Errorf("journalctl: %w: %s", waitErr, strings.ToValidUTF8(msg, "?"))
	}
	if truncated {
		// A line cut in half is not a line.
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		}
	}
	return data, truncated, nil
}

// cappedBuffer keeps the first max bytes written to it and drops the rest,
// so a chatty child cannot grow it without bound.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string { return b.buf.String() }

// attributeXIDs names, for each event, the GPUs NVML lists at its PCI
// address. Here, in Go, rather than in the policy: matching every event
// against every GPU was most of the Xid check's cost per host, and a policy
// that reads no GPU list is answered from the memo for every host that
// logged nothing.
func attributeXIDs(g *facts.GPU) {
	at := map[[3]uint64][]facts.XIDGPU{}
	for _, d := range g.Devices {
		if key, ok := pciAddress(d.PCIBusID); ok {
			at[key] = append(at[key], facts.XIDGPU{Index: d.Index, UUID: d.UUID})
		}
	}
	for i := range g.XIDEvents {
		if key, ok := pciAddress(g.XIDEvents[i].PCIBusID); ok {
			g.XIDEvents[i].GPUs = at[key]
		}
	}
}

// pciAddress reads a PCI address as domain, bus and device numbers: the
// kernel log writes 0000:07:00, NVML 00000000:07:00.0, in either case.
func pciAddress(id string) ([3]uint64, bool) {
	var key [3]uint64
	id, _, _ = strings.Cut(id, ".")
	parts := strings.Split(id, ":")
	if len(parts) != 3 {
		return key, false
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return key, false
		}
		key[i] = n
	}
	return key, true
}
