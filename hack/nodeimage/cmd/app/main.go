// Command app is the node image's test workload, named machineapi.local/app:v1 there: an HTTP
// server on :8080 that answers every request with 200 and its hostname (the pod's name), so a test
// sees which pod served it. On SIGTERM it logs, keeps serving for about two seconds (the time a
// drain test needs to see a terminating pod) and exits 0.
//
// It is built static (CGO_ENABLED=0) and shipped FROM scratch by cmd/mkimage.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// shutdownDelay is how long the server goes on answering after SIGTERM, like a real service
// finishing its requests.
const shutdownDelay = 2 * time.Second

func main() {
	hostname, err := os.Hostname()
	if err != nil {
		hostname = "unknown"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, hostname)
	})
	server := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- server.ListenAndServe() }()
	log.Printf("app: serving on :8080 as %s", hostname)

	select {
	case err := <-served:
		log.Fatalf("app: %v", err)
	case sig := <-stop:
		log.Printf("app: %s, stopping in %s", sig, shutdownDelay)
	}
	// Go on serving for shutdownDelay: the point of the delay is a pod that takes a while to stop.
	select {
	case <-time.After(shutdownDelay):
	case err := <-served:
		log.Fatalf("app: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("app: shutdown: %v", err)
	}
	log.Print("app: stopped")
}
