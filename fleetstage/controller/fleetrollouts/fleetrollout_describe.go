package fleetrollouts

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// descriptionInterval is the least time between two description writes of
// one wave Stage that change only its target counts. A change of phase, of
// what the wave waits for, or a breach is written at once: wave Stage
// writes stay in the order of waves × transitions, not of targets.
const descriptionInterval = 15 * time.Second

// described is what the reconciler last wrote into a wave Stage's
// description.
type described struct {
	shape string
	at    time.Time
}

// Ownership of a wave Stage. The FleetStage controller renders and owns its
// spec, labels and the annotations it renders; the FleetRollout controller
// owns one annotation, kargo.akuity.io/description, which the render leaves
// alone (render.UpToDate and render.Apply look only at what they render).
// The FleetStage controller owns the adopted Stage's description.

// describeWaves writes every wave Stage's kargo.akuity.io/description,
// which the Kargo UI shows in the Stage's drawer: the rollout's phase, the
// wave's counts and what it waits for (rollout.DescribeWave). A rollout
// describes the wave Stages while it is what the FleetStage shows (its
// current rollout, or, with none running, its last one), so a queued or
// an old rollout never overwrites the one that runs. It returns how soon to
// look again for counts a write was held back for.
func (r *FleetRolloutReconciler) describeWaves(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	recorded *fleetv1alpha1.FleetStageStatus) (time.Duration, error) {
	if recorded.CurrentRollout != ro.Name && (recorded.CurrentRollout != "" || recorded.LastRollout != ro.Name) {
		return 0, nil
	}
	dashboard := link.FleetStageURL(r.DashboardURL, fs.Namespace, fs.Name)
	var errs []error
	var again time.Duration
	for _, w := range fs.Status.Waves {
		stage := w.Stage
		if stage == "" {
			stage = render.WaveStageName(fs.Name, w.Name)
		}
		d := rollout.DescribeWave(rollout.WaveView{Rollout: ro, Wave: w.Name, Dashboard: dashboard})
		wait, err := r.describe(ctx, types.NamespacedName{Namespace: fs.Namespace, Name: stage}, d)
		errs = append(errs, err)
		again = minPositive(again, wait)
	}
	return again, errors.Join(errs...)
}

// describe writes one wave Stage's description when its text changed: at
// once when its shape changed, else at most once per descriptionInterval.
func (r *FleetRolloutReconciler) describe(ctx context.Context, key types.NamespacedName, d rollout.Description) (time.Duration, error) {
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, key, st, client.UnsafeDisableDeepCopy); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if st.Annotations[kargo.DescriptionAnnotation] == d.Text {
		return 0, nil
	}
	now := r.clock.Now()
	r.mu.Lock()
	last, ok := r.described[key]
	r.mu.Unlock()
	if ok && last.shape == d.Shape {
		if since := now.Sub(last.at); since < descriptionInterval {
			return descriptionInterval - since, nil
		}
	}
	if err := kargoclient.DescribeStage(ctx, r.client, st, d.Text); err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.described[key] = described{shape: d.Shape, at: now}
	r.mu.Unlock()
	return 0, nil
}
