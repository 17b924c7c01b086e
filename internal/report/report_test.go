package report

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// update rewrites the golden files: go test ./internal/report -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	goodFreight = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	badFreight  = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

func fleetStage() *fleetv1alpha1.FleetStage {
	return &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod"},
		Status: fleetv1alpha1.FleetStageStatus{
			Conditions: []metav1.Condition{{Type: fleetv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
				Reason: fleetv1alpha1.ReconciledReason}},
			Targets: fleetv1alpha1.TargetCounts{Candidates: 203, Selected: 200, Excluded: 3,
				ExcludedByReason: []fleetv1alpha1.ReasonCount{{Reason: "ExcludeLabel", Count: 3}}},
			WaveCount: 4,
			Waves: []fleetv1alpha1.WaveMembership{
				{Name: "pilot", Stage: "prod-pilot", Members: 2},
				{Name: "canary", Stage: "prod-canary", Members: 20},
				{Name: "general", Stage: "prod-general", Members: 158},
				{Name: "critical", Stage: "prod-critical", Members: 20},
			},
			Versions:        []fleetv1alpha1.FreightCount{{Freight: goodFreight, Targets: 186}, {Freight: badFreight, Targets: 14}},
			LastGoodFreight: &fleetv1alpha1.FreightReference{Name: goodFreight},
		},
	}
}

func forwardHalted() fleetv1alpha1.FleetRollout {
	return fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-9f8e7d6c5b", CreationTimestamp: *at(0)},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: badFreight},
			Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentRun},
		Status: fleetv1alpha1.FleetRolloutStatus{
			Phase:      fleetv1alpha1.RolloutHalted,
			Message:    `wave "canary" breached its failure threshold: 7 of 20 targets failed, at most 2 may fail`,
			StartedAt:  at(time.Second),
			FinishedAt: at(47 * time.Second),
			Waves: []fleetv1alpha1.WaveProgress{
				{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2},
				{Name: "canary", Phase: fleetv1alpha1.WaveHalted, Total: 20, Succeeded: 12, Failed: 7, InFlight: 1},
				{Name: "general", Phase: fleetv1alpha1.WavePending, Total: 158, Pending: 158},
				{Name: "critical", Phase: fleetv1alpha1.WavePending, Total: 20, Pending: 20},
			},
			Failures: []fleetv1alpha1.FailureGroup{{Reason: "PromotionFailed", Count: 7, Examples: []fleetv1alpha1.TargetSample{
				{Name: "eu-west-1-003", Reason: `Promotion prod.eu-west-1-003.01jd failed: simulated failure of step "sync" (argocd-update)`},
				{Name: "eu-west-1-011", Reason: `Promotion prod.eu-west-1-011.01jd failed: simulated failure of step "sync" (argocd-update)`},
				{Name: "eu-central-1-004", Reason: "Promotion failed"},
				{Name: "eu-central-1-009", Reason: "Promotion failed"},
			}}},
		},
	}
}

// unauthorized is a halted rollout whose failures Argo CD explains at the
// end of a long message.
func unauthorized() fleetv1alpha1.FleetRollout {
	ro := forwardHalted()
	ro.Status.Failures = []fleetv1alpha1.FailureGroup{{Reason: "PromotionErrored", Count: 7, Examples: []fleetv1alpha1.TargetSample{
		{Name: "c01", Reason: `step "sync" (argocd-update) errored: error updating Argo CD Application "c01" in namespace "argocd": ` +
			`Argo CD Application "c01" in namespace "argocd" is not authorized to be updated by Stage "prod-c01" in namespace "shop"`},
		{Name: "c02", Reason: `step "sync" (argocd-update) errored: Argo CD Application "c02" in namespace "argocd" is not authorized ` +
			`to be updated by Stage "prod-c02" in namespace "shop"`},
	}}}
	return ro
}

func rollbackRunning() fleetv1alpha1.FleetRollout {
	return fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-9f8e7d6c5b-rb", CreationTimestamp: *at(48 * time.Second)},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: goodFreight},
			Direction: fleetv1alpha1.DirectionRollback, RollbackOf: "prod-9f8e7d6c5b", Intent: fleetv1alpha1.IntentRun,
			Actor: "kargo-fleet"},
		Status: fleetv1alpha1.FleetRolloutStatus{
			Phase:     fleetv1alpha1.RolloutRollingBack,
			StartedAt: at(49 * time.Second),
			Waves: []fleetv1alpha1.WaveProgress{
				{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 12, Succeeded: 5, InFlight: 5, Pending: 2},
				{Name: "pilot", Phase: fleetv1alpha1.WavePending, Total: 2, Pending: 2},
			},
		},
	}
}

func forwardWaiting() fleetv1alpha1.FleetRollout {
	return fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-1a2b3c4d5e", CreationTimestamp: *at(0)},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: goodFreight},
			Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentPause, Actor: "kubernetes:alice"},
		Status: fleetv1alpha1.FleetRolloutStatus{
			Phase:     fleetv1alpha1.RolloutWaitingForApproval,
			StartedAt: at(2 * time.Second),
			Waves: []fleetv1alpha1.WaveProgress{
				{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2},
				{Name: "canary", Phase: fleetv1alpha1.WaveSucceeded, Total: 20, Succeeded: 20},
				{Name: "general", Phase: fleetv1alpha1.WaveProgressing, Total: 158, Succeeded: 97, InFlight: 40, Pending: 21},
				{Name: "critical", Phase: fleetv1alpha1.WaveWaitingForApproval, Total: 20, Pending: 20,
					Waiting: "kargo approve --project shop --freight 1a2b3c4 --stage prod-critical"},
			},
		},
	}
}

func TestRenderText(t *testing.T) {
	t.Parallel()
	aliases := map[string]string{goodFreight: "v1.4.0", badFreight: "v1.5.0"}
	notReady := fleetStage()
	notReady.Status.Conditions[0].Status = metav1.ConditionFalse
	notReady.Status.Conditions[0].Reason = fleetv1alpha1.SourceUnavailableReason
	notReady.Status.Conditions[0].Message = `error listing Secrets in namespace "argocd": forbidden`
	notReady.Status.LastGoodFreight = nil
	notReady.Status.Versions = nil
	tests := []struct {
		name string
		in   Input
		opts TextOptions
	}{
		{name: "no-rollout", in: Input{FleetStage: notReady}},
		{name: "drifted", in: Input{FleetStage: drifted(), Aliases: aliases}},
		{
			name: "halted-and-rolling-back",
			in: Input{FleetStage: withRollouts(fleetStage(), "prod-9f8e7d6c5b-rb", "prod-9f8e7d6c5b"),
				Rollouts: []fleetv1alpha1.FleetRollout{forwardHalted(), rollbackRunning()}, Aliases: aliases},
		},
		{
			name: "waiting-for-approval",
			in: Input{FleetStage: withRollouts(fleetStage(), "prod-1a2b3c4d5e", ""),
				Rollouts: []fleetv1alpha1.FleetRollout{forwardWaiting()}},
		},
		{
			name: "ascii",
			in: Input{FleetStage: withRollouts(fleetStage(), "prod-1a2b3c4d5e", ""),
				Rollouts: []fleetv1alpha1.FleetRollout{forwardWaiting()}, Aliases: aliases},
			opts: TextOptions{ASCII: true, BarWidth: 20, MaxExamples: 1},
		},
		{
			// The message that explains a failure comes last: it is wrapped to
			// the terminal, not cut.
			name: "long-failure-80-columns",
			in: Input{FleetStage: withRollouts(fleetStage(), "", "prod-9f8e7d6c5b"),
				Rollouts: []fleetv1alpha1.FleetRollout{unauthorized()}, Aliases: aliases},
			opts: TextOptions{ASCII: true, Width: 80, MaxExamples: 2},
		},
		{
			name: "color",
			in: Input{FleetStage: withRollouts(fleetStage(), "", "prod-9f8e7d6c5b"),
				Rollouts: []fleetv1alpha1.FleetRollout{forwardHalted()}, Aliases: aliases},
			opts: TextOptions{Color: true, MaxExamples: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Now = t0.Add(95 * time.Second)
			var buf bytes.Buffer
			require.NoError(t, RenderText(&buf, Build(tt.in), opts))
			golden(t, tt.name+".golden", buf.Bytes())
		})
	}
}

// drifted is a fleet with three drifted targets, two of them named.
func drifted() *fleetv1alpha1.FleetStage {
	fs := withRollouts(fleetStage(), "", "prod-1a2b3c4d5e")
	fs.Status.Drift = &fleetv1alpha1.DriftStatus{Count: 3, Examples: []fleetv1alpha1.DriftedTarget{
		{Target: "eu-west-1-003", Stage: "prod-eu-west-1-003", Freight: badFreight, IntendedFreight: goodFreight},
		{Target: "us-east-1-010", Stage: "prod-us-east-1-010", Freight: "0000000000000000000000000000000000000000",
			IntendedFreight: goodFreight},
	}}
	return fs
}

func TestRenderJSON_drift(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, RenderJSON(&buf, Build(Input{FleetStage: drifted(), Aliases: map[string]string{goodFreight: "v1.4.0"}})))
	golden(t, "drifted.json.golden", buf.Bytes())
}

func TestRenderJSON(t *testing.T) {
	t.Parallel()
	in := Input{FleetStage: withRollouts(fleetStage(), "prod-9f8e7d6c5b-rb", "prod-9f8e7d6c5b"),
		Rollouts: []fleetv1alpha1.FleetRollout{forwardHalted(), rollbackRunning()},
		Aliases:  map[string]string{goodFreight: "v1.4.0"}}
	var buf bytes.Buffer
	require.NoError(t, RenderJSON(&buf, Build(in)))
	golden(t, "halted-and-rolling-back.json.golden", buf.Bytes())
}

func TestBuild_roles(t *testing.T) {
	t.Parallel()
	old := forwardWaiting()
	old.Name, old.Status.Phase = "prod-old", fleetv1alpha1.RolloutSucceeded
	tests := []struct {
		name      string
		fs        *fleetv1alpha1.FleetStage
		rollouts  []fleetv1alpha1.FleetRollout
		wantNames []string
		wantRoles []string
	}{
		{
			name:      "rollback running after a halt: the rollback is current, the halted one is rolled back",
			fs:        withRollouts(fleetStage(), "prod-9f8e7d6c5b-rb", ""),
			rollouts:  []fleetv1alpha1.FleetRollout{forwardHalted(), rollbackRunning()},
			wantNames: []string{"prod-9f8e7d6c5b-rb", "prod-9f8e7d6c5b"},
			wantRoles: []string{RoleCurrent, RoleRolledBack},
		},
		{
			name:      "unfinished rollouts come before the last one",
			fs:        withRollouts(fleetStage(), "", "prod-old"),
			rollouts:  []fleetv1alpha1.FleetRollout{old, rollbackRunning()},
			wantNames: []string{"prod-9f8e7d6c5b-rb", "prod-old"},
			wantRoles: []string{RoleActive, RoleLast},
		},
		{
			name:      "no rollouts",
			fs:        fleetStage(),
			wantNames: []string{},
			wantRoles: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Build(Input{FleetStage: tt.fs, Rollouts: tt.rollouts})
			names, roles := []string{}, []string{}
			for _, ro := range r.Rollouts {
				names, roles = append(names, ro.Name), append(roles, ro.Role)
			}
			require.Equal(t, tt.wantNames, names)
			require.Equal(t, tt.wantRoles, roles)
		})
	}
}

func TestSegments_Cells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		s     Segments
		width int
		want  [4]int
	}{
		{name: "empty wave is all pending", s: Segments{}, width: 10, want: [4]int{0, 0, 0, 10}},
		{name: "all succeeded", s: Segments{Succeeded: 1, Total: 1}, width: 10, want: [4]int{10, 0, 0, 0}},
		{name: "halves", s: Segments{Succeeded: 5, Failed: 5, Total: 10}, width: 10, want: [4]int{5, 5, 0, 0}},
		{name: "one failure of many still shows", s: Segments{Succeeded: 157, Failed: 1, Total: 158}, width: 10,
			want: [4]int{9, 1, 0, 0}},
		{name: "almost done is not full", s: Segments{Succeeded: 199, Total: 200}, width: 30, want: [4]int{29, 0, 0, 1}},
		{name: "cells add up", s: Segments{Succeeded: 1, Failed: 1, InFlight: 1, Total: 3}, width: 10,
			want: [4]int{4, 3, 3, 0}},
		{name: "counts above total widen total", s: Segments{Succeeded: 4, Total: 2}, width: 4, want: [4]int{4, 0, 0, 0}},
		{name: "no width", s: Segments{Succeeded: 1, Total: 1}, width: 0, want: [4]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.s.Cells(tt.width)
			require.Equal(t, tt.want, got)
			if tt.width > 0 {
				require.Equal(t, tt.width, got[0]+got[1]+got[2]+got[3])
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{d: -time.Second, want: "0s"},
		{d: 1499 * time.Millisecond, want: "1s"},
		{d: 185 * time.Second, want: "3m05s"},
		{d: 2*time.Hour + 10*time.Minute + 30*time.Second, want: "2h10m"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, formatDuration(tt.d))
		})
	}
}

func withRollouts(fs *fleetv1alpha1.FleetStage, current, last string) *fleetv1alpha1.FleetStage {
	fs.Status.CurrentRollout, fs.Status.LastRollout = current, last
	return fs
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, name, got, *update, "go test ./internal/report -update")
}

func TestRelevant(t *testing.T) {
	t.Parallel()
	mk := func(name string, dir fleetv1alpha1.RolloutDirection, phase fleetv1alpha1.RolloutPhase, of string) fleetv1alpha1.FleetRollout {
		ro := fleetv1alpha1.FleetRollout{}
		ro.Name, ro.Spec.Direction, ro.Status.Phase, ro.Spec.RollbackOf = name, dir, phase, of
		return ro
	}
	all := []fleetv1alpha1.FleetRollout{
		mk("prod-bad", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutFailed, ""),
		mk("prod-bad-rb", fleetv1alpha1.DirectionRollback, fleetv1alpha1.RolloutRollingBack, "prod-bad"),
		mk("prod-done", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutSucceeded, ""),
		mk("prod-older", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutSucceeded, ""),
	}
	tests := []struct {
		name string
		fs   *fleetv1alpha1.FleetStage
		want []string
	}{
		{name: "a running rollback brings the rollout it rolls back", fs: withRollouts(fleetStage(), "", ""),
			want: []string{"prod-bad", "prod-bad-rb"}},
		{name: "current and last", fs: withRollouts(fleetStage(), "prod-bad-rb", "prod-done"),
			want: []string{"prod-bad", "prod-bad-rb", "prod-done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var names []string
			for _, ro := range Relevant(tt.fs, all) {
				names = append(names, ro.Name)
			}
			require.ElementsMatch(t, tt.want, names)
		})
	}
}

func TestRenderText_applications(t *testing.T) {
	t.Parallel()
	fs := withRollouts(fleetStage(), "", "prod-1a2b3c4d5e")
	fs.Status.Applications = &fleetv1alpha1.ApplicationDriftStatus{Foreign: 2, Broken: 1, Examples: []fleetv1alpha1.ApplicationDrift{
		{Target: "eu-west-1-003", Stage: "prod.eu-west-1-003", Application: "argocd/guestbook-eu-west-1-003", Class: "Foreign",
			Reason: "ManualSync", Message: "alice synced revision 0ld in Argo CD, not through Kargo"},
		{Target: "us-east-1-010", Stage: "prod.us-east-1-010", Application: "argocd/guestbook-us-east-1-010", Class: "Broken",
			Reason: "Degraded", Message: "Degraded: Deployment exceeded its progress deadline"},
	}}
	var buf bytes.Buffer
	require.NoError(t, RenderText(&buf, Build(Input{FleetStage: fs}), TextOptions{}))
	out := buf.String()
	require.Contains(t, out, "Argo CD   2 Application(s) changed outside the fleet, 1 broken, 0 by break-glass")
	require.Contains(t, out, "eu-west-1-003 argocd/guestbook-eu-west-1-003 (Foreign, ManualSync): alice synced")
	require.Contains(t, out, "and 1 more")
	buf.Reset()
	require.NoError(t, RenderJSON(&buf, Build(Input{FleetStage: fs})))
	require.Contains(t, buf.String(), `"reason": "Degraded"`)
}
