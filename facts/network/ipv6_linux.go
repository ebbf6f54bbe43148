package network

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"golang.org/x/sys/unix"
)

// ipv6StateIn reads the IPv6 state from inside the network namespace file
// netns, on a thread of its own that enters it for the read.
func ipv6StateIn(netns string) *facts.IPv6State {
	ns, err := os.Open(netns)
	if err != nil {
		return unknownIPv6(fmt.Errorf("opening the network namespace: %w", err))
	}
	defer ns.Close()
	done := make(chan *facts.IPv6State, 1)
	go func() {
		// A thread that cannot return to its own namespace stays locked,
		// so the runtime ends it with this goroutine instead of running
		// other code in the wrong namespace.
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- unknownIPv6(err)
			return
		}
		defer own.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- unknownIPv6(fmt.Errorf("entering the network namespace: %w", err))
			return
		}
		st := readIPv6State(threadIPv6Source{})
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- st
			return
		}
		runtime.UnlockOSThread()
		done <- st
	}()
	return <-done
}

// threadIPv6Source reads the kernel's files as the calling thread's
// namespace shows them: /proc/net follows the process's first thread, so
// it is read through /proc/thread-self/net.
type threadIPv6Source struct{}

func (threadIPv6Source) read(name string, limit int64) ([]byte, bool, error) {
	if rest, ok := strings.CutPrefix(name, "/proc/net/"); ok {
		name = "/proc/thread-self/net/" + rest
	}
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return nil, false, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, true, nil
}

func (threadIPv6Source) names(dir string, limit int) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(limit)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}
