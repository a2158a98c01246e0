package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/store"
)

// openSpill opens the ledger's write-ahead spill named by --ledger-spill-dir
// and replays what crashed processes left in it; nil when off.
func openSpill(ctx context.Context, dir, db string, st store.Store, log *slog.Logger) (*accounting.Spill, error) {
	switch dir {
	case "off", "":
		return nil, nil
	case "auto":
		if !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
			return nil, nil
		}
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		// One directory per database: a spill is replayed only into the
		// ledger it was written for.
		sum := sha256.Sum256([]byte(db))
		dir = filepath.Join(base, "tollgate", "spill", hex.EncodeToString(sum[:8]))
	}
	sp, n, err := accounting.OpenSpill(ctx, dir, st)
	if err != nil {
		return nil, fmt.Errorf("--ledger-spill-dir: %w", err)
	}
	if n > 0 {
		log.Warn("replayed settlements a crashed process left in the ledger spill", "entries", n, "dir", dir)
	}
	return sp, nil
}

// closeSpill deletes this process's spill files once the ledger holds
// everything; otherwise it keeps them for the next start.
func closeSpill(ctx context.Context, sp *accounting.Spill, st store.Store, log *slog.Logger) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := st.Flush(fctx); err != nil {
		log.Error("ledger not flushed at shutdown; its spill is kept and replayed at the next start", "err", err)
		sp.Close()
		return
	}
	sp.Drop()
}
