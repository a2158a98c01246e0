package cache

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

var canonSeeds = []string{
	`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}]}`,
	`{ "b" : [1, 2.50, -0, 1e3, {"y":null,"x":true}], "a":"\u00e9\"\\\n<>&" , "c":{}, "d":[]}`,
	`{"stream":true,"stream_options":{"include_usage":true},"user":"u","temperature":0.0}`,
	`{"seed":9007199254740993,"n":1}`,
	`{"z":{"b":1,"a":{"d":2,"c":3}},"y":"\ud83d\ude00"}`,
}

// The canonical form decodes to the body's value (ignored fields left
// out), is canonical itself (idempotent), and does not depend on key order
// or spacing.
func FuzzCanonicalBody(f *testing.F) {
	for _, s := range canonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		canon, _, err := canonicalBody(APIChat, body)
		m, perr := parseBody(body)
		if err != nil {
			return // refused: a body the cache does not read (never a panic)
		}
		require.NoError(t, perr, "accepted a body encoding/json refuses: %q", body)
		for _, k := range ignoredFields[APIChat] {
			delete(m, k)
		}
		var got, want any
		require.NoError(t, json.Unmarshal(canon, &got), "%s", canon)
		require.NoError(t, json.Unmarshal(canonical(m), &want))
		require.Equal(t, want, got)
		again, _, err := canonicalBody(APIChat, canon)
		require.NoError(t, err)
		require.Equal(t, string(canon), string(again))
	})
}

func TestCanonicalBody(t *testing.T) {
	canon, facts, err := canonicalBody(APIChat, []byte(canonSeeds[1]))
	require.NoError(t, err)
	require.Equal(t, `{"a":"é\"\\\u000a<>&","b":[1,2.5,0,1000,{"x":true,"y":null}],"c":{},"d":[]}`, string(canon))
	require.Nil(t, facts.temperature)
	canon, facts, err = canonicalBody(APIChat, []byte(canonSeeds[2]))
	require.NoError(t, err)
	require.Equal(t, `{"temperature":0}`, string(canon))
	require.True(t, facts.includeUsage)
	require.Equal(t, "0", string(facts.temperature))
	for _, bad := range []string{`{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"a":"x`, `{"a":01x}`, `{"a":[1 2]}`, "{\"a\":\"\x01\"}", `{"a":tru}`} {
		_, _, err := canonicalBody(APIChat, []byte(bad))
		require.ErrorIs(t, err, ErrBadBody, bad)
	}
}

// The key hashed from the canonicalizer's buffers (the miss path) is
// exactKey's digest of the same parts, whatever the scope level; so
// entries stored before it (keyVersion tgc1) are still found.
func TestKeyIsTheDigest(t *testing.T) {
	tenants := []Tenant{{Org: "o", Team: "t", Key: "k"}, {Org: "o", Key: "k"}, {}, {Org: "o/x", Team: "t:", Key: "k"}}
	for _, body := range canonSeeds {
		for _, tn := range tenants {
			for _, l := range []Level{LevelKey, LevelTeam, LevelOrg} {
				req := &Request{API: APIChat, Model: "m", Body: []byte(body), Tenant: tn, Vary: "beta"}
				c, err := canonicalize(req.API, req.Body)
				require.NoError(t, err)
				got := c.key(req, tn, l)
				want := exactKey(req, scopeID(tn, l), c.out)
				c.release()
				require.Equal(t, want, got, "%s %+v %v", body, tn, l)
			}
		}
	}
}
