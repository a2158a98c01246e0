package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "512MiB": 512 << 20, "1GiB": 1 << 30, "64KiB": 64 << 10, "100B": 100} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "MiB", "-5MiB", "0", "1.5GiB", "12XB", "99999999999TiB"} {
		_, err := parseBytes(in)
		require.Error(t, err, in)
	}
}
