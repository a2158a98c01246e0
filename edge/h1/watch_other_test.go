//go:build !linux

package h1

// pollerIdle: there is no poller here (watches use goroutines).
func pollerIdle(*poller) bool { return true }
