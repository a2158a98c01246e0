package accounting_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/store/postgres"
)

// spillChildEnv makes the test binary a replica for TestCrashDuringPostgresOutage.
const spillChildEnv = "TOLLGATE_TEST_SPILL_CHILD"

var spillKey = kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-spill"}

// TestCrashDuringPostgresOutage: a replica settles requests while PostgreSQL
// is down, then is killed with SIGKILL. After PostgreSQL is back, the next
// process replays the spill and the ledger holds every settled request.
func TestCrashDuringPostgresOutage(t *testing.T) {
	pg := testenv.StartPostgres(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), spillChildEnv+"="+dir+" "+pg.URL)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	ask := func(cmd string) string {
		t.Helper()
		_, err := io.WriteString(stdin, cmd+"\n")
		require.NoError(t, err)
		for lines.Scan() {
			if l, ok := strings.CutPrefix(lines.Text(), "child: "); ok {
				return l
			}
		}
		t.Fatalf("child ended: %v", lines.Err())
		return ""
	}

	require.Equal(t, "settled 10", ask("settle 10"))
	pg.Stop(t)
	require.Equal(t, "settled 90", ask("settle 90"))
	pending := ask("pending")
	t.Logf("PostgreSQL down, before kill -9: %s", pending)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	pg.Start(t)

	ctx := t.Context()
	st, err := postgres.Open(ctx, pg.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	sp, replayed, err := accounting.OpenSpill(ctx, dir, st)
	require.NoError(t, err)
	defer sp.Drop()
	rows, err := st.Entries(ctx, store.LedgerFilter{Scope: &spillKey, Limit: 1000})
	require.NoError(t, err)
	t.Logf("after restart: %d entries replayed from the spill, %d in the ledger (100 settled)", replayed, len(rows))
	require.Len(t, rows, 100, "every settled request is in the ledger")
	var spent kernel.Money
	for _, e := range rows {
		spent += e.Cost
	}
	require.Equal(t, kernel.Money(100*1000), spent)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 1, "only the new process's own file remains")
}

// TestSpillChild is the replica of TestCrashDuringPostgresOutage (it does
// nothing unless started by it): it settles what stdin asks, through an
// accountant writing ahead to a spill.
func TestSpillChild(t *testing.T) {
	arg := os.Getenv(spillChildEnv)
	if arg == "" {
		return // a plain run: only the parent test starts this one
	}
	dir, url, _ := strings.Cut(arg, " ")
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, postgres.WithRetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	sp, _, err := accounting.OpenSpill(ctx, dir, st)
	require.NoError(t, err)
	a := accounting.NewLocalAccountant(st, st, time.Now, slog.New(slog.DiscardHandler), accounting.WithSpill(sp))
	lim := &kernel.Limits{}
	price := kernel.Price{Input: 1_000_000} // 1,000 n$ for 1,000 input tokens
	seq := 0
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		verb, arg, _ := strings.Cut(in.Text(), " ")
		switch verb {
		case "settle":
			n, _ := strconv.Atoi(arg)
			for range n {
				seq++
				id := fmt.Sprintf("sp%04d", seq)
				d, err := a.Admit(ctx, &kernel.AdmitRequest{
					ID: id, Scopes: []kernel.Scope{{Ref: spillKey, Limits: lim}}, Model: "m", PromptBytes: 4000, Price: price,
				})
				require.NoError(t, err)
				require.True(t, d.Admitted)
				_, err = a.Settle(ctx, store.LedgerEntry{
					RequestID: id, KeyID: spillKey.ID, Model: "m", Usage: kernel.Usage{Input: 1000},
					Status: kernel.StatusCompleted, HTTPStatus: 200, StartedAt: time.Now(),
				})
				require.NoError(t, err)
			}
			fmt.Printf("child: settled %d\n", n)
		case "pending":
			fmt.Printf("child: pending %d\n", a.Pending())
		}
	}
}

// TestSpillUnderConcurrentSettlements: settlements from many goroutines while
// checkpoints rotate the spill: every entry reaches the ledger, and once the
// ledger confirmed them the spill holds only its current, empty file.
func TestSpillUnderConcurrentSettlements(t *testing.T) {
	st := memstore.New()
	dir := t.TempDir()
	sp, _, err := accounting.OpenSpill(t.Context(), dir, st)
	require.NoError(t, err)
	defer sp.Drop()
	a := accounting.NewLocalAccountant(st, st, time.Now, slog.New(slog.DiscardHandler), accounting.WithSpill(sp))
	ctx, cancel := context.WithCancel(t.Context())
	loop := make(chan struct{})
	go func() { defer close(loop); a.ExpireLoop(ctx, time.Hour) }()
	defer func() { cancel(); <-loop }()

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("c%d-%d", g, i)
				d, err := a.Admit(ctx, &kernel.AdmitRequest{ID: id, Scopes: []kernel.Scope{{Ref: spillKey, Limits: &kernel.Limits{}}}, Model: "m"})
				if !assert.NoError(t, err) || !assert.True(t, d.Admitted) {
					return
				}
				_, err = a.Settle(ctx, store.LedgerEntry{RequestID: id, KeyID: spillKey.ID, Model: "m", Status: kernel.StatusCompleted})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return a.Pending() == 0 }, 10*time.Second, 20*time.Millisecond)
	rows, err := st.Entries(t.Context(), store.LedgerFilter{Scope: &spillKey, Limit: 5000})
	require.NoError(t, err)
	require.Len(t, rows, 1600)
	require.Len(t, sp.Files(), 1, "the checkpoint deleted the files the ledger confirmed")
}
