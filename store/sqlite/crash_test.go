package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// crashChildEnv makes the test binary the child of TestCrashLosesAtMostOneWindow:
// its value is the database path.
const crashChildEnv = "TOLLGATE_SQLITE_CRASH_CHILD"

// crashEntry is the i-th entry the child appends.
func crashEntry(i int64) store.LedgerEntry {
	end := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	return store.LedgerEntry{
		RequestID: fmt.Sprintf("c-%09d", i), KeyID: fmt.Sprint("k", i%7), TeamID: fmt.Sprint("t", i%3),
		Model: "m", Deployment: "d", Usage: kernel.Usage{Input: 100 + i%50, Output: 10 + i%20},
		Cost: kernel.Money(1000 + i%997), HTTPStatus: 200, StartedAt: end.Add(-time.Second), EndedAt: end,
	}
}

// crashChild appends entries from one goroutine at up to 20,000/s (less when
// the writer falls behind), printing
// "ack N T" (entries 0…N-1 appended, at Unix-nano time T) every millisecond,
// and from another calls Flush every 20ms, printing "flushed N L" (entries
// 0…N-1 durable, the Flush took L ns). It runs until killed.
func crashChild(path string) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := make(chan string, 4096)
	go func() {
		w := bufio.NewWriter(os.Stdout)
		for line := range out {
			w.WriteString(line) //nolint:errcheck // a dead parent ends us anyway
			if len(out) == 0 {
				w.Flush() //nolint:errcheck
			}
		}
	}()
	var acked atomic.Int64
	go func() {
		for {
			time.Sleep(20 * time.Millisecond)
			n := acked.Load()
			start := time.Now()
			if err := st.Flush(ctx); err != nil {
				out <- fmt.Sprintln("error", err)
				continue
			}
			out <- fmt.Sprintln("flushed", n, time.Since(start).Nanoseconds())
		}
	}()
	tick := time.NewTicker(time.Millisecond)
	var i int64
	for range tick.C {
		if st.LedgerStats().QueueDepth > 2048 {
			continue // the writer is behind (race detector, loaded machine): wait, as backpressure would
		}
		for range 20 {
			if err := st.Append(ctx, crashEntry(i)); err != nil {
				out <- fmt.Sprintln("error", err)
				continue
			}
			i++
		}
		acked.Store(i)
		out <- fmt.Sprintln("ack", i, time.Now().UnixNano())
	}
}

type ack struct {
	n  int64
	at time.Time
}

func TestCrashLosesAtMostOneWindow(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLosesAtMostOneWindow$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	exited := false
	t.Cleanup(func() { // never leave the child running, whatever failed
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	var (
		acks        []ack
		lastFlushed int64
		maxFlush    time.Duration
		flushes     int
	)
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	parse := func(line string) {
		f := strings.Fields(line)
		require.NotEqual(t, "error", f[0], "child: %s", line)
		if len(f) != 3 {
			return // a line cut by the kill
		}
		a, err1 := strconv.ParseInt(f[1], 10, 64)
		b, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return
		}
		switch f[0] {
		case "ack":
			acks = append(acks, ack{a, time.Unix(0, b)})
		case "flushed":
			lastFlushed = max(lastFlushed, a)
			maxFlush = max(maxFlush, time.Duration(b))
			flushes++
		}
	}
	// Let it run under load for a while (at least a few flushes), then kill it
	// without warning.
	deadline := time.After(60 * time.Second)
	runFor := time.After(1500 * time.Millisecond)
	ran := false
	for !ran || flushes < 3 {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "child exited early")
			parse(line)
		case <-runFor:
			ran = true
		case <-deadline:
			t.Fatal("child made no progress")
		}
	}
	killedAt := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	for line := range lines {
		parse(line)
	}
	require.Error(t, cmd.Wait())
	exited = true
	require.NotEmpty(t, acks)
	lastAck := acks[len(acks)-1].n

	// What the file holds after the crash.
	st := openAt(t, path)
	defer func() { require.NoError(t, st.Close(context.Background())) }()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	require.NoError(t, err)
	defer db.Close()
	var count, maxID int64
	var maxReq string
	require.NoError(t, db.QueryRow(`SELECT COUNT(*), COALESCE(MAX(request_id), '') FROM ledger`).Scan(&count, &maxReq))
	if count > 0 {
		maxID, err = strconv.ParseInt(strings.TrimPrefix(maxReq, "c-"), 10, 64)
		require.NoError(t, err)
		require.Equal(t, count, maxID+1, "the durable entries are a prefix of what was appended (batches commit in order)")
	}

	require.GreaterOrEqual(t, count, lastFlushed, "an entry Flush confirmed was lost")

	// The totals were written in the same transactions as the rows: exact.
	var want kernel.Money
	for i := range count {
		want += crashEntry(i).Cost
	}
	spent, err := st.ScopeSpend(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeGlobal}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, want, spent)

	// The loss: entries acknowledged to the appender but not in the file, and
	// how long before the kill the first of them was appended.
	lost := max(lastAck-count, 0)
	span := time.Duration(0)
	for _, a := range acks {
		if a.n > count {
			span = killedAt.Sub(a.at)
			break
		}
	}
	t.Logf("crash: appended (acknowledged) %d, durable %d, last Flush-confirmed %d; lost %d entries = the last %s of appends; slowest Flush %s",
		lastAck, count, lastFlushed, lost, span.Round(time.Millisecond), maxFlush.Round(time.Millisecond))
	// At most one group-commit window is lost: what was appended during the
	// last window plus the commit in flight. A Flush waits for exactly that, so
	// the slowest Flush seen bounds it (with slack for the kill itself).
	require.LessOrEqual(t, span, 2*maxFlush+100*time.Millisecond,
		"lost more than one commit window: %d entries over %s", lost, span)
}
