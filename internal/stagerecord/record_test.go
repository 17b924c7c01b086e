package stagerecord

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod", UID: "fs-uid"}}
	rec := Record{Stages: map[string]types.UID{"prod-pilot": "uid-1", "prod.eu-1": "uid-2"}}
	other := Record{Stages: map[string]types.UID{"prod-pilot": "uid-1", "prod.eu-1": "uid-forged"}}
	tests := []struct {
		name    string
		mutate  func(*corev1.ConfigMap)
		wantErr string
	}{
		{name: "the record its controller wrote"},
		{name: "not controlled by the FleetStage", wantErr: "is not controlled by FleetStage",
			mutate: func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].UID = "other-uid" }},
		{name: "other content under the recorded name", wantErr: "does not hold what its name says",
			mutate: func(cm *corev1.ConfigMap) {
				forged, err := ConfigMap(fs, other)
				require.NoError(t, err)
				cm.BinaryData = forged.BinaryData
			}},
		{name: "not gzip", wantErr: "error decompressing",
			mutate: func(cm *corev1.ConfigMap) { cm.BinaryData[Key] = []byte(`{"stages":{}}`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cm, err := ConfigMap(fs, rec)
			require.NoError(t, err)
			if tt.mutate != nil {
				tt.mutate(cm)
			}
			got, err := Decode(cm, fs)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrRefused)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, rec, got)
		})
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	a := Record{Stages: map[string]types.UID{"x": "1", "y": "2"}}
	b := Record{Stages: map[string]types.UID{"y": "2", "x": "1"}}
	c := Record{Stages: map[string]types.UID{"x": "1", "y": "3"}}
	na, err := Name("prod", a)
	require.NoError(t, err)
	nb, _ := Name("prod", b)
	nc, _ := Name("prod", c)
	require.Equal(t, na, nb, "equal records have one name")
	require.NotEqual(t, na, nc, "another UID is another record")
	require.Regexp(t, `^prod-stages-[0-9a-f]{16}$`, na)
}

func TestRecord_Has(t *testing.T) {
	t.Parallel()
	rec := Record{Stages: map[string]types.UID{"prod.eu-1": "uid-1"}}
	stage := func(name string, uid types.UID) metav1.Object {
		return &metav1.ObjectMeta{Name: name, UID: uid}
	}
	require.True(t, rec.Has(stage("prod.eu-1", "uid-1")))
	require.False(t, rec.Has(stage("prod.eu-1", "uid-2")), "re-created under the name")
	require.False(t, rec.Has(stage("dev-wave", "uid-1")), "another name")
	require.False(t, Record{Stages: map[string]types.UID{"a": ""}}.Has(stage("a", "")), "no UID is no identity")
}

func TestRecord_Keep(t *testing.T) {
	t.Parallel()
	rec := Record{Stages: map[string]types.UID{"prod.eu-1": "uid-1", "prod.eu-2": "uid-2"}}
	stage := func(name string, uid types.UID) kargo.Stage {
		return kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
	}
	stages := []kargo.Stage{stage("prod.eu-1", "uid-1"), stage("prod.eu-2", "uid-other"), stage("intruder", "uid-3"),
		stage("prod.eu-2", "uid-2")}
	kept, foreign := rec.Keep(stages)
	names := make([]string, 0, len(kept))
	for _, st := range kept {
		names = append(names, st.Name+"/"+string(st.UID))
	}
	require.Equal(t, []string{"prod.eu-1/uid-1", "prod.eu-2/uid-2"}, names, "the recorded Stages, in their order")
	require.Equal(t, []string{"prod.eu-2", "intruder"}, foreign, "a re-created Stage and an unrecorded one")
	require.Empty(t, stages[2].Name, "the slice's tail is cleared")

	kept, foreign = Record{}.Keep(nil)
	require.Empty(t, kept)
	require.Empty(t, foreign)
}
