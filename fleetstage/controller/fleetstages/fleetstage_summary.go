package fleetstages

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstatus"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// summarise records the version distribution of the target Stages.
func (r *FleetStageReconciler) summarise(ctx context.Context, s *scope) (bool, error) {
	targets := make([]kargo.Stage, 0, len(s.stages))
	for i := range s.stages {
		if s.stages[i].Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
			targets = append(targets, s.stages[i])
		}
	}
	setVersions(s.fs, targets)
	fleetstatus.ObserveVersions(s.fs.Namespace, s.fs.Name, s.fs.Status.Versions)
	return true, r.checkFreightStatusSize(ctx, s.fs)
}

// freightStatusWarnBytes is where FreightStatusLarge turns True, as the
// admission webhook and doctor warn.
const freightStatusWarnBytes = kargo.FreightStatusWarnBytes

// checkFreightStatusSize sets FreightStatusLarge from the names of every
// Stage of the Project (other FleetStages' and the Project's own count too:
// they all share its Freight), and warns once when it turns True.
func (r *FleetStageReconciler) checkFreightStatusSize(ctx context.Context, fs *fleetv1alpha1.FleetStage) error {
	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("error listing the Stages of Project %q: %w", fs.Namespace, err)
	}
	names := make([]string, len(stages.Items))
	for i := range stages.Items {
		names[i] = stages.Items[i].Name
	}
	cond := freightStatusCondition(fs, names, freightStatusWarnBytes)
	if cond.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.FreightStatusLargeCondition) {
		r.event(fs, "Warning", fleetv1alpha1.NearObjectLimitReason, "%s", cond.Message)
	}
	meta.SetStatusCondition(&fs.Status.Conditions, cond)
	return nil
}

// freightStatusCondition judges the estimated status of a Freight held and
// verified by every one of the Project's Stages against warnBytes.
func freightStatusCondition(fs *fleetv1alpha1.FleetStage, stages []string, warnBytes int) metav1.Condition {
	size := kargo.FreightStatusBytes(stages)
	cond := metav1.Condition{Type: fleetv1alpha1.FreightStatusLargeCondition, ObservedGeneration: fs.Generation,
		Status: metav1.ConditionFalse, Reason: fleetv1alpha1.WithinLimitReason}
	cond.Message = fmt.Sprintf("a Freight in all %d Stages of Project %q would carry about %d KiB of status; the apiserver refuses objects over %d KiB",
		len(stages), fs.Namespace, (size+1023)/1024, kargo.FreightObjectLimitBytes/1024)
	if size > warnBytes {
		cond.Status, cond.Reason = metav1.ConditionTrue, fleetv1alpha1.NearObjectLimitReason
		cond.Message += ": Kargo records one entry per Stage on each Freight and cannot record more past the limit; split the fleet across Projects"
	}
	return cond
}
