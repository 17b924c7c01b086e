package plan

import (
	"bytes"
	"crypto/sha256"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// knobPlans plans a small fleet twice: with every wave setting at its
// default and with every wave setting set, so that every setting resolves
// to something other than its zero value in one of them.
func knobPlans(t *testing.T) (defaults, set *WavePlan) {
	t.Helper()
	targets := []Target{makeTarget("a", "tier=gold"), makeTarget("b", "tier=gold"), makeTarget("c", "tier=silver"),
		makeTarget("d", "tier=silver"), makeTarget("e")}
	plain := makeSpec(
		fleetv1alpha1.Wave{Name: "gold", Selector: selectorOf("tier=gold")},
		fleetv1alpha1.Wave{Name: "rest"},
	)
	tuned := makeSpec(
		fleetv1alpha1.Wave{Name: "gold", Selector: selectorOf("tier=gold"), Count: amountOf("1"),
			MaxConcurrent: amountOf("50%"), MaxFailures: amountOf("1"),
			ProgressDeadline: &metav1.Duration{Duration: 45 * time.Minute},
			UnhealthyGrace:   &metav1.Duration{Duration: 5 * time.Minute},
			Soak:             &metav1.Duration{Duration: 90 * time.Minute},
			Approval:         fleetv1alpha1.ApprovalRequired,
			Promotion:        fleetv1alpha1.WavePromotionManual},
		fleetv1alpha1.Wave{Name: "rest", MaxConcurrent: amountOf("2"), MaxFailures: amountOf("50%"),
			Approval: fleetv1alpha1.ApprovalNone, Promotion: fleetv1alpha1.WavePromotionAuto},
	)
	var err error
	defaults, err = Plan(plain, PlanInput{Seed: "shop/prod", Candidates: targets})
	require.NoError(t, err)
	set, err = Plan(tuned, PlanInput{Seed: "shop/prod", Candidates: targets})
	require.NoError(t, err)
	return defaults, set
}

// TestWaveKnobs_pinned pins what plans of existing FleetStages hash to,
// preview as and diff to: an open rollout compares the hash it recorded with
// the current plan's, so a change in how wave settings are carried, hashed
// or shown must not change any of these.
func TestWaveKnobs_pinned(t *testing.T) {
	t.Parallel()
	defaults, set := knobPlans(t)
	require.Equal(t, "60b2abaf5bc5e9384f381e48748da372da02fc70e13189d5b9a49cb4f460f989", PlanHash(hashedPlan()))
	require.Equal(t, "20429a6bc33b0fa083cacd235b2b77a96da11a3dab6d0bb5537c2e9434a0584c", defaults.Hash)
	require.Equal(t, "5b81e0c3b4fbcae35095ecd7eaf46583cc31d9c7d0a89c14c99244470ee154f8", set.Hash)

	var table bytes.Buffer
	require.NoError(t, RenderPlanTable(&table, set, TableOptions{Wide: true}))
	require.Equal(t, `Plan 5b81e0c3b4fb: 5 candidates, 5 selected, 0 excluded, 0 not selected, 0 unassigned

WAVE  MEMBERS  CAP  MAX CONCURRENT  MAX FAILURES  DEADLINE  UNHEALTHY GRACE  SOAK   APPROVAL  TARGETS
gold  1        1    1               1             45m       5m               1h30m  Required  b
rest  4        -    2               2             15m       2m               0s     None      d, e, c, a
`, table.String())

	var preview bytes.Buffer
	require.NoError(t, RenderPlanJSON(&preview, set))
	require.Equal(t, `{
  "planHash": "5b81e0c3b4fbcae35095ecd7eaf46583cc31d9c7d0a89c14c99244470ee154f8",
  "candidates": 5,
  "selected": 5,
  "excluded": 0,
  "notSelected": 0,
  "unassigned": 0,
  "waves": [
    {
      "name": "gold",
      "members": 1,
      "cap": 1,
      "maxConcurrent": 1,
      "maxFailures": 1,
      "progressDeadline": "45m",
      "unhealthyGrace": "5m",
      "soak": "1h30m",
      "approval": "Required",
      "targets": [
        "b"
      ]
    },
    {
      "name": "rest",
      "members": 4,
      "maxConcurrent": 2,
      "maxFailures": 2,
      "progressDeadline": "15m",
      "unhealthyGrace": "2m",
      "soak": "0s",
      "approval": "None",
      "targets": [
        "d",
        "e",
        "c",
        "a"
      ]
    }
  ]
}
`, preview.String())

	d := Diff(defaults, set)
	var diff bytes.Buffer
	require.NoError(t, RenderDiffTable(&diff, &d))
	require.Equal(t, `WAVE  CHANGE   MEMBERS  SETTINGS
gold  changed  2 -> 1   count - -> 1, maxConcurrent 10 -> 1, maxFailures 0 -> 1, progressDeadline 15m -> 45m, unhealthyGrace 2m -> 5m, soak 0s -> 1h30m, approval None -> Required
rest  changed  3 -> 4   maxConcurrent 10 -> 2, maxFailures 0 -> 2

1 moved, 0 joined, 0 left

CHANGE  TARGET  FROM  TO
moved   a       gold  rest
`, diff.String())
}

// planV1Knobs are the knobs PlanHash wrote when its encoding was
// "kargo-fleet/plan/v1", in that order; they are written at every value.
var planV1Knobs = []string{"maxConcurrent", "maxFailures", "progressDeadline", "unhealthyGrace", "soak", "approval"}

// TestWaveKnobs_table checks each entry of waveKnobs: it names a field of
// spec.waves[], once; previews and the plan table show it together or not
// at all; and a knob added after plan/v1 hashes nothing at its zero value,
// so that it changes no existing plan's hash.
func TestWaveKnobs_table(t *testing.T) {
	t.Parallel()
	specNames := map[string]bool{}
	for f := range reflect.TypeFor[fleetv1alpha1.Wave]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		specNames[name] = true
	}
	var names []string
	for i := range waveKnobs {
		k := &waveKnobs[i]
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			require.True(t, specNames[k.name], "no field %q in spec.waves[]", k.name)
			require.NotNil(t, k.compile)
			require.NotNil(t, k.hash)
			require.Equal(t, k.show == nil, k.preview == nil, "previews and diffs show a knob together")
			require.Equal(t, k.show == nil, k.column == "", "a shown knob has a column in the wide plan table")
			if k.narrow != "" {
				require.NotEmpty(t, k.column, "a knob in the default plan table is in the wide one")
			}
			h := &planHasher{h: sha256.New()}
			k.hash(&PlannedWave{}, h)
			if !slices.Contains(planV1Knobs, k.name) {
				require.Equal(t, sha256.New().Sum(nil), h.h.Sum(nil), "a knob added after plan/v1 hashes nothing at its zero value")
			}
		})
		names = append(names, k.name)
	}
	require.Equal(t, planV1Knobs, names[:len(planV1Knobs)], "plan/v1 knobs come first, in their order")
	slices.Sort(names)
	require.Equal(t, len(names), len(slices.Compact(names)), "knob names are unique")
}

// TestWaveKnobs_everyPreviewFieldHasAKnob fills a WavePreview from each
// knob's preview in turn: together they set every setting of WavePreview,
// so a field added to WavePreview without a knob to fill it fails here.
func TestWaveKnobs_everyPreviewFieldHasAKnob(t *testing.T) {
	t.Parallel()
	_, set := knobPlans(t)
	notSettings := map[string]bool{"Name": true, "Members": true, "Cap": true, "Targets": true}
	filled := map[string]bool{}
	for i := range waveKnobs {
		if waveKnobs[i].preview == nil {
			continue
		}
		var wp WavePreview
		waveKnobs[i].preview(&set.Waves[0], &wp)
		v := reflect.ValueOf(wp)
		for j := range v.NumField() {
			if !v.Field(j).IsZero() {
				filled[v.Type().Field(j).Name] = true
			}
		}
	}
	for f := range reflect.TypeFor[WavePreview]().Fields() {
		if !notSettings[f.Name] {
			require.True(t, filled[f.Name], "no knob previews WavePreview.%s", f.Name)
		}
	}
}

// TestWaveKnobs_defaults plans a wave that sets nothing: every knob takes
// the API's default.
func TestWaveKnobs_defaults(t *testing.T) {
	t.Parallel()
	defaults, _ := knobPlans(t)
	got := defaults.Waves[0]
	got.Members = nil
	require.Equal(t, PlannedWave{Name: "gold", MaxConcurrent: fleetv1alpha1.DefaultMaxConcurrent,
		ProgressDeadline: 15 * time.Minute, UnhealthyGrace: 2 * time.Minute, Approval: fleetv1alpha1.ApprovalNone}, got)
}

// Test_planHasher_laterNum: a setting added after plan/v1 writes nothing at
// zero, and two of them set to the same number hash apart.
func Test_planHasher_laterNum(t *testing.T) {
	t.Parallel()
	sum := func(write func(h *planHasher)) []byte {
		h := &planHasher{h: sha256.New()}
		write(h)
		return h.h.Sum(nil)
	}
	require.Equal(t, sha256.New().Sum(nil), sum(func(h *planHasher) { h.laterNum("a", 0) }))
	require.NotEqual(t,
		sum(func(h *planHasher) { h.laterNum("a", 5); h.laterNum("b", 0) }),
		sum(func(h *planHasher) { h.laterNum("a", 0); h.laterNum("b", 5) }))
}
