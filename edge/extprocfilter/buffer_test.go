package extprocfilter_test

import (
	"testing"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
)

// TestWholeBodyBorrowed: a BUFFERED body that arrives whole in one chunk is
// sent to the processor without a copy; what the filter releases is still
// its own, whether the processor left the body alone or replaced it, so the
// caller may reuse its chunk's buffer at once.
func TestWholeBodyBorrowed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace string // the processor's body mutation, "" for none
		want    string
	}{
		{"released unchanged", "", `{"model":"a"}`},
		{"replaced", `{"model":"b"}`, `{"model":"b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, connect func(srv extprocv3.ExternalProcessorServer) Transport) {
				fake := newFake(func(r *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
					if isRequestBody(r) && tc.replace != "" {
						return one(reply(r, &extprocv3.CommonResponse{BodyMutation: bodyMut(tc.replace)})), nil
					}
					return continuer(r)
				})
				s := NewClient(connect(fake), testConfig()).Start(testCtx(t))
				defer s.Release()
				_, err := s.RequestHeaders(postRequest(`{"model":"a"}`).Headers, false)
				require.NoError(t, err)
				chunk := []byte(`{"model":"a"}`)
				res, err := s.RequestBody(chunk, true)
				require.NoError(t, err)
				require.True(t, res.Continue)
				copy(chunk, "XXXXXXXXXXXXX") // the caller reads its next chunk into the same buffer
				require.Equal(t, tc.want, string(res.Body))
				require.Equal(t, `{"model":"a"}`, string(fake.received()[1].GetRequestBody().GetBody()))
			})
		})
	}
}
