package kargo

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProjectConfig_PolicyFor(t *testing.T) {
	t.Parallel()
	cfg := &ProjectConfig{Spec: ProjectConfigSpec{PromotionPolicies: []PromotionPolicy{
		{StageSelector: &PromotionPolicySelector{Name: "prod-pilot"}, AutoPromotionEnabled: false},
		{StageSelector: &PromotionPolicySelector{Name: "glob:prod-*"}, AutoPromotionEnabled: true},
		{StageSelector: &PromotionPolicySelector{Name: "regex:^prod\\."}, AutoPromotionEnabled: true},
		{StageSelector: &PromotionPolicySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dev"}}},
			AutoPromotionEnabled: true},
		{Stage: "legacy", AutoPromotionEnabled: true},
	}}}
	tests := []struct {
		name      string
		stage     metav1.ObjectMeta
		wantIndex int
		wantOn    bool
	}{
		{name: "first match wins", stage: metav1.ObjectMeta{Name: "prod-pilot"}, wantIndex: 0},
		{name: "glob", stage: metav1.ObjectMeta{Name: "prod-canary"}, wantIndex: 1, wantOn: true},
		{name: "regex", stage: metav1.ObjectMeta{Name: "prod.eu-1"}, wantIndex: 2, wantOn: true},
		{name: "labels", stage: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"tier": "dev"}}, wantIndex: 3, wantOn: true},
		{name: "older stage field", stage: metav1.ObjectMeta{Name: "legacy"}, wantIndex: 4, wantOn: true},
		{name: "none", stage: metav1.ObjectMeta{Name: "staging"}, wantIndex: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, i, err := cfg.PolicyFor(tt.stage)
			require.NoError(t, err)
			require.Equal(t, tt.wantIndex, i)
			on, err := cfg.AutoPromotionEnabled(tt.stage)
			require.NoError(t, err)
			require.Equal(t, tt.wantOn, on)
		})
	}
	var none *ProjectConfig
	on, err := none.AutoPromotionEnabled(metav1.ObjectMeta{Name: "x"})
	require.NoError(t, err)
	require.False(t, on)
}
