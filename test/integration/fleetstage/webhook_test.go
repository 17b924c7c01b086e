//go:build integration

package fleetstage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestWebhookRejectsWhatCELCannotSee sends specs that pass the CRD schema and
// CEL rules but that the validating webhook must refuse, each naming the field.
func TestWebhookRejectsWhatCELCannotSee(t *testing.T) {
	ns := "webhook"
	newProject(t, ns)
	window := func(mut func(*fleetv1alpha1.ChangeWindow)) func(*fleetv1alpha1.FleetStage) {
		return func(fs *fleetv1alpha1.FleetStage) {
			w := fleetv1alpha1.ChangeWindow{Name: "w", Type: fleetv1alpha1.WindowAllow, Schedule: "0 9 * * 1-5",
				Duration: metav1.Duration{Duration: time.Hour}}
			mut(&w)
			fs.Spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{w}
		}
	}
	tests := []struct {
		name    string
		mutate  func(*fleetv1alpha1.FleetStage)
		wantErr []string
	}{
		{
			name:    "selection expression does not compile",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Targets.Selector.Expression = `labels.tier ==` },
			wantErr: []string{"spec.targets.selector.expression"},
		},
		{
			name:    "selection expression is not boolean",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Targets.Selector.Expression = `name + "x"` },
			wantErr: []string{"spec.targets.selector.expression"},
		},
		{
			name:    "selection expression uses an unknown variable",
			mutate:  func(fs *fleetv1alpha1.FleetStage) { fs.Spec.Targets.Selector.Expression = `cluster.region == "eu"` },
			wantErr: []string{"spec.targets.selector.expression"},
		},
		{
			name: "wave expression does not compile",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "a", Expression: `params[`}, {Name: "b"}}
			},
			wantErr: []string{"spec.waves[0].expression"},
		},
		{
			name: "wave label selector has an invalid operator",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "a", Selector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Resembles", Values: []string{"x"}}},
				}}, {Name: "b"}}
			},
			wantErr: []string{"spec.waves[0].selector"},
		},
		{
			name: "label glob is malformed",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Targets.Selector.LabelGlobs = []fleetv1alpha1.LabelGlobSelector{{MatchGlobs: map[string]string{"region": "us-["}}}
			},
			wantErr: []string{"spec.targets.selector.labelGlobs[0]"},
		},
		{
			name:    "window schedule is not cron",
			mutate:  window(func(w *fleetv1alpha1.ChangeWindow) { w.Schedule = "every tuesday" }),
			wantErr: []string{"spec.policy.windows[0].schedule"},
		},
		{
			name:    "window time zone is unknown",
			mutate:  window(func(w *fleetv1alpha1.ChangeWindow) { w.TimeZone = "Mars/Olympus_Mons" }),
			wantErr: []string{"spec.policy.windows[0].timeZone"},
		},
		{
			name:    "window has no duration",
			mutate:  window(func(w *fleetv1alpha1.ChangeWindow) { w.Duration = metav1.Duration{} }),
			wantErr: []string{"spec.policy.windows[0].duration"},
		},
		{
			name: "inline promotion template has an unknown field",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Stage = testutil.MakeFleetStage("x", "y").InlineStage("w", `{"spec":{"stepz":[]}}`).Obj().Spec.Stage
			},
			wantErr: []string{"spec.stage.inline.promotionTemplate"},
		},
		{
			name: "inline promotion template step has both uses and task",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Stage = testutil.MakeFleetStage("x", "y").
					InlineStage("w", `{"spec":{"steps":[{"uses":"http","task":{"name":"t"}}]}}`).Obj().Spec.Stage
			},
			wantErr: []string{"spec.stage.inline.promotionTemplate.spec.steps[0]"},
		},
		{
			// Kargo's Stage webhook would refuse every target Stage.
			name: "inline promotion template task step has an if condition",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Stage = testutil.MakeFleetStage("x", "y").
					InlineStage("w", `{"spec":{"steps":[{"uses":"argocd-update"},{"task":{"name":"fleet-status"},"if":"${{ always() }}"}]}}`).Obj().Spec.Stage
			},
			wantErr: []string{"spec.stage.inline.promotionTemplate.spec.steps[1].if",
				"PromotionTemplate step referencing a task cannot have an 'if' condition"},
		},
		{
			name: "inline target names collide",
			mutate: func(fs *fleetv1alpha1.FleetStage) {
				fs.Spec.Targets.Sources[0].Inline = []fleetv1alpha1.InlineTarget{{Name: "EU_1"}, {Name: "eu-1"}}
			},
			wantErr: []string{"spec.targets.sources[0].inline[1].name"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := testutil.MakeFleetStage(ns, fmt.Sprintf("bad-%d", i)).Obj()
			tt.mutate(fs)
			err := env.Client.Create(context.Background(), fs)
			require.Error(t, err, "the spec must be refused at admission")
			require.ErrorContains(t, err, "denied the request", "refused by the webhook, not the schema")
			for _, want := range tt.wantErr {
				require.ErrorContains(t, err, want)
			}
		})
	}
}
