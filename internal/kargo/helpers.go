package kargo

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewPromotion returns a Promotion of freight to stage, ready to create.
// It uses generateName because Kargo's webhook renames every Promotion
// (<stage>.<ulid>.<freight[:7]>): callers must read the name back after
// creating it and correlate Promotions by labels, never by name.
func NewPromotion(namespace, stage, freight string, labels, annotations map[string]string) *Promotion {
	return &Promotion{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "Promotion"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    namespace,
			GenerateName: stage + "-",
			Labels:       labels,
			Annotations:  annotations,
		},
		Spec: PromotionSpec{Stage: stage, Freight: freight},
	}
}

// NewerThan reports whether Promotion p was created after q: by creation
// time, then by name. Kargo names Promotions "<stage>.<ULID>.<freight>",
// so within one second (the grain of creation times) the name orders the
// Promotions of a Stage.
func (p *Promotion) NewerThan(q *Promotion) bool {
	return cmp.Or(q.CreationTimestamp.Compare(p.CreationTimestamp.Time), strings.Compare(q.Name, p.Name)) < 0
}

// CurrentFreight returns the Freight of the given origin that is live in the
// Stage (freight history entry 0), or false when there is none.
func (s *Stage) CurrentFreight(origin FreightOrigin) (FreightReference, bool) {
	if len(s.Status.FreightHistory) == 0 {
		return FreightReference{}, false
	}
	ref, ok := s.Status.FreightHistory[0].Items[origin.Key()]
	return ref, ok
}

// CurrentFreightNames returns the names of every Freight live in the Stage,
// sorted.
func (s *Stage) CurrentFreightNames() []string {
	if len(s.Status.FreightHistory) == 0 {
		return nil
	}
	names := make([]string, 0, len(s.Status.FreightHistory[0].Items))
	for _, ref := range s.Status.FreightHistory[0].Items {
		names = append(names, ref.Name)
	}
	slices.Sort(names)
	return names
}

// RunsFreight reports whether the Freight named name is among the Stage's
// current Freight: CurrentFreightNames without building the list, for
// callers that ask it of every Stage of a fleet.
func (s *Stage) RunsFreight(name string) bool {
	if len(s.Status.FreightHistory) == 0 {
		return false
	}
	for _, ref := range s.Status.FreightHistory[0].Items {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// PreviousFreight returns the Freight of the given origin that was live before
// the current one (freight history entry 1). Kargo keeps at most ten entries
// and Freight may be garbage-collected, so kargo-fleet keeps its own record of
// the last good Freight and uses this only as a hint.
func (s *Stage) PreviousFreight(origin FreightOrigin) (FreightReference, bool) {
	if len(s.Status.FreightHistory) < 2 {
		return FreightReference{}, false
	}
	ref, ok := s.Status.FreightHistory[1].Items[origin.Key()]
	return ref, ok
}

// LastVerification returns the newest verification of the current freight
// collection, or nil.
func (s *Stage) LastVerification() *VerificationInfo {
	if len(s.Status.FreightHistory) == 0 {
		return nil
	}
	h := s.Status.FreightHistory[0].VerificationHistory
	if len(h) == 0 {
		return nil
	}
	return &h[0]
}

// IsVerifiedIn reports whether the Freight was verified in the Stage.
func (f *Freight) IsVerifiedIn(stage string) bool {
	_, ok := f.Status.VerifiedIn[stage]
	return ok
}

// IsApprovedFor reports whether the Freight was approved for the Stage.
func (f *Freight) IsApprovedFor(stage string) bool {
	_, ok := f.Status.ApprovedFor[stage]
	return ok
}

// ApproveCommand is the `kargo approve` command that approves freight for
// stage in project, as operators type it.
func ApproveCommand(project, freight, stage string) string {
	return "kargo approve --project " + project + " --freight " + freight + " --stage " + stage
}

// TakesFreightFrom reports whether the Stage requests Freight from the
// upstream Stage named upstream.
func (s *Stage) TakesFreightFrom(upstream string) bool {
	for i := range s.Spec.RequestedFreight {
		if slices.Contains(s.Spec.RequestedFreight[i].Sources.Stages, upstream) {
			return true
		}
	}
	return false
}
