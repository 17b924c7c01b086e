package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// previewPlan is a small plan with every section of the preview filled.
func previewPlan(t *testing.T) *WavePlan {
	t.Helper()
	spec := makeSpec(
		fleetv1alpha1.Wave{Name: "pilot", Count: amountOf("1"), Soak: &metav1.Duration{Duration: 90 * time.Minute}},
		fleetv1alpha1.Wave{Name: "gold", Selector: selectorOf("tier=gold"), MaxFailures: amountOf("50%"),
			Approval: fleetv1alpha1.ApprovalRequired},
		fleetv1alpha1.Wave{Name: "broken", Expression: `int(params.cells) > 1`},
	)
	spec.Policy.MaxFailures = amountOf("1")
	candidates := []Target{
		makeTarget("eu-1", "tier=gold"), makeTarget("eu-2", "tier=gold"), makeTarget("us-1", "tier=gold"),
		makeTarget("ap-1"), makeTarget("ap-2"),
		makeTarget("frozen-1", fleetv1alpha1.FrozenLabel+"=yes"),
	}
	candidates[4].Params = map[string]string{"cells": "3"}
	p, err := Plan(spec, PlanInput{Seed: "ns/fleet", Candidates: candidates})
	require.NoError(t, err)
	return p
}

func TestRenderPlanTable(t *testing.T) {
	t.Parallel()
	p := previewPlan(t)
	var buf bytes.Buffer
	require.NoError(t, RenderPlanTable(&buf, p, TableOptions{MaxNames: 2, Wide: true}))
	out := buf.String()
	t.Log("\n" + out)
	require.Contains(t, out, "Plan "+p.Hash[:12]+": 6 candidates, 5 selected, 1 excluded, 0 not selected, 1 unassigned; fleet maxFailures 1")
	require.Contains(t, out, "WAVE    MEMBERS  CAP  MAX CONCURRENT  MAX FAILURES  DEADLINE  UNHEALTHY GRACE  SOAK   APPROVAL  TARGETS")
	require.Contains(t, out, "1h30m")
	require.Contains(t, out, "Unassigned (1, not promoted): ")
	require.Contains(t, out, "frozen-1  Inline  ExcludeLabel  label fleet.kargo-fleet.io/frozen is set")
	require.Contains(t, out, "wave expression evaluations failed, e.g. spec.waves[2].expression on ")

	var all bytes.Buffer
	require.NoError(t, RenderPlanTable(&all, p, TableOptions{}))
	require.NotContains(t, all.String(), "more")
	require.Contains(t, all.String(), "WAVE    MEMBERS  CONCURRENT  MAX FAILURES  APPROVAL  TARGETS\n")
}

func Test_fitNames(t *testing.T) {
	t.Parallel()
	names := []string{"eu-west-1", "eu-west-2", "us-east-1", "us-east-2"}
	tests := []struct {
		name  string
		limit int
		room  int
		want  string
	}{
		{name: "no limit, no room limit", want: "eu-west-1, eu-west-2, us-east-1, us-east-2"},
		{name: "limit", limit: 2, want: "eu-west-1, eu-west-2, ... 2 more"},
		{name: "room cuts below the limit", limit: 3, room: 35, want: "eu-west-1, eu-west-2, ... 2 more"},
		{name: "room for everything", room: 42, want: "eu-west-1, eu-west-2, us-east-1, us-east-2"},
		{name: "room for one name and its count", room: 21, want: "eu-west-1, ... 3 more"},
		{name: "room for the short form", room: 15, want: "eu-west-1 +3"},
		{name: "no room for a name", room: 5, want: "4 targets"},
		{name: "no names", want: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := names
			if tt.want == "-" {
				in = nil
			}
			require.Equal(t, tt.want, fitNames(in, tt.limit, tt.room))
		})
	}
}

func TestRenderPlanJSON(t *testing.T) {
	t.Parallel()
	p := previewPlan(t)
	var buf bytes.Buffer
	require.NoError(t, RenderPlanJSON(&buf, p))
	var got PlanPreview
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	require.Equal(t, NewPlanPreview(p), got)
	require.Equal(t, 5, got.Selected)
	require.Len(t, got.Waves, 3)
	require.Equal(t, "15m", got.Waves[0].ProgressDeadline)
	require.Equal(t, "2m", got.Waves[0].UnhealthyGrace)
	require.Equal(t, "1h30m", got.Waves[0].Soak)
	require.Equal(t, "0s", got.Waves[1].Soak)
	require.Equal(t, 1, got.Waves[1].MaxFailures, "floor(50% of 3)")
	require.Equal(t, "Required", got.Waves[1].Approval)
	require.Equal(t, []ExcludedPreview{{ID: "frozen-1", Name: "frozen-1", Source: "Inline", Reason: ExclusionLabel,
		Message: "label fleet.kargo-fleet.io/frozen is set"}}, got.ExcludedTargets)
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRender_writeErrors(t *testing.T) {
	t.Parallel()
	p := previewPlan(t)
	d := Diff(p, p)
	require.ErrorContains(t, RenderPlanTable(failingWriter{}, p, TableOptions{MaxNames: 3}), "disk full")
	require.ErrorContains(t, RenderPlanJSON(failingWriter{}, p), "disk full")
	require.ErrorContains(t, RenderDiffTable(failingWriter{}, &d), "disk full")
	require.ErrorContains(t, RenderDiffJSON(failingWriter{}, &d), "disk full")
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   time.Duration
		want string
	}{
		{name: "zero", in: 0, want: "0s"},
		{name: "minutes", in: 15 * time.Minute, want: "15m"},
		{name: "hours", in: 2 * time.Hour, want: "2h"},
		{name: "mixed", in: 90*time.Minute + 5*time.Second, want: "1h30m5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, formatDuration(tt.in))
		})
	}
}

func Test_joinWithin(t *testing.T) {
	t.Parallel()
	parts := []string{"Plan 9760d9280b72: 12 candidates", "12 selected", "0 excluded", "0 not selected", "0 unassigned"}
	tests := []struct {
		name  string
		width int
		want  string
	}{
		{name: "no limit", want: "Plan 9760d9280b72: 12 candidates, 12 selected, 0 excluded, 0 not selected, 0 unassigned"},
		{name: "80 columns", width: 80,
			want: "Plan 9760d9280b72: 12 candidates, 12 selected, 0 excluded, 0 not selected,\n  0 unassigned"},
		{name: "40 columns", width: 40,
			want: "Plan 9760d9280b72: 12 candidates,\n  12 selected, 0 excluded,\n  0 not selected, 0 unassigned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := joinWithin(parts, ", ", "\n  ", tt.width)
			require.Equal(t, tt.want, got)
			for _, line := range strings.Split(got, "\n") {
				if tt.width > 0 {
					require.LessOrEqual(t, len(line), tt.width)
				}
			}
		})
	}
}
