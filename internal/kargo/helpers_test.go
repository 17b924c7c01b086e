package kargo

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStage_RunsFreight(t *testing.T) {
	t.Parallel()
	collection := func(names ...string) FreightCollection {
		c := FreightCollection{Items: map[string]FreightReference{}}
		for i, n := range names {
			c.Items["Warehouse/w"+string(rune('a'+i))] = FreightReference{Name: n}
		}
		return c
	}
	tests := []struct {
		name    string
		history []FreightCollection
		freight string
		want    bool
	}{
		{name: "no history", freight: "f1", want: false},
		{name: "current", history: []FreightCollection{collection("f1")}, freight: "f1", want: true},
		{name: "one of several origins", history: []FreightCollection{collection("f0", "f1")}, freight: "f1", want: true},
		{name: "only in an older entry", history: []FreightCollection{collection("f2"), collection("f1")}, freight: "f1", want: false},
		{name: "empty current entry", history: []FreightCollection{collection()}, freight: "f1", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &Stage{Status: StageStatus{FreightHistory: tt.history}}
			require.Equal(t, tt.want, st.RunsFreight(tt.freight))
			require.Equal(t, tt.want, slices.Contains(st.CurrentFreightNames(), tt.freight), "agrees with CurrentFreightNames")
		})
	}
}
