// Command gpuhost scans GPU host images and hosts against policy.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// signalGrace is how long a command may take to wind down after SIGINT or
// SIGTERM. Work that honours the context ends well within it; a read that
// nothing can interrupt (a library walking a huge directory) does not hold
// the process past it. Reports are written to a temporary file and renamed,
// and the agent's history is SQLite, so ending here loses nothing written.
const signalGrace = time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		time.Sleep(signalGrace)
		fmt.Fprintln(os.Stderr, "gpuhost: interrupted; the command did not finish, so it proves nothing")
		os.Exit(2)
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
