package fleetrollouts

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/imagesig"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

func Test_verifyAgain(t *testing.T) {
	t.Parallel()
	failed := &policy.Verdict{Blocks: []policy.Block{{Policy: "p", Rule: "signed", Reason: "image x is not signed as required"}}}
	waiting := &policy.Verdict{Blocks: []policy.Block{{Policy: "p", Rule: "signed", Reason: "could not verify x", Inconclusive: true}}}
	for _, tc := range []struct {
		name    string
		targets map[string]rollout.TargetObservation
		want    time.Duration
	}{
		{name: "nothing blocked", targets: map[string]rollout.TargetObservation{"a": {}}},
		{name: "a final block", targets: map[string]rollout.TargetObservation{"a": {Blocked: failed}}},
		{name: "an image not verified yet", targets: map[string]rollout.TargetObservation{"a": {Blocked: failed}, "b": {Blocked: waiting}},
			want: imagesig.RetryInconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obs := &rollout.Observed{Observation: rollout.Observation{Targets: tc.targets}}
			require.Equal(t, tc.want, verifyAgain(obs))
		})
	}
}
