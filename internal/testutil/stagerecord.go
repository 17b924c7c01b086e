package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
)

// RecordStages records stages as Stages fs generated, as the FleetStage
// controller does: it gives each Stage without a UID one derived from its
// name, names the record in fs's status, sets the wave Stages' UIDs in
// status.waves, and returns the record's ConfigMap to add to the cluster.
func RecordStages(fs *fleetv1alpha1.FleetStage, stages ...*kargo.Stage) *corev1.ConfigMap {
	rec := stagerecord.Record{Stages: map[string]types.UID{}}
	for _, st := range stages {
		if st.UID == "" {
			st.UID = types.UID("uid-" + st.Name)
		}
		rec.Stages[st.Name] = st.UID
		if st.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleWave {
			fs.Status.Waves = append(fs.Status.Waves, fleetv1alpha1.WaveMembership{
				Name: st.Labels[fleetv1alpha1.WaveLabel], Stage: st.Name, StageUID: string(st.UID)})
		}
	}
	cm, err := stagerecord.ConfigMap(fs, rec)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	fs.Status.StageRecord = cm.Name
	return cm
}
