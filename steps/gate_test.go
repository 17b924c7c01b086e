package steps

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// fakeWindows is a WindowChecker with a fixed answer.
type fakeWindows struct {
	status WindowStatus
	err    error
}

func (f fakeWindows) CheckWindows(*fleetv1alpha1.FleetStage, time.Time) (WindowStatus, error) {
	return f.status, f.err
}

func Test_gateStep_convert(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		assertions func(t *testing.T, got GateConfig, err error)
	}{
		{
			name: "approval with stage",
			raw:  `{"approval": true, "approvalStage": "prod-general"}`,
			assertions: func(t *testing.T, got GateConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, GateConfig{Approval: true, ApprovalStage: "prod-general"}, got)
			},
		},
		{
			name: "condition only",
			raw:  `{"condition": "rollout.counts.failed == 0"}`,
			assertions: func(t *testing.T, got GateConfig, err error) {
				require.NoError(t, err)
				require.Equal(t, "rollout.counts.failed == 0", got.Condition)
			},
		},
		{
			name: "nothing to wait for",
			raw:  `{"approval": "false", "window": "false", "condition": ""}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.EqualError(t, err, "invalid fleet-gate config: set at least one of approval, window or condition")
				require.True(t, IsTerminal(err))
			},
		},
		{
			name: "condition that does not compile",
			raw:  `{"condition": "fleet.targets.selected >"}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "invalid condition")
				require.True(t, IsTerminal(err))
			},
		},
		{
			name: "condition over an unknown variable",
			raw:  `{"condition": "targets > 3"}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "unknown name targets")
			},
		},
		{
			name: "condition that is not boolean",
			raw:  `{"condition": "onFreight + 1"}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "invalid condition")
			},
		},
		{
			name: "invalid approval stage",
			raw:  `{"approval": true, "approvalStage": "Prod"}`,
			assertions: func(t *testing.T, _ GateConfig, err error) {
				require.ErrorContains(t, err, "approvalStage")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NewGateStep(nil, nil, nil).(*gateStep).convert([]byte(tt.raw))
			tt.assertions(t, got, err)
		})
	}
}

func Test_gateStep_run(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	fs := testFleetStage()
	fs.Status.Versions = []fleetv1alpha1.FreightCount{{Freight: testFreight, Targets: 3}, {Freight: "old", Targets: 7}}
	fs.Status.CurrentRollout = "prod-abc"
	stage := testStage("prod-canary", fleetv1alpha1.RoleWave, "canary")
	approved := testFreightObj()
	approved.Status.ApprovedFor = map[string]kargo.ApprovedStage{"prod-canary": {ApprovedAt: &metav1.Time{Time: now}}}
	ro := &fleetv1alpha1.FleetRollout{}
	ro.Namespace, ro.Name = testProject, "prod-abc"
	ro.Spec = fleetv1alpha1.FleetRolloutSpec{FleetStage: testFleet, Direction: fleetv1alpha1.DirectionForward,
		Freight: fleetv1alpha1.FreightReference{Name: testFreight}}
	ro.Status.Phase = fleetv1alpha1.RolloutProgressing
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 1, Succeeded: 1}}

	tests := []struct {
		name        string
		freight     *kargo.Freight
		windows     WindowChecker
		config      string
		wantState   State
		wantMessage string
		wantErr     string
		wantOutputs map[string]any
	}{
		{
			name: "approval missing", freight: testFreightObj(), config: `{"approval": true, "message": "canary needs SRE"}`,
			wantState:   StateRunning,
			wantMessage: "canary needs SRE: waiting for approval: kargo approve --project shop --freight " + testFreight + " --stage prod-canary",
			wantOutputs: map[string]any{"approved": false},
		},
		{
			name: "approved", freight: approved, config: `{"approval": "true"}`,
			wantState: StateSucceeded, wantMessage: "gate open", wantOutputs: map[string]any{"approved": true},
		},
		{
			name: "approved for another stage", freight: approved, config: `{"approval": true, "approvalStage": "prod-general"}`,
			wantState: StateRunning, wantMessage: "--stage prod-general",
		},
		{
			name: "window closed", freight: testFreightObj(), config: `{"window": true}`,
			windows:     fakeWindows{status: WindowStatus{Reason: "outside the change windows", NextOpen: now.Add(90 * time.Minute)}},
			wantState:   StateRunning,
			wantMessage: "waiting for a change window (outside the change windows), next at 2026-08-01T13:30:00Z (in 1h30m0s)",
			wantOutputs: map[string]any{"windowOpen": false, "nextWindow": "2026-08-01T13:30:00Z"},
		},
		{
			name: "window open", freight: testFreightObj(), config: `{"window": true}`,
			windows:   fakeWindows{status: WindowStatus{Open: true}},
			wantState: StateSucceeded, wantOutputs: map[string]any{"windowOpen": true},
		},
		{
			name: "windows cannot be evaluated", freight: testFreightObj(), config: `{"window": true}`,
			wantState: StateFailed, wantErr: "change windows cannot be evaluated",
		},
		{
			name: "invalid windows", freight: testFreightObj(), config: `{"window": true}`,
			windows:   fakeWindows{err: &TerminalError{Err: errors.New("invalid change windows")}},
			wantState: StateFailed, wantErr: "invalid change windows",
		},
		{
			name: "condition true", freight: testFreightObj(),
			config:    `{"condition": "onFreightPercent >= 30 && rollout.waves.pilot.phase == 'Succeeded' && fleet.versions.old == 7"}`,
			wantState: StateSucceeded, wantOutputs: map[string]any{"condition": true},
		},
		{
			name: "condition false", freight: testFreightObj(), config: `{"condition": "onFreight >= 5"}`,
			wantState: StateRunning, wantMessage: `waiting for condition "onFreight >= 5"`,
			wantOutputs: map[string]any{"condition": false},
		},
		{
			name: "every gate", freight: testFreightObj(),
			config:      `{"approval": true, "window": true, "condition": "fleet.targets.selected == 10"}`,
			windows:     fakeWindows{status: WindowStatus{}},
			wantState:   StateRunning,
			wantMessage: "waiting for approval: kargo approve --project shop --freight " + testFreight + " --stage prod-canary; a change window",
		},
		{
			name: "condition fails at run time", freight: testFreightObj(), config: `{"condition": "fleet.targets.selected.x == 1"}`,
			wantState: StateFailed, wantErr: "error evaluating condition",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient(t, tt.freight.DeepCopy(), ro.DeepCopy())
			step := NewGateStep(NewAPIStore(c, c), tt.windows, clocktesting.NewFakePassiveClock(now))
			got, err := step.Run(context.Background(), testInput(fs, stage, tt.config))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.True(t, IsTerminal(err))
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.wantState, got.State, got.Message)
			require.Contains(t, got.Message, tt.wantMessage)
			for k, v := range tt.wantOutputs {
				require.Equal(t, v, got.Outputs[k], k)
			}
		})
	}
}

func Test_programCache(t *testing.T) {
	t.Parallel()
	c := newProgramCache()
	p1, err := c.compile("onFreight > 1")
	require.NoError(t, err)
	p2, err := c.compile("onFreight > 1")
	require.NoError(t, err)
	require.Same(t, p1, p2, "compiled once")
	for i := range maxCachedPrograms + 1 {
		_, err := c.compile(fmt.Sprintf("onFreight > %d", i))
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(c.programs), maxCachedPrograms)
}
