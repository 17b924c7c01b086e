package render

import (
	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Shard variables and the annotation saying kargo-fleet owns a Stage's shard.
const (
	// VarShard holds a target's Kargo shard ("" is the default controller);
	// rendered only when the FleetStage sets spec.shards.
	VarShard = "fleetShard"
	// VarStepServerURL holds the step server URL for the target's shard,
	// for the per-target template's calls to the step server
	// (`serverURL: ${{ vars.fleetStepServerURL }}`); rendered only when a
	// URL is configured for the shard or for every shard.
	VarStepServerURL = "fleetStepServerURL"
)

// StepServerURLs says where a Kargo controller of each shard reaches the
// step server: a shard controller in a remote cluster may reach it by
// another address than the default controller.
type StepServerURLs struct {
	// Default is the URL for shards without an entry in PerShard; empty:
	// the ClusterPromotionTasks' own default (the in-cluster Service).
	Default string
	// PerShard maps a shard name ("" for the default controller) to a URL.
	PerShard map[string]string
}

// For returns the step server URL a Kargo controller of shard uses, or ""
// when the tasks' default applies.
func (u StepServerURLs) For(shard string) string {
	if url, ok := u.PerShard[shard]; ok && url != "" {
		return url
	}
	return u.Default
}

// managesShard reports whether desired was rendered with a shard.
func managesShard(desired *kargo.Stage) bool {
	_, ok := desired.Annotations[fleetv1alpha1.ShardAnnotation]
	return ok
}

// setShard renders shard into st as Kargo's defaulting webhook leaves it:
// spec.shard, the label (absent for the default shard) and the annotation
// recording that kargo-fleet owns it.
func setShard(st *kargo.Stage, shard string) {
	st.Spec.Shard = shard
	if shard != "" {
		st.Labels[kargo.ShardLabel] = shard
	}
	if st.Annotations == nil {
		st.Annotations = map[string]string{}
	}
	st.Annotations[fleetv1alpha1.ShardAnnotation] = shard
}
