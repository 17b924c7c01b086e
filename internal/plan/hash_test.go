package plan

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// changed returns a copy of v that differs from it: strings grow, numbers
// count up, booleans flip, nil pointers point at a zero value and others at
// a changed one, structs have every field changed, and slices and maps get
// one more (changed) element.
func changed(t *testing.T, v reflect.Value) reflect.Value {
	t.Helper()
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.String:
		out.SetString(v.String() + "-changed")
	case reflect.Bool:
		out.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out.SetInt(v.Int() + 1)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			p.Elem().Set(changed(t, v.Elem()))
		}
		out.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			out.Field(i).Set(changed(t, v.Field(i)))
		}
	case reflect.Slice:
		elem := changed(t, reflect.New(v.Type().Elem()).Elem())
		out.Set(reflect.Append(reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, v.Len()+1), v), elem))
	case reflect.Map:
		out.Set(reflect.MakeMap(v.Type()))
		for _, k := range v.MapKeys() {
			out.SetMapIndex(k, v.MapIndex(k))
		}
		k := changed(t, reflect.New(v.Type().Key()).Elem())
		out.SetMapIndex(k, changed(t, reflect.New(v.Type().Elem()).Elem()))
	default:
		t.Fatalf("no way to change a %s: teach changed() this kind", v.Type())
	}
	return out
}

// hashedPlan is a plan with every hashed field set.
func hashedPlan() *WavePlan {
	cap5, fleetMax := 5, 3
	return &WavePlan{
		Waves: []PlannedWave{
			{Name: "canary", Members: []Target{{ID: "a"}, {ID: "b"}}, Cap: &cap5, MaxConcurrent: 2, MaxFailures: 1,
				ProgressDeadline: time.Hour, UnhealthyGrace: time.Minute, Soak: 10 * time.Minute,
				Approval: "Required", ManualPromotion: true},
			{Name: "rest", Members: []Target{{ID: "c"}}, MaxConcurrent: 1},
		},
		Unassigned:       []Target{{ID: "d"}},
		FleetMaxFailures: &fleetMax,
	}
}

// TestPlanHash_everyWaveFieldCounts changes each field of a planned wave in
// turn, from a set value and from the zero value, and requires the hash to
// change: a field added to PlannedWave and forgotten in PlanHash fails here.
func TestPlanHash_everyWaveFieldCounts(t *testing.T) {
	t.Parallel()
	for _, from := range []struct {
		name string
		plan func() *WavePlan
	}{
		{"set", hashedPlan},
		{"zero", func() *WavePlan { return &WavePlan{Waves: []PlannedWave{{}}} }},
	} {
		typ := reflect.TypeFor[PlannedWave]()
		for i := range typ.NumField() {
			f := typ.Field(i)
			t.Run(from.name+"/"+f.Name, func(t *testing.T) {
				t.Parallel()
				p := from.plan()
				before := PlanHash(p)
				w := reflect.ValueOf(&p.Waves[0]).Elem().Field(i)
				w.Set(changed(t, w))
				require.NotEqual(t, before, PlanHash(p), "PlannedWave.%s does not reach PlanHash", f.Name)
			})
		}
	}
}

// TestPlanHash_planFields sorts every field of WavePlan into those that
// identify the plan's outcome and those that do not, and checks both: a new
// field fails here until it is sorted (and hashed, if it is an outcome).
func TestPlanHash_planFields(t *testing.T) {
	t.Parallel()
	hashed := map[string]bool{"Waves": true, "Unassigned": true, "FleetMaxFailures": true}
	notHashed := map[string]string{
		"Hash":             "the hash itself",
		"Excluded":         "excluded candidates are not in the fleet",
		"Candidates":       "a count of candidates, not who is promoted",
		"NotSelected":      "unselected candidates are not in the fleet",
		"EvaluationErrors": "reported, and a failed expression only moves targets, which the members show",
	}
	typ := reflect.TypeFor[WavePlan]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			_, isHashed := hashed[f.Name]
			_, isNot := notHashed[f.Name]
			require.True(t, isHashed != isNot, "WavePlan.%s: say whether it identifies the plan's outcome", f.Name)
			p := hashedPlan()
			before := PlanHash(p)
			v := reflect.ValueOf(p).Elem().Field(i)
			v.Set(changed(t, v))
			if isHashed {
				require.NotEqual(t, before, PlanHash(p), "WavePlan.%s does not reach PlanHash", f.Name)
			} else {
				require.Equal(t, before, PlanHash(p), "WavePlan.%s changes PlanHash", f.Name)
			}
		})
	}
}

// TestPlanHash_targetIdentity: of a target, only its ID places it; its
// name, source, labels and params moving nothing keep the hash.
func TestPlanHash_targetIdentity(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[Target]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			for _, member := range []func(*WavePlan) *Target{
				func(p *WavePlan) *Target { return &p.Waves[0].Members[1] },
				func(p *WavePlan) *Target { return &p.Unassigned[0] },
			} {
				p := hashedPlan()
				before := PlanHash(p)
				v := reflect.ValueOf(member(p)).Elem().Field(i)
				v.Set(changed(t, v))
				if f.Name == "ID" {
					require.NotEqual(t, before, PlanHash(p))
				} else {
					require.Equal(t, before, PlanHash(p), "Target.%s changes PlanHash", f.Name)
				}
			}
		})
	}
}
