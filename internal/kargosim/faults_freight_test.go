package kargosim

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestFaultsFor(t *testing.T) {
	t.Parallel()
	stage := func(vars map[string]string, labels map[string]string) *kargo.Stage {
		s := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
		for k, v := range vars {
			s.Spec.Vars = append(s.Spec.Vars, kargo.ExpressionVariable{Name: k, Value: v})
		}
		return s
	}
	tests := []struct {
		name          string
		stage         *kargo.Stage
		freight, alia string
		wantFault     string
		wantRate      float64
	}{
		{name: "no freight filter: the fault applies", stage: stage(map[string]string{FaultVar: FaultFail}, nil), freight: "f1", wantFault: FaultFail},
		{name: "listed by name", stage: stage(map[string]string{FaultVar: FaultFail, FaultFreightVar: "f0, f2"}, nil), freight: "f2", wantFault: FaultFail},
		{name: "listed by alias", stage: stage(map[string]string{FaultVar: FaultFail, FaultFreightVar: "bad-one"}, nil), freight: "f2", alia: "bad-one", wantFault: FaultFail},
		{name: "not listed: no fault", stage: stage(map[string]string{FaultVar: FaultFail, FailureRateVar: "1", FaultFreightVar: "f2"}, nil), freight: "f1", wantFault: FaultNone},
		{name: "label form", stage: stage(nil, map[string]string{FaultLabel: FaultFail, FailureRateLabel: "0.5", FaultFreightLabel: "f1_f2"}), freight: "f2", wantFault: FaultFail, wantRate: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := faultsFor(tt.stage, tt.freight, tt.alia)
			require.Equal(t, tt.wantFault, f.fault)
			require.InDelta(t, tt.wantRate, f.failureRate, 1e-9)
		})
	}
}
