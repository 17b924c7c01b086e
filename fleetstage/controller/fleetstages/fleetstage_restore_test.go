package fleetstages

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func Test_restoreReconciler_Reconcile(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Generation = 3
	desired := testutil.MakeStage("shop", "prod.eu-1").Target("prod", "general", "eu-1").Upstream("prod-general").Obj()
	changed := func(st *kargo.Stage) { st.Spec.RequestedFreight[0].Sources.Stages = []string{"elsewhere"} }
	tests := []struct {
		name       string
		mutate     func(st *kargo.Stage)
		known      bool
		knownUID   types.UID
		generation int64
		// wantRestored: the Stage's spec is the desired one afterwards;
		// wantFleet: the whole-fleet reconcile was asked for.
		wantRestored, wantFleet bool
		wantWrites              int
	}{
		{name: "a changed spec is restored", mutate: changed, known: true, knownUID: "uid-1", generation: 3,
			wantRestored: true, wantWrites: 1},
		{name: "an unchanged Stage is not written", known: true, knownUID: "uid-1", generation: 3,
			wantRestored: true},
		{name: "nothing rendered yet: the whole fleet decides", mutate: changed, wantFleet: true},
		{name: "another Stage under the name: the whole fleet decides", mutate: changed, known: true,
			knownUID: "uid-0", generation: 3, wantFleet: true},
		{name: "a FleetStage that moved on: the whole fleet decides", mutate: changed, known: true,
			knownUID: "uid-1", generation: 2, wantFleet: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := desired.DeepCopy()
			st.UID = "uid-1"
			if tt.mutate != nil {
				tt.mutate(st)
			}
			s := apiruntime.NewScheme()
			require.NoError(t, kargo.AddToScheme(s))
			require.NoError(t, fleetv1alpha1.AddToScheme(s))
			c := testutil.NewCountingClient(fake.NewClientBuilder().WithScheme(s).WithObjects(fs.DeepCopy(), st).Build())
			d := newDesiredStages()
			if tt.known {
				f := fs.DeepCopy()
				f.Generation = tt.generation
				d.set(f, []*kargo.Stage{desired.DeepCopy()}, map[string]types.UID{desired.Name: tt.knownUID})
			}
			fleets := make(chan event.GenericEvent, 1)
			r := &restoreReconciler{client: c, desired: d, fleets: fleets}
			_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(st)})
			require.NoError(t, err)

			got := &kargo.Stage{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(st), got))
			require.Equal(t, tt.wantRestored, got.Spec.RequestedFreight[0].Sources.Stages[0] == "prod-general")
			require.EqualValues(t, tt.wantWrites, c.Writes())
			require.Equal(t, tt.wantFleet, len(fleets) == 1, "the whole-fleet reconcile asked for")
		})
	}
}

func Test_desiredStages(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	a := testutil.MakeStage("shop", "prod.a").Obj()
	b := testutil.MakeStage("shop", "prod.b").Obj()
	d := newDesiredStages()
	d.set(fs, []*kargo.Stage{a, b}, map[string]types.UID{"prod.a": "uid-a"})
	_, ok := d.get(client.ObjectKeyFromObject(a))
	require.True(t, ok)
	_, ok = d.get(client.ObjectKeyFromObject(b))
	require.False(t, ok, "a Stage without a recorded UID is left to the whole-fleet reconcile")

	d.set(fs, []*kargo.Stage{b}, map[string]types.UID{"prod.b": "uid-b"})
	_, ok = d.get(client.ObjectKeyFromObject(a))
	require.False(t, ok, "a Stage no longer desired is dropped")
	_, ok = d.get(client.ObjectKeyFromObject(b))
	require.True(t, ok)

	d.forget(client.ObjectKeyFromObject(fs))
	_, ok = d.get(client.ObjectKeyFromObject(b))
	require.False(t, ok)
}
