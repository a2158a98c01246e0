package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An upstream request whose abort fired before it started returns the
// cancellation's cause and leaves the pooled connection untouched; one
// aborted while its body is read costs its connection.
func TestH1ClientAbort(t *testing.T) {
	u := startRaw(t, reply(strings.Repeat("x", 10000), 100))
	c := u.client(0)
	defer c.CloseIdleConnections()
	post := func(ctx context.Context, ab *Abort) (*http.Response, error) {
		return h1PostAbort(t, ctx, c, "a", ab)
	}
	resp, err := post(context.Background(), new(Abort))
	require.NoError(t, err)
	require.Len(t, readAll(t, resp), 10000)

	cause := errors.New("the route's timeout")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	fired := new(Abort)
	fired.Fire()
	_, err = post(ctx, fired)
	require.ErrorIs(t, err, cause)
	resp, err = post(context.Background(), new(Abort))
	require.NoError(t, err)
	require.Len(t, readAll(t, resp), 10000)
	require.EqualValues(t, 1, u.conns.Load(), "the aborted request did not use the pooled connection")

	ab := new(Abort)
	resp, err = post(context.Background(), ab)
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 10))
	require.NoError(t, err)
	ab.Fire()
	_, err = io.ReadAll(resp.Body) // what was buffered, then the deadline
	require.Error(t, err)
	require.NoError(t, resp.Body.Close())
	resp, err = post(context.Background(), new(Abort))
	require.NoError(t, err)
	require.Len(t, readAll(t, resp), 10000)
	require.EqualValues(t, 2, u.conns.Load(), "the connection cut off was reused")
}
