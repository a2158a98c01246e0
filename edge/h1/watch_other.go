//go:build !linux

package h1

// poller is Linux's (watch_linux.go); elsewhere watched requests have a
// goroutine each.
type poller struct{}

type pollReg struct{}

func (*pollReg) isRegistered() bool { return false }

func thePoller() *poller { return nil }

func (*poller) add(*serverConn) bool     { return false }
func (*poller) rearm(*serverConn)        {}
func (*poller) forget(*serverConn, bool) {}
