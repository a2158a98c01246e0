package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func TestDeploymentStateColumn(t *testing.T) {
	until := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	for _, c := range []struct {
		st   *adminv1.DeploymentState
		want string
	}{
		{nil, "-"},
		{&adminv1.DeploymentState{Health: "healthy"}, "healthy"},
		{&adminv1.DeploymentState{Health: "healthy", Latency: durationpb.New(81234 * time.Microsecond)}, "healthy, ttfb 81ms"},
		{
			&adminv1.DeploymentState{Health: "cooling_down", CooldownUntil: timestamppb.New(until), ErrorRate: 0.42},
			"cooling down until " + until.Local().Format(time.TimeOnly) + ", 42% errors",
		},
	} {
		require.Equal(t, c.want, deploymentState(&adminv1.Deployment{State: c.st}))
	}
}
