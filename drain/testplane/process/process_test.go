package process

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// start runs a shell script as a process logging to a file in a test folder, stopped at the end.
func start(t *testing.T, script string) *Process {
	t.Helper()
	p, err := Start("script", "/bin/sh", []string{"-c", script}, filepath.Join(t.TempDir(), "script.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second) })
	return p
}

// TestWaitHTTPReady: a process whose endpoint answers 200 is ready.
func TestWaitHTTPReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	p := start(t, "exec sleep 60")
	if err := WaitHTTP(context.Background(), p, srv.URL, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestWaitHTTPExited: a process that exits before its endpoint answers ends the wait at once,
// with the end of its log in the error, which is what a person needs to see why.
func TestWaitHTTPExited(t *testing.T) {
	port, err := FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, "echo starting; echo 'unknown flag: --bogus' >&2; exit 3")
	err = WaitHTTP(context.Background(), p, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", nil, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "script exited before it was ready (exit status 3)") || !strings.Contains(err.Error(), "    unknown flag: --bogus") {
		t.Fatalf("got %v, want the exit status and the last lines of the log", err)
	}
}

// TestStopKillsWhatIgnoresSIGTERM: Stop sends SIGKILL to the whole group after the grace period
// and returns once the process has exited.
func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	p := start(t, "trap '' TERM; sleep 60 & wait")
	p.Stop(100 * time.Millisecond)
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if p.Err() == nil {
		t.Error("a killed process has an exit error")
	}
}

// TestTail: the last n lines, indented, long ones cut.
func TestTail(t *testing.T) {
	p := start(t, "for i in 1 2 3 4; do echo line $i; done; printf '%0400d\\n' 0")
	<-p.Done()
	got := strings.Split(Tail(p.LogFile, 2), "\n")
	if len(got) != 2 || got[0] != "    line 4" || got[1] != "    "+strings.Repeat("0", 300)+"..." {
		t.Errorf("got %q", got)
	}
	if Tail(filepath.Join(t.TempDir(), "none.log"), 2) != "" {
		t.Error("the tail of a missing file is empty")
	}
}
