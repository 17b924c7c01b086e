package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOnlyAuditHeadChanged(t *testing.T) {
	base := func() *FleetStage {
		return &FleetStage{
			ObjectMeta: metav1.ObjectMeta{Name: "prod", Generation: 3, Labels: map[string]string{"a": "b"}},
			Status:     FleetStageStatus{CurrentRollout: "prod-1", Audit: &AuditHead{Sequence: 4, Hash: "h4"}},
		}
	}
	cases := map[string]struct {
		edit func(fs *FleetStage)
		want bool
	}{
		"the head moved":                {edit: func(fs *FleetStage) { fs.Status.Audit = &AuditHead{Sequence: 5, Hash: "h5"} }, want: true},
		"nothing changed (a resync)":    {edit: func(*FleetStage) {}},
		"the head moved with a rollout": {edit: func(fs *FleetStage) { fs.Status.Audit.Sequence = 5; fs.Status.CurrentRollout = "prod-2" }},
		"the spec changed too": {edit: func(fs *FleetStage) {
			fs.Status.Audit = &AuditHead{Sequence: 5}
			fs.Generation++
		}},
		"an annotation changed too": {edit: func(fs *FleetStage) {
			fs.Status.Audit = &AuditHead{Sequence: 5}
			fs.Annotations = map[string]string{"retry": "x"}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base()
			tc.edit(updated)
			if got := OnlyAuditHeadChanged(base(), updated); got != tc.want {
				t.Fatalf("OnlyAuditHeadChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
