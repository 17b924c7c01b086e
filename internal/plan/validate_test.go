package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// validSpec exercises every field Validate checks, all valid.
func validSpec() *fleetv1alpha1.FleetStageSpec {
	spec := makeSpec(realisticWaves()...)
	spec.Targets.Sources = append(spec.Targets.Sources,
		fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "fleet",
			Selector: selectorOf("env=prod"), Annotations: []string{"example.com/region-code"}},
		fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.InlineSource, Inline: []fleetv1alpha1.InlineTarget{
			{Name: "edge-1", Labels: map[string]string{"tier": "gold"}, Params: map[string]string{"url": "x"}},
		}},
	)
	spec.Targets.Selector = fleetv1alpha1.TargetSelector{
		LabelSelectors: []metav1.LabelSelector{*selectorOf("env=prod")},
		LabelGlobs:     []fleetv1alpha1.LabelGlobSelector{{MatchGlobs: map[string]string{"region": "us-*"}}},
		Expression:     `labels.tier != "bronze"`,
	}
	spec.Targets.ExcludeLabels = []string{"example.com/frozen"}
	spec.Policy = fleetv1alpha1.FleetPolicy{
		MaxFailures:  amountOf("5%"),
		OnHalt:       fleetv1alpha1.InFlightAbort,
		NewerFreight: fleetv1alpha1.SupersedeReplace,
		Constraints: []fleetv1alpha1.ConcurrencyConstraint{
			{Name: "one-critical-region", LabelKey: "region", MaxInFlight: 1, Selector: selectorOf("tier=critical")},
		},
		Windows: []fleetv1alpha1.ChangeWindow{
			{Name: "business-hours", Type: fleetv1alpha1.WindowAllow, Schedule: "0 9 * * 1-5",
				Duration: metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "Europe/Berlin"},
			{Name: "freeze", Type: fleetv1alpha1.WindowDeny, Schedule: "0 0 20 12 *",
				Duration: metav1.Duration{Duration: 14 * 24 * time.Hour}},
		},
		Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic, MaxConcurrent: amountOf("25%")},
	}
	return spec
}

// errorKey is what a test asserts about one validation error.
type errorKey struct {
	Field string
	Type  field.ErrorType
}

func keysOf(errs field.ErrorList) []errorKey {
	out := make([]errorKey, 0, len(errs))
	for _, e := range errs {
		out = append(out, errorKey{Field: e.Field, Type: e.Type})
	}
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*fleetv1alpha1.FleetStageSpec)
		want   []errorKey
	}{
		{name: "valid", mutate: func(*fleetv1alpha1.FleetStageSpec) {}},
		{
			name:   "no stage",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) { s.Stage.FromStage = "" },
			want:   []errorKey{{"spec.stage", field.ErrorTypeRequired}},
		},
		{
			name: "both stage forms",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Stage.Inline = &fleetv1alpha1.InlineStageSpec{PromotionTemplate: runtime.RawExtension{}}
			},
			want: []errorKey{{"spec.stage.inline", field.ErrorTypeForbidden}},
		},
		{
			name:   "bad stage name",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) { s.Stage.FromStage = "Prod_1" },
			want:   []errorKey{{"spec.stage.fromStage", field.ErrorTypeInvalid}},
		},
		{
			name:   "no sources",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) { s.Targets.Sources = nil },
			want:   []errorKey{{"spec.targets.sources", field.ErrorTypeRequired}},
		},
		{
			name: "bad sources",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Targets.Sources[0].Kind = ""
				s.Targets.Sources[1].Namespace = "Not_A_Namespace"
				s.Targets.Sources[1].Inline = []fleetv1alpha1.InlineTarget{{Name: "x"}}
				s.Targets.Sources[1].Annotations = []string{"bad key!"}
				s.Targets.Sources[1].Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "region", Operator: "Near"},
				}}
				s.Targets.Sources[2].Inline = nil
			},
			want: []errorKey{
				{"spec.targets.sources[0].kind", field.ErrorTypeRequired},
				{"spec.targets.sources[1].inline", field.ErrorTypeForbidden},
				{"spec.targets.sources[1].namespace", field.ErrorTypeInvalid},
				{"spec.targets.sources[1].selector.matchExpressions[0].operator", field.ErrorTypeInvalid},
				{"spec.targets.sources[1].annotations[0]", field.ErrorTypeInvalid},
				{"spec.targets.sources[2].inline", field.ErrorTypeRequired},
			},
		},
		{
			name: "bad inline targets",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Targets.Sources[2].Inline = []fleetv1alpha1.InlineTarget{
					{Name: "edge-1"}, {Name: "edge-1"}, {Name: "Edge_1"}, {Name: ""},
					{Name: "edge-2", Labels: map[string]string{"tier": "not ok!"}, Params: map[string]string{"": "x"}},
				}
			},
			want: []errorKey{
				{"spec.targets.sources[2].inline[1].name", field.ErrorTypeDuplicate},
				{"spec.targets.sources[2].inline[2].name", field.ErrorTypeInvalid},
				{"spec.targets.sources[2].inline[3].name", field.ErrorTypeRequired},
				{"spec.targets.sources[2].inline[4].labels", field.ErrorTypeInvalid},
				{"spec.targets.sources[2].inline[4].params", field.ErrorTypeInvalid},
			},
		},
		{
			name: "bad selection",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Targets.Selector.LabelSelectors[0].MatchLabels = map[string]string{"region": "us east"}
				s.Targets.Selector.LabelGlobs = []fleetv1alpha1.LabelGlobSelector{
					{MatchGlobs: map[string]string{"region": "us-[", "bad key!": "x", "tier": ""}},
					{},
				}
				s.Targets.Selector.Expression = `labels.tier == 3`
				s.Targets.ExcludeLabels = []string{"ok", "ok", "not ok!"}
			},
			want: []errorKey{
				{"spec.targets.selector.labelSelectors[0].matchLabels", field.ErrorTypeInvalid},
				{"spec.targets.selector.labelGlobs[0].matchGlobs[bad key!]", field.ErrorTypeInvalid},
				{"spec.targets.selector.labelGlobs[0].matchGlobs[region]", field.ErrorTypeInvalid},
				{"spec.targets.selector.labelGlobs[0].matchGlobs[tier]", field.ErrorTypeInvalid},
				{"spec.targets.selector.labelGlobs[1].matchGlobs", field.ErrorTypeRequired},
				{"spec.targets.selector.expression", field.ErrorTypeInvalid},
				{"spec.targets.excludeLabels[1]", field.ErrorTypeDuplicate},
				{"spec.targets.excludeLabels[2]", field.ErrorTypeInvalid},
			},
		},
		{
			name:   "no waves",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) { s.Waves = nil },
			want:   []errorKey{{"spec.waves", field.ErrorTypeRequired}},
		},
		{
			name: "bad waves",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Waves[0].Count = amountOf("0")
				s.Waves[0].MaxConcurrent = amountOf("0%")
				s.Waves[0].MaxFailures = amountOf("-1")
				s.Waves[1].Name = "pilot"
				s.Waves[1].Count = amountOf("150%")
				s.Waves[1].Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "tier", Operator: metav1.LabelSelectorOpIn},
				}}
				s.Waves[2].Expression = `params.cells > 2`
				s.Waves[2].ProgressDeadline = &metav1.Duration{Duration: 0}
				s.Waves[2].UnhealthyGrace = &metav1.Duration{Duration: -time.Second}
				s.Waves[2].Soak = &metav1.Duration{Duration: -time.Minute}
				s.Waves[3].Name = "Critical_Wave_With_A_Very_Long_Name"
				s.Waves[3].Approval = "Sometimes"
				s.Waves[3].MaxFailures = amountOf("5")
			},
			want: []errorKey{
				{"spec.waves[0].count", field.ErrorTypeInvalid},
				{"spec.waves[0].maxConcurrent", field.ErrorTypeInvalid},
				{"spec.waves[0].maxFailures", field.ErrorTypeInvalid},
				{"spec.waves[1].name", field.ErrorTypeDuplicate},
				{"spec.waves[1].selector.matchExpressions[0].values", field.ErrorTypeRequired},
				{"spec.waves[1].count", field.ErrorTypeInvalid},
				{"spec.waves[2].expression", field.ErrorTypeInvalid},
				{"spec.waves[2].progressDeadline", field.ErrorTypeInvalid},
				{"spec.waves[2].unhealthyGrace", field.ErrorTypeInvalid},
				{"spec.waves[2].soak", field.ErrorTypeInvalid},
				{"spec.waves[3].name", field.ErrorTypeInvalid},
				{"spec.waves[3].name", field.ErrorTypeTooLong},
				{"spec.waves[3].approval", field.ErrorTypeNotSupported},
			},
		},
		{
			name: "durations out of bounds",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Waves[0].ProgressDeadline = &metav1.Duration{Duration: time.Nanosecond}
				s.Waves[1].ProgressDeadline = &metav1.Duration{Duration: 30 * time.Second}
				s.Waves[1].Soak = &metav1.Duration{Duration: 876000 * time.Hour}
				s.Waves[2].Soak = &metav1.Duration{Duration: 720 * time.Hour}
			},
			want: []errorKey{
				{"spec.waves[0].progressDeadline", field.ErrorTypeInvalid},
				{"spec.waves[1].soak", field.ErrorTypeInvalid},
			},
		},
		{
			name: "inline requested Freight that can never become available, negative soak",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Stage.FromStage = ""
				origin := fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: "w"}
				s.Stage.Inline = &fleetv1alpha1.InlineStageSpec{RequestedFreight: []fleetv1alpha1.RequestedFreight{
					{Origin: origin, Sources: fleetv1alpha1.FreightSources{}},
					{Origin: origin, Sources: fleetv1alpha1.FreightSources{Direct: true,
						RequiredSoakTime: &metav1.Duration{Duration: -time.Hour}}},
					{Origin: origin, Sources: fleetv1alpha1.FreightSources{Stages: []string{"test"},
						RequiredSoakTime: &metav1.Duration{Duration: time.Hour}}},
				}}
			},
			want: []errorKey{
				{"spec.stage.inline.requestedFreight[0].sources", field.ErrorTypeRequired},
				{"spec.stage.inline.requestedFreight[1].sources.requiredSoakTime", field.ErrorTypeInvalid},
			},
		},
		{
			name: "catch-all before the last wave",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Waves = []fleetv1alpha1.Wave{{Name: "everything"}, {Name: "never", Selector: selectorOf("a=b")}}
			},
			want: []errorKey{{"spec.waves[0]", field.ErrorTypeInvalid}},
		},
		{
			name: "a count wave without selector may come first",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Waves = []fleetv1alpha1.Wave{{Name: "pilot", Count: amountOf("1")}, {Name: "rest"}}
			},
		},
		{
			name: "bad policy",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Policy.MaxFailures = amountOf("5")
				s.Policy.MaxFailures.StrVal, s.Policy.MaxFailures.Type = "101%", 1
				s.Policy.OnHalt = "Explode"
				s.Policy.NewerFreight = "Ignore"
				s.Policy.Rollback.Mode = "Eventually"
				s.Policy.Rollback.MaxConcurrent = amountOf("0")
			},
			want: []errorKey{
				{"spec.policy.maxFailures", field.ErrorTypeInvalid},
				{"spec.policy.onHalt", field.ErrorTypeNotSupported},
				{"spec.policy.newerFreight", field.ErrorTypeNotSupported},
				{"spec.policy.rollback.mode", field.ErrorTypeNotSupported},
				{"spec.policy.rollback.maxConcurrent", field.ErrorTypeInvalid},
			},
		},
		{
			name: "bad constraints",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Policy.Constraints = append(s.Policy.Constraints,
					fleetv1alpha1.ConcurrencyConstraint{Name: "one-critical-region", LabelKey: "bad key!", MaxInFlight: 0},
					fleetv1alpha1.ConcurrencyConstraint{Name: "", LabelKey: "", MaxInFlight: 1,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"-x": "y"}}},
				)
			},
			want: []errorKey{
				{"spec.policy.constraints[1].name", field.ErrorTypeDuplicate},
				{"spec.policy.constraints[1].labelKey", field.ErrorTypeInvalid},
				{"spec.policy.constraints[1].maxInFlight", field.ErrorTypeInvalid},
				{"spec.policy.constraints[2].name", field.ErrorTypeRequired},
				{"spec.policy.constraints[2].labelKey", field.ErrorTypeRequired},
				{"spec.policy.constraints[2].selector.matchLabels", field.ErrorTypeInvalid},
			},
		},
		{
			name: "bad windows",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Policy.Windows = append(s.Policy.Windows,
					fleetv1alpha1.ChangeWindow{Name: "freeze", Type: "Maybe", Schedule: "0 9 * *",
						Duration: metav1.Duration{Duration: 0}, TimeZone: "Mars/Olympus"},
					fleetv1alpha1.ChangeWindow{Name: "tz-prefix", Type: fleetv1alpha1.WindowAllow,
						Schedule: "CRON_TZ=UTC 0 9 * * *", Duration: metav1.Duration{Duration: -time.Hour}, TimeZone: "Local"},
					fleetv1alpha1.ChangeWindow{Name: "never", Type: fleetv1alpha1.WindowDeny, Schedule: "0 0 30 2 *",
						Duration: metav1.Duration{Duration: 400 * 24 * time.Hour}},
					fleetv1alpha1.ChangeWindow{Name: "descriptor", Type: fleetv1alpha1.WindowDeny, Schedule: "@every 1h",
						Duration: metav1.Duration{Duration: time.Hour}},
					fleetv1alpha1.ChangeWindow{Name: "seconds", Type: fleetv1alpha1.WindowDeny, Schedule: "0 0 9 * * *",
						Duration: metav1.Duration{Duration: time.Hour}, Selector: selectorOf("-bad=x")},
					fleetv1alpha1.ChangeWindow{Name: "empty", Type: "", Schedule: " ",
						Duration: metav1.Duration{Duration: time.Hour}},
				)
			},
			want: []errorKey{
				{"spec.policy.windows[2].name", field.ErrorTypeDuplicate},
				{"spec.policy.windows[2].type", field.ErrorTypeNotSupported},
				{"spec.policy.windows[2].timeZone", field.ErrorTypeInvalid},
				{"spec.policy.windows[2].schedule", field.ErrorTypeInvalid},
				{"spec.policy.windows[2].duration", field.ErrorTypeInvalid},
				{"spec.policy.windows[3].timeZone", field.ErrorTypeInvalid},
				{"spec.policy.windows[3].schedule", field.ErrorTypeInvalid},
				{"spec.policy.windows[3].duration", field.ErrorTypeInvalid},
				{"spec.policy.windows[4].schedule", field.ErrorTypeInvalid},
				{"spec.policy.windows[4].duration", field.ErrorTypeInvalid},
				{"spec.policy.windows[5].schedule", field.ErrorTypeInvalid},
				{"spec.policy.windows[6].schedule", field.ErrorTypeInvalid},
				{"spec.policy.windows[6].selector.matchLabels", field.ErrorTypeInvalid},
				{"spec.policy.windows[7].type", field.ErrorTypeRequired},
				{"spec.policy.windows[7].schedule", field.ErrorTypeRequired},
			},
		},
		{
			name: "too many windows",
			mutate: func(s *fleetv1alpha1.FleetStageSpec) {
				for range maxWindows {
					s.Policy.Windows = append(s.Policy.Windows, s.Policy.Windows[0])
				}
				for i := range s.Policy.Windows {
					s.Policy.Windows[i].Name = "w" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				}
			},
			want: []errorKey{{"spec.policy.windows", field.ErrorTypeTooMany}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := validSpec()
			tt.mutate(spec)
			errs := Validate(spec)
			require.ElementsMatch(t, tt.want, keysOf(errs), "errors: %v", errs)
			p, compileErrs := Compile(spec)
			require.Equal(t, errs, compileErrs)
			require.Equal(t, len(errs) == 0, p != nil)
		})
	}
}

func TestValidate_nilSpec(t *testing.T) {
	t.Parallel()
	require.Equal(t, []errorKey{{"spec", field.ErrorTypeRequired}}, keysOf(Validate(nil)))
	_, err := Plan(nil, PlanInput{})
	var invalid *InvalidSpecError
	require.ErrorAs(t, err, &invalid)
	require.ErrorContains(t, err, "invalid FleetStage spec")
}

func TestValidate_expressionMessage(t *testing.T) {
	t.Parallel()
	spec := makeSpec(fleetv1alpha1.Wave{Name: "a", Expression: `labels.tier == 3`}, fleetv1alpha1.Wave{Name: "rest"})
	errs := Validate(spec)
	require.Len(t, errs, 1)
	require.Equal(t, "spec.waves[0].expression", errs[0].Field)
	require.Contains(t, errs[0].Error(), "mismatched types string and int")
	require.NotContains(t, errs[0].Detail, "\n", "the caret lines are dropped")
}
