package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// objSize is the serialized size of the largest object of one kind, as the
// API server returns it (JSON, managedFields included).
type objSize struct {
	kind, name, who string
	bytes           int
	statusBytes     int
}

// largestObjects measures the largest object of every kind the controller
// writes. Stages and Promotions are many: the largest is found in the
// watch's cache, then read again from the API server.
func (h *harness) largestObjects(ctx context.Context) ([]objSize, error) {
	type candidate struct {
		gvk       schema.GroupVersionKind
		name, who string
	}
	var cands []candidate
	biggest := func(who string, gvk schema.GroupVersionKind, list client.ObjectList, sel client.ListOption) error {
		if err := h.obs.List(ctx, list, sel); err != nil {
			return err
		}
		items, best, bestName := listItems(list), -1, ""
		for _, o := range items {
			raw, err := json.Marshal(o)
			if err != nil {
				return err
			}
			if len(raw) > best {
				best, bestName = len(raw), o.GetName()
			}
		}
		if bestName != "" {
			cands = append(cands, candidate{gvk: gvk, name: bestName, who: who})
		}
		return nil
	}
	kgv := kargo.GroupVersion
	fgv := fleetv1alpha1.GroupVersion
	steps := []func() error{
		func() error {
			return biggest("controller creates; Kargo writes status", kgv.WithKind("Stage"), &kargo.StageList{},
				client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget})
		},
		func() error {
			return biggest("controller creates; Kargo writes status", kgv.WithKind("Stage"), &kargo.StageList{},
				client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleWave})
		},
		func() error {
			return biggest("controller creates; Kargo writes status", kgv.WithKind("Promotion"), &kargo.PromotionList{},
				client.HasLabels{fleetv1alpha1.RolloutLabel})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	cands = append(cands, candidate{gvk: fgv.WithKind("FleetStage"), name: fleetName, who: "user writes spec; controller writes status"})
	for _, f := range []string{goodFreight, badFreight} {
		cands = append(cands, candidate{gvk: kgv.WithKind("Freight"), name: f, who: "Kargo writes status: currentlyIn and verifiedIn hold one entry per Stage"})
	}
	rollouts := &fleetv1alpha1.FleetRolloutList{}
	if err := h.c.List(ctx, rollouts, client.InNamespace(h.shape.namespace)); err != nil {
		return nil, err
	}
	for _, ro := range rollouts.Items {
		cands = append(cands, candidate{gvk: fgv.WithKind("FleetRollout"), name: ro.Name, who: "step server creates; controller writes status"})
	}
	cms := &corev1.ConfigMapList{}
	if err := h.c.List(ctx, cms, client.InNamespace(h.shape.namespace), client.HasLabels{fleetv1alpha1.RolloutLabel}); err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		cands = append(cands, candidate{gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), name: cm.Name, who: "controller creates (plan snapshot, immutable)"})
	}
	var out []objSize
	for _, c := range cands {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(c.gvk)
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.shape.namespace, Name: c.name}, u); err != nil {
			return nil, fmt.Errorf("error getting %s %q: %w", c.gvk.Kind, c.name, err)
		}
		raw, err := json.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		s := objSize{kind: c.gvk.Kind, name: c.name, who: c.who, bytes: len(raw)}
		if st, ok := u.Object["status"]; ok {
			rawSt, _ := json.Marshal(st)
			s.statusBytes = len(rawSt)
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].bytes > out[j].bytes })
	return out, nil
}

// listItems returns the items of the list kinds largestObjects reads.
func listItems(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *kargo.StageList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *kargo.PromotionList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// eventCounts counts the Events the controller emitted, by reporting
// controller and reason.
func (h *harness) eventCounts(ctx context.Context) (map[string]int, int, error) {
	list := &eventsv1.EventList{}
	if err := h.c.List(ctx, list, client.InNamespace(h.shape.namespace)); err != nil {
		return nil, 0, err
	}
	out, total := map[string]int{}, 0
	for _, e := range list.Items {
		if !strings.HasPrefix(e.ReportingController, "kargo-fleet") {
			continue
		}
		out[e.ReportingController+" "+e.Reason]++
		total++
	}
	return out, total, nil
}
