package h1

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Holders that leave while the sweeper takes slots from those past their
// hold: every slot comes back exactly once and the holders' list ends
// empty (make test runs edge under -race).
func TestGateSweeperAndLeavesRace(t *testing.T) {
	s := &Server{gate: newGate(4, 200*time.Microsecond)}
	g := s.gate
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for j := range 100 {
				x := &serverConn{s: s}
				x.enterGate()
				if (i+j)%3 == 0 {
					time.Sleep(time.Duration(j%4) * 100 * time.Microsecond)
				}
				x.leaveGate()
				x.leaveGate() // a second leave is nothing
			}
		})
	}
	wg.Wait()
	require.Empty(t, g.slots, "slots still taken")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Nil(t, g.head)
	require.Nil(t, g.tail)
	require.Zero(t, g.waiting)
}
