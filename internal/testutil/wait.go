package testutil

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// PollInterval is how often Await reads an object again.
const PollInterval = 50 * time.Millisecond

// Create creates every object with c and fails t on the first error.
func Create(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("error creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// Await reads obj (by its namespace and name) through c until cond holds,
// and returns it as last read. After within it fails t with msgAndArgs (a
// format and its arguments), the last read error and the object as last
// read. It polls in the caller's goroutine, so obj is never written while
// the caller reads it.
func Await[T client.Object](t testing.TB, c client.Reader, obj T, within time.Duration, cond func(T) bool, msgAndArgs ...any) T {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	deadline := time.Now().Add(within)
	for {
		err := c.Get(context.Background(), key, obj)
		if err == nil && cond(obj) {
			return obj
		}
		if time.Now().After(deadline) {
			last, _ := json.Marshal(obj)
			t.Fatalf("%s: %T %s not as expected after %s (last error: %v); last read: %s",
				message(msgAndArgs), obj, key, within, err, last)
			return obj
		}
		time.Sleep(PollInterval)
	}
}

// Named returns an empty object of type T with a namespace and name, to
// Await by its key: Named[kargo.Stage]("shop", "prod").
func Named[T any, PT interface {
	*T
	client.Object
}](namespace, name string) PT {
	o := PT(new(T))
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// AwaitReady waits until the FleetStage named like fs has reconciled its
// current generation and is Ready, and returns it.
func AwaitReady(t testing.TB, c client.Reader, fs *fleetv1alpha1.FleetStage, within time.Duration) *fleetv1alpha1.FleetStage {
	t.Helper()
	return Await(t, c, fs, within, func(fs *fleetv1alpha1.FleetStage) bool {
		return fs.Status.ObservedGeneration == fs.Generation &&
			meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
	}, "FleetStage %s/%s never became Ready", fs.Namespace, fs.Name)
}

// PromotionPhaseIs returns a condition for Await: the Promotion is in one
// of phases.
func PromotionPhaseIs(phases ...kargo.PromotionPhase) func(*kargo.Promotion) bool {
	return func(p *kargo.Promotion) bool {
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true
			}
		}
		return false
	}
}

// message renders testify-style message arguments.
func message(msgAndArgs []any) string {
	switch {
	case len(msgAndArgs) == 0:
		return "condition not met"
	case len(msgAndArgs) == 1:
		return fmt.Sprint(msgAndArgs[0])
	}
	if format, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(format, msgAndArgs[1:]...)
	}
	return fmt.Sprint(msgAndArgs...)
}
