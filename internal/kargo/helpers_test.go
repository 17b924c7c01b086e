package kargo

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestPromotion_NewerThan(t *testing.T) {
	t.Parallel()
	at := func(name string, sec int) *Promotion {
		p := &Promotion{}
		p.Name, p.CreationTimestamp = name, metav1.NewTime(time.Date(2026, 11, 22, 9, 0, sec, 0, time.UTC))
		return p
	}
	tests := []struct {
		name string
		p, q *Promotion
		want bool
	}{
		{name: "created later", p: at("prod.c1.01a.f2", 2), q: at("prod.c1.01b.f2", 1), want: true},
		{name: "created earlier, whatever its name", p: at("prod.c1.01b.f2", 1), q: at("prod.c1.01a.f2", 2)},
		{name: "the same second: the later ULID", p: at("prod.c1.01b.f2", 1), q: at("prod.c1.01a.f2", 1), want: true},
		{name: "the same second: the earlier ULID", p: at("prod.c1.01a.f2", 1), q: at("prod.c1.01b.f2", 1)},
		{name: "itself", p: at("prod.c1.01a.f2", 1), q: at("prod.c1.01a.f2", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.p.NewerThan(tt.q))
		})
	}
}
