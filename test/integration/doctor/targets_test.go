//go:build integration

package doctor_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// TestTargetsListsRealStageNames: `kargo-fleet targets` lists every target
// of a reconciled FleetStage under the name of the Stage the controller
// generated for it (hashed when long), with its wave, labels and params.
func TestTargetsListsRealStageNames(t *testing.T) {
	fs := newFleet(t, "shop-targets",
		fleetv1alpha1.InlineTarget{Name: "eu-1", Labels: map[string]string{"region": "eu"}, Params: map[string]string{"server": "https://eu-1.example"}},
		fleetv1alpha1.InlineTarget{Name: "us-1", Labels: map[string]string{"region": "us"}},
		fleetv1alpha1.InlineTarget{Name: longTarget, Labels: map[string]string{"region": "eu"}},
	)
	stages := targetStages(t, fs)
	require.Len(t, stages, 3)

	out, err := kargoFleet("targets", "prod", "-n", fs.Namespace, "-o", "json")
	require.NoError(t, err)
	var l report.TargetList
	require.NoError(t, json.Unmarshal([]byte(out), &l), out)
	require.Equal(t, fs.Namespace, l.Project)
	require.Len(t, l.Targets, 3)
	waves := map[string]int{}
	for _, tg := range l.Targets {
		require.Equal(t, stages[tg.ID], tg.Stage, "target %s is listed under its real Stage", tg.Name)
		require.Equal(t, fs.Namespace+":"+tg.Stage, tg.AuthorizedStage)
		waves[tg.Wave]++
		if tg.Name == longTarget {
			require.Len(t, tg.Stage, 63, "a long Stage name is shortened with a hash")
			require.NotEqual(t, "prod."+plan.TargetID(longTarget), tg.Stage)
		}
		if tg.Name == "eu-1" {
			require.Equal(t, map[string]string{"region": "eu"}, tg.Labels)
			require.Equal(t, map[string]string{"server": "https://eu-1.example"}, tg.Params)
		}
	}
	require.Equal(t, map[string]int{"pilot": 1, "rest": 2}, waves)

	out, err = kargoFleet("targets", "prod", "-n", fs.Namespace, "-l", "region=eu", "--wave", "rest", "-o", "wide")
	require.NoError(t, err)
	require.Contains(t, out, "STAGE")
	require.Contains(t, out, "region=eu")
	require.NotContains(t, out, "us-1")
}
