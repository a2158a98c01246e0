//go:build linux

package h1

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// hangingAddr is a listening address whose connects hang: a socket listening
// with a backlog of 0 whose one queued connection is never accepted, so the
// kernel drops the SYNs that follow.
func hangingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "backlog-0")
	t.Cleanup(func() { _ = f.Close() })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	// Fill the queue; a connect that still completes is not hanging, so
	// keep going until one times out (bounded).
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	if testenv.CI() {
		t.Fatal("this kernel completes connects to a full accept queue: the test cannot make a dial hang")
	}
	t.Skip("this kernel completes connects to a full accept queue (fails under CI=true)")
	return ""
}

// A request whose context ends while its connection is being dialled
// returns with the context's cause at once, not at the connect deadline; the
// dial finishes alone.
func TestDialAbandonedWhenRequestEnds(t *testing.T) {
	addr := hangingAddr(t)
	c := NewClient(func() (net.Conn, error) {
		return (&net.Dialer{Timeout: time.Minute}).Dial("tcp", addr)
	}, 0)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("client went away")
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	start := time.Now()
	_, err := h1Post(t, ctx, c, "x")
	require.ErrorIs(t, err, cause)
	require.Less(t, time.Since(start), 30*time.Second)
}
