// Command pause is the node image's pod sandbox ("infra") container, named
// registry.k8s.io/pause:3.10 there: it holds a pod's namespaces open by doing nothing until it is
// told to stop (SIGTERM or SIGINT), and, as PID 1 of a pod that shares its process namespace, it
// reaps the zombies other containers leave behind.
//
// It is built static (CGO_ENABLED=0) and shipped FROM scratch by cmd/mkimage.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case sig := <-stop:
			fmt.Fprintf(os.Stderr, "pause: %s, exiting\n", sig)
			os.Exit(0)
		case <-children:
			reap()
		}
	}
}

// reap collects every child that has exited, so that none stays a zombie. Only PID 1 of a
// namespace inherits orphans; elsewhere there is nothing to collect and Wait4 says so at once.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
