package fleetstages

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// repointDownstream keeps Stages downstream of an adopted Stage fed. Once a
// Stage is adopted, Freight goes to the fleet's waves instead of to the
// adopted Stage, so a downstream Stage that took Freight from the adopted
// Stage would starve; it now takes Freight from the last wave Stage, i.e. once
// the whole fleet verified it.
func (r *FleetStageReconciler) repointDownstream(ctx context.Context, s *scope) (bool, error) {
	fs := s.fs
	if fs.Spec.Stage.FromStage == "" || len(s.plan.Waves) == 0 {
		return true, nil
	}
	last := render.WaveStageName(fs.Name, s.plan.Waves[len(s.plan.Waves)-1].Name)
	mark := fs.Name + "/" + fs.Spec.Stage.FromStage
	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(fs.Namespace)); err != nil {
		return false, fmt.Errorf("error listing Stages: %w", err)
	}
	for i := range stages.Items {
		st := &stages.Items[i]
		if st.Labels[fleetv1alpha1.FleetStageLabel] != "" || st.Name == fs.Spec.Stage.FromStage {
			continue
		}
		ours := st.Annotations[fleetv1alpha1.RepointedAnnotation] == mark
		patch := client.MergeFrom(st.DeepCopy())
		changed := false
		for j := range st.Spec.RequestedFreight {
			srcs := st.Spec.RequestedFreight[j].Sources.Stages
			for k, up := range srcs {
				if up == fs.Spec.Stage.FromStage || (ours && isWaveStageOf(fs.Name, up) && up != last) {
					srcs[k] = last
					changed = true
				}
			}
		}
		if !changed {
			continue
		}
		if st.Annotations == nil {
			st.Annotations = map[string]string{}
		}
		st.Annotations[fleetv1alpha1.RepointedAnnotation] = mark
		if err := r.client.Patch(ctx, st, patch); err != nil {
			return false, fmt.Errorf("error re-pointing downstream Stage %q to %q: %w", st.Name, last, err)
		}
		r.event(fs, "Normal", "DownstreamRepointed", "Re-pointed Stage %s from %s to the last wave Stage %s", st.Name, fs.Spec.Stage.FromStage, last)
	}
	return true, nil
}

// adoptedDescription is the Kargo UI description kargo-fleet gives an
// adopted Stage: Kargo shows it with no current Freight forever, since
// Freight now moves through the wave Stages.
func adoptedDescription(fs *fleetv1alpha1.FleetStage, first, last string) string {
	return fmt.Sprintf("Template of FleetStage %s (kargo-fleet): Freight is promoted to its targets through wave Stages %s to %s, "+
		"not to this Stage, which therefore shows no current Freight.", fs.Name, first, last)
}

// describeAdopted sets the adopted Stage's Kargo UI description
// (kargo.akuity.io/description), unless someone else wrote one.
func (r *FleetStageReconciler) describeAdopted(ctx context.Context, s *scope) (bool, error) {
	fs := s.fs
	if fs.Spec.Stage.FromStage == "" || len(s.plan.Waves) == 0 {
		return true, nil
	}
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: fs.Spec.Stage.FromStage}, st); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	want := adoptedDescription(fs, render.WaveStageName(fs.Name, s.plan.Waves[0].Name),
		render.WaveStageName(fs.Name, s.plan.Waves[len(s.plan.Waves)-1].Name))
	cur, ok := st.Annotations[kargo.DescriptionAnnotation]
	if cur == want || (ok && !strings.HasPrefix(cur, "Template of FleetStage ")) {
		return true, nil
	}
	patch := client.MergeFrom(st.DeepCopy())
	metav1.SetMetaDataAnnotation(&st.ObjectMeta, kargo.DescriptionAnnotation, want)
	if err := r.client.Patch(ctx, st, patch); err != nil {
		return false, fmt.Errorf("error describing adopted Stage %q: %w", st.Name, err)
	}
	return true, nil
}

// isWaveStageOf reports whether name looks like a wave Stage of the
// FleetStage: "<fleetstage>-<wave>", no dot.
func isWaveStageOf(fleetStage, name string) bool {
	return strings.HasPrefix(name, fleetStage+"-") && !strings.Contains(name, ".")
}

// finalize restores re-pointed downstream Stages and releases the
// FleetStage. Generated Stages go with it through their owner references.
func (r *FleetStageReconciler) finalize(ctx context.Context, fs *fleetv1alpha1.FleetStage) error {
	if !controllerutil.ContainsFinalizer(fs, fleetv1alpha1.FleetStageFinalizer) {
		return nil
	}
	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(fs.Namespace)); err != nil {
		return fmt.Errorf("error listing Stages: %w", err)
	}
	for i := range stages.Items {
		st := &stages.Items[i]
		mark := st.Annotations[fleetv1alpha1.RepointedAnnotation]
		if !strings.HasPrefix(mark, fs.Name+"/") {
			continue
		}
		original := strings.TrimPrefix(mark, fs.Name+"/")
		patch := client.MergeFrom(st.DeepCopy())
		for j := range st.Spec.RequestedFreight {
			for k, up := range st.Spec.RequestedFreight[j].Sources.Stages {
				if isWaveStageOf(fs.Name, up) {
					st.Spec.RequestedFreight[j].Sources.Stages[k] = original
				}
			}
		}
		delete(st.Annotations, fleetv1alpha1.RepointedAnnotation)
		if err := r.client.Patch(ctx, st, patch); err != nil {
			return fmt.Errorf("error restoring downstream Stage %q: %w", st.Name, err)
		}
	}
	patch := client.MergeFrom(fs.DeepCopy())
	controllerutil.RemoveFinalizer(fs, fleetv1alpha1.FleetStageFinalizer)
	if err := r.client.Patch(ctx, fs, patch); err != nil {
		return fmt.Errorf("error removing finalizer from FleetStage %q: %w", fs.Name, err)
	}
	return nil
}
